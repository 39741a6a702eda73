/// Requests per second for each Identity Toolkit quota class (the published limits are the defaults).
public struct IdentityToolkitRates: Sendable, Equatable {
    /// `accounts:update`: "account configuration updates 10 requests/s" (names, validSince, disabling).
    public var updates: Double = 10
    /// `accounts:batchDelete`: 1 request/s of up to 1000 ids.
    public var batchDeletes: Double = 1
    /// `accounts:batchGet` and `accounts:lookup` (no published limit; kept polite).
    public var reads: Double = 20
    /// `accounts:batchCreate`.
    public var batchCreates: Double = 1

    public init() {}
}

/// One page of `accounts:batchGet`.
public struct UserPage: Sendable {
    public var users: [JSONValue]
    /// nil on the last page (the API may send it blank instead of leaving it out).
    public var nextPageToken: String?
}

/// What `accounts:lookup` finds an account by.
public enum AccountIdentifier: Sendable, Hashable {
    case uid(String)
    case email(String)
    case phoneNumber(String)
    /// A link to a federated provider (`apple.com`, `facebook.com`, …): the provider's user id.
    case federated(providerId: String, rawId: String)
}

/// A per-id failure of `accounts:batchDelete`, mapped back to the id sent at `index`.
public struct BatchDeleteFailure: Sendable, Equatable {
    public var index: Int
    public var localId: String
    public var message: String

    public init(index: Int, localId: String, message: String) {
        self.index = index
        self.localId = localId
        self.message = message
    }
}

/// The password hash parameters of `accounts:batchCreate` (`UploadAccountRequest`): how the imported hashes were made.
public struct PasswordHashParameters: Sendable, Equatable {
    public var algorithm: String
    /// Base64; a secret, sent in the body only.
    public var signerKey: String?
    public var saltSeparator: String?
    public var rounds: Int?
    public var memoryCost: Int?

    public init(algorithm: String, signerKey: String? = nil, saltSeparator: String? = nil, rounds: Int? = nil, memoryCost: Int? = nil) {
        self.algorithm = algorithm
        self.signerKey = signerKey
        self.saltSeparator = saltSeparator
        self.rounds = rounds
        self.memoryCost = memoryCost
    }

    var fields: [String: JSONValue] {
        var fields: [String: JSONValue] = ["hashAlgorithm": .string(algorithm)]
        if let signerKey { fields["signerKey"] = .string(signerKey) }
        if let saltSeparator { fields["saltSeparator"] = .string(saltSeparator) }
        if let rounds { fields["rounds"] = .int(Int64(rounds)) }
        if let memoryCost { fields["memoryCost"] = .int(Int64(memoryCost)) }
        return fields
    }
}

/// A per-user failure of `accounts:batchCreate` (the response's singular `error` list).
public struct BatchCreateFailure: Sendable, Equatable {
    public var index: Int
    public var message: String

    public init(index: Int, message: String) {
        self.index = index
        self.message = message
    }
}

/// Identity Toolkit v1, spoken as the Admin SDKs speak it (`../shared/specs/firebase-admin-requests.md`).
public final class IdentityToolkitClient: Sendable {
    public static let productionBase = "https://identitytoolkit.googleapis.com/v1"
    public static let maxPage = 1000
    public static let maxLookup = 100
    public static let maxBatch = 1000

    /// `…/v1/projects/{projectId}[/tenants/{tenantId}]`
    public let accountsBase: String
    let tokens: any AccessTokenSource
    let channel: ServiceChannel
    let updates: RateLimiter
    let batchDeletes: RateLimiter
    let reads: RateLimiter
    let batchCreates: RateLimiter

    public init(projectId: String, tenantId: String? = nil, base: Endpoint, tokens: any AccessTokenSource, channel: ServiceChannel, rates: IdentityToolkitRates = IdentityToolkitRates()) {
        var path = base.url("/projects/\(FormBody.escape(projectId))")
        if let tenantId { path += "/tenants/\(FormBody.escape(tenantId))" }
        accountsBase = path
        self.tokens = tokens
        self.channel = channel
        updates = RateLimiter(rate: rates.updates, clock: channel.clock)
        batchDeletes = RateLimiter(rate: rates.batchDeletes, clock: channel.clock)
        reads = .perSecond(rates.reads, clock: channel.clock)
        batchCreates = RateLimiter(rate: rates.batchCreates, clock: channel.clock)
    }

    /// The base URL the Admin SDKs use: the emulator's when `FIREBASE_AUTH_EMULATOR_HOST` is set
    /// (`http://HOST/identitytoolkit.googleapis.com/v1`), else `override`, else production.
    public static func base(environment: [String: String], override: String?) throws(ConnectorError) -> (Endpoint, emulator: Bool) {
        if let host = environment["FIREBASE_AUTH_EMULATOR_HOST"], !host.isEmpty {
            guard !host.contains("/") else {
                throw .configuration(service: "identitytoolkit", message: "FIREBASE_AUTH_EMULATOR_HOST is host:port, without a scheme or path (got '\(host)')")
            }
            // The emulator is reached over plain http, wherever it runs, exactly as the SDKs do.
            return (try Endpoint("http://\(host)/identitytoolkit.googleapis.com/v1", service: "identitytoolkit", allowPlainHTTP: true), true)
        }
        return (try Endpoint(override ?? productionBase, service: "identitytoolkit"), false)
    }

    // MARK: - Calls

    /// `GET accounts:batchGet?maxResults=N[&nextPageToken=T]`.
    public func listUsers(pageToken: String?, maxResults: Int = maxPage) async throws -> UserPage {
        precondition((1...Self.maxPage).contains(maxResults))
        var query = "maxResults=\(maxResults)"
        if let pageToken, !pageToken.isEmpty { query += "&nextPageToken=\(FormBody.escape(pageToken))" }
        let body = try await call("GET", "accounts:batchGet?" + query, body: nil, limiter: reads)
        return UserPage(users: try users(in: body, call: "batchGet"), nextPageToken: GoogleCall.nextPageToken(body))
    }

    /// `POST accounts:lookup {localId: [...]}`; up to 100 ids. Missing accounts are simply absent.
    public func lookup(localIds: [String]) async throws -> [JSONValue] {
        try await lookup(localIds.map { .uid($0) })
    }

    /// `POST accounts:lookup` by up to 100 identifiers of any kind, in one call as the Admin SDK's `get_users` sends them:
    /// `{localId: [...], email: [...], phoneNumber: [...], federatedUserId: [{providerId, rawId}]}`, the kinds given.
    /// The accounts found, each once; missing ones are simply absent.
    public func lookup(_ identifiers: [AccountIdentifier]) async throws -> [JSONValue] {
        precondition((1...Self.maxLookup).contains(identifiers.count))
        var lists: [String: [JSONValue]] = [:]
        for identifier in identifiers {
            switch identifier {
            case .uid(let uid): lists["localId", default: []].append(.string(uid))
            case .email(let email): lists["email", default: []].append(.string(email))
            case .phoneNumber(let number): lists["phoneNumber", default: []].append(.string(number))
            case .federated(let providerId, let rawId):
                lists["federatedUserId", default: []].append(["providerId": .string(providerId), "rawId": .string(rawId)])
            }
        }
        let body = try await call("POST", "accounts:lookup", body: .object(lists.mapValues { .array($0) }), limiter: reads, readOnly: true)
        return try users(in: body, call: "lookup")
    }

    /// `POST accounts:update` with only the fields given. `validSince` (Unix seconds) ends every session
    /// issued before it: this is all `revokeRefreshTokens` does.
    public func update(localId: String, displayName: String? = nil, validSince: Int64? = nil, disableUser: Bool? = nil) async throws {
        var fields: [String: JSONValue] = ["localId": .string(localId)]
        if let displayName { fields["displayName"] = .string(displayName) }
        if let validSince { fields["validSince"] = .int(validSince) }
        if let disableUser { fields["disableUser"] = .bool(disableUser) }
        let body = try await call("POST", "accounts:update", body: .object(fields), limiter: updates)
        guard body["localId"]?.string == localId else {
            throw ConnectorError.badResponse(service: channel.service, message: "accounts:update did not echo the localId")
        }
    }

    /// `POST accounts:batchDelete {localIds, force: true}`; up to 1000 ids. Unknown ids count as deleted.
    public func batchDelete(localIds: [String]) async throws -> [BatchDeleteFailure] {
        precondition((1...Self.maxBatch).contains(localIds.count))
        let body = try await call("POST", "accounts:batchDelete",
                                  body: ["localIds": .array(localIds.map { .string($0) }), "force": true], limiter: batchDeletes)
        return try indexedErrors(body["errors"], count: localIds.count, call: "batchDelete").map {
            BatchDeleteFailure(index: $0.index, localId: localIds[$0.index], message: $0.message)
        }
    }

    /// `POST accounts:batchCreate {users, hash parameters}`; up to 1000 users. Without `hash`, no user may have a
    /// `passwordHash` (the API refuses the request).
    public func batchCreate(users: [JSONValue], hash: PasswordHashParameters? = nil) async throws -> [BatchCreateFailure] {
        precondition((1...Self.maxBatch).contains(users.count))
        var fields: [String: JSONValue] = ["users": .array(users)]
        if let hash { fields.merge(hash.fields) { _, new in new } }
        let body = try await call("POST", "accounts:batchCreate", body: .object(fields), limiter: batchCreates)
        return try indexedErrors(body["error"], count: users.count, call: "batchCreate").map {
            BatchCreateFailure(index: $0.index, message: $0.message)
        }
    }

    // MARK: - Plumbing

    /// The `{index, message}` entries of a batch call's error list; an index outside the batch is a bad response.
    private func indexedErrors(_ list: JSONValue?, count: Int, call: String) throws -> [(index: Int, message: String)] {
        try (list?.array ?? []).map { entry in
            guard let index = entry["index"]?.int, index >= 0, index < count, let message = entry["message"]?.string else {
                throw ConnectorError.badResponse(service: channel.service, message: "a \(call) error without a valid index and message")
            }
            return (Int(index), Redaction.scrubbed(message))
        }
    }

    private func users(in body: JSONValue, call: String) throws -> [JSONValue] {
        guard let users = body["users"] else { return [] }
        guard let list = users.array, list.allSatisfy({ $0["localId"]?.string != nil }) else {
            throw ConnectorError.badResponse(service: channel.service, message: "\(call): 'users' is not a list of accounts with a localId")
        }
        return list
    }

    private func call(_ method: String, _ operation: String, body: JSONValue?, limiter: RateLimiter, readOnly: Bool = false) async throws -> JSONValue {
        try await GoogleCall(channel: channel, tokens: tokens).object(method, accountsBase + "/" + operation, json: body, limiter: limiter,
                                                                    operation: String(operation.prefix { $0 != "?" }), readOnly: readOnly)
    }
}

/// Google's error body: `{"error": {"code": 400, "message": "CODE : detail", "status": "NOT_FOUND"}}`, the message split at
/// the first ':' as the SDKs do; Firestore and Storage send a plain message and a `status`, the Realtime Database
/// `{"error": "text"}`.
struct GoogleError {
    let code: String
    let detail: String
    /// Whether the body holds an `error` in one of Google's shapes: without one, the answer is not a Google API's (a
    /// wrong endpoint, a proxy's page).
    let isGoogle: Bool

    /// `secrets`: what the request carried (its access token), kept out of the detail (`Redaction`).
    init(_ response: HTTPResponse, secrets: [String] = []) {
        let error = JSONValue.decode(response.body)?["error"]
        isGoogle = error?.string != nil || error?["message"]?.string != nil || error?["status"]?.string != nil
        let raw: String
        if let text = error?.string {
            code = "HTTP \(response.status)"
            raw = text
        } else {
            let message = error?["message"]?.string ?? "HTTP \(response.status)"
            let head = message.firstIndex(of: ":").map { String(message[..<$0]).trimmingSpaces } ?? message.trimmingSpaces
            let isCode = !head.isEmpty && head.allSatisfy { ($0.isUppercase && $0.isASCII) || $0.isNumber || $0 == "_" }
            if isCode {
                code = head
                raw = message.firstIndex(of: ":").map { String(message[message.index(after: $0)...]).trimmingSpaces } ?? ""
            } else if let status = error?["status"]?.string.flatMap(Redaction.code) {
                code = status
                raw = message
            } else {
                // A message that is no code: kept as the detail of the status.
                code = "HTTP \(response.status)"
                raw = message == code ? "" : message.trimmingSpaces
            }
        }
        // Whatever the service said, scrubbed once: it may quote the request.
        detail = Redaction.scrubbed(raw, known: secrets)
    }

    var isBackOff: Bool { code == "QUOTA_EXCEEDED" || code == "TOO_MANY_ATTEMPTS_TRY_LATER" || code == "RESOURCE_EXHAUSTED" }

    var isConfiguration: Bool {
        ["INSUFFICIENT_PERMISSION", "PERMISSION_DENIED", "CONFIGURATION_NOT_FOUND", "TENANT_NOT_FOUND", "PROJECT_NOT_FOUND",
         "INVALID_CREDENTIAL", "UNAUTHENTICATED"].contains(code)
    }
}
