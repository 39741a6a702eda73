/// What the sandbox knows and enforces. Loaded by `idpipe-sandbox serve` from the folder `init` wrote.
public struct SandboxConfig: Sendable {
    public struct Google: Sendable {
        public var clientEmail: String
        public var publicKeyPEM: String
        /// Lifetime of the access tokens it issues (short values test the client's refresh).
        public var tokenLifetime: Int64 = 3600
        public init(clientEmail: String, publicKeyPEM: String) {
            self.clientEmail = clientEmail
            self.publicKeyPEM = publicKeyPEM
        }
    }

    public struct Apple: Sendable {
        public var teamId: String
        public var keyId: String
        public var clientIds: [String]
        public var publicKeyPEM: String
        public init(teamId: String, keyId: String, clientIds: [String], publicKeyPEM: String) {
            self.teamId = teamId
            self.keyId = keyId
            self.clientIds = clientIds
            self.publicKeyPEM = publicKeyPEM
        }
    }

    public struct Facebook: Sendable {
        public var appId: String
        public var appSecret: String
        public init(appId: String, appSecret: String) {
            self.appId = appId
            self.appSecret = appSecret
        }
    }

    /// The request families that share a quota (Identity Toolkit's per-method limits, and one each for the other services).
    public enum QuotaClass: String, Sendable, CaseIterable {
        case batchDelete, update, read, batchCreate, apple, facebook, webhook

        /// Its rate in `Quotas`.
        public var rate: WritableKeyPath<Quotas, Double> {
            switch self {
            case .batchDelete: \.batchDelete
            case .update: \.update
            case .read: \.read
            case .batchCreate: \.batchCreate
            case .apple: \.apple
            case .facebook: \.facebook
            case .webhook: \.webhook
            }
        }
    }

    /// Requests per second per quota class; 0 switches the quota off. Defaults are Google's published limits.
    public struct Quotas: Sendable, Equatable {
        public var batchDelete: Double = 1
        public var update: Double = 10
        public var read: Double = 0
        public var batchCreate: Double = 0
        public var apple: Double = 0
        public var facebook: Double = 0
        public var webhook: Double = 0
        public init() {}
    }

    /// Faults injected into service requests (never into `/__sandbox/...`), each a probability per request.
    public struct Faults: Sendable, Equatable {
        public var status503: Double = 0
        public var status500: Double = 0
        public var status429: Double = 0
        /// The connection is closed without an answer, after the request took effect.
        public var drop: Double = 0
        /// Chance per request that a burst starts: this and the next `burstLength - 1` requests are answered 429.
        public var burst429: Double = 0
        public var burstLength = 20
        public var retryAfterSeconds: Int = 1
        public var latencyMilliseconds: Int = 0
        public var seed: UInt64 = 1
        public init() {}
    }

    public var projectId: String
    /// Accept `Authorization: Bearer owner` as the Firebase Auth Emulator does.
    public var acceptOwnerToken = true
    public var google: Google?
    public var apple: Apple?
    public var facebook: Facebook?
    public var quotas = Quotas()
    public var faults = Faults()

    public init(projectId: String) {
        self.projectId = projectId
    }
}

/// One side effect the sandbox carried out, or a repeat that changed nothing. Tokens appear as fingerprints.
public struct LedgerEntry: Sendable, Equatable {
    public var seq: Int
    public var unixMillis: Int64
    public var service: String
    public var action: String
    public var target: String
    /// true when state changed; false for an idempotent repeat (deleting a missing id, revoking a revoked token).
    public var changed: Bool
    public var detail: String

    var json: SJSON {
        .object([
            ("seq", .number(String(seq))), ("at", .number(String(unixMillis))), ("service", .string(service)),
            ("action", .string(action)), ("target", .string(target)), ("changed", .bool(changed)), ("detail", .string(detail)),
        ])
    }
}
