import IdPipeConnect
import IdPipeCore
import IdPipeStore

/// What a display-name check found at apply time.
public enum NameCheck: Sendable, Equatable {
    case missing
    case empty
    case present(String)
}

/// How one step ended when it did not throw: done (with what happened) or not possible (with why).
public enum StepResult: Sendable, Equatable {
    case done(String)
    /// Done, having deleted this many items (a path deletion).
    case deleted(String, count: Int)
    case notPossible(String)
}

/// The remote side effects of apply, one call per step. The live implementation talks to the services;
/// tests may replace it. Errors are `ConnectorError`s: a configuration error stops the run, others fail one action.
public protocol RemoteEffects: Sendable {
    func displayName(uid: String) async throws -> NameCheck
    func setDisplayName(uid: String, name: String) async throws
    /// `resent`: the action was sent before (a run stopped before its answer), so a code may already be used up.
    func revokeApple(_ token: StoredAppleToken, now: Int64, resent: Bool) async throws -> StepResult
    func revokeFacebook(appScopedId: String) async throws
    func revokeSessions(uid: String, validSince: Int64) async throws
    func deleteData(uid: String, idempotencyKey: String, run: String) async throws
    /// Dry run: what each configured path of a path deletion holds for the account (reads only).
    func countPaths(_ kind: ActionKind, uid: String) async throws -> [PathCount]
    /// Deletes what each configured path holds; returns how much there was.
    func deletePaths(_ kind: ActionKind, uid: String) async throws -> [PathCount]
    /// Deletes up to 1000 accounts in one call; returns the ones that failed, with why.
    func deleteAccounts(_ uids: [String]) async throws -> [String: String]
    /// Batch deletes allowed per second (the pacing of the deletion queue).
    var batchDeleteRate: Double { get }
    /// Requests, retries and refusals so far, per service.
    func traffic() -> [ServiceTraffic]
}

/// The effects on the real (or sandbox) services.
public final class LiveEffects: RemoteEffects {
    let identityToolkit: IdentityToolkitClient?
    let apple: AppleClient?
    let facebook: FacebookClient?
    let webhook: DataWebhookClient?
    let dataStores: DataStores
    let channels: [ServiceChannel]
    public let batchDeleteRate: Double

    public init(identityToolkit: IdentityToolkitClient?, apple: AppleClient?, facebook: FacebookClient?, webhook: DataWebhookClient?,
                dataStores: DataStores, channels: [ServiceChannel], batchDeleteRate: Double) {
        self.dataStores = dataStores
        self.identityToolkit = identityToolkit
        self.apple = apple
        self.facebook = facebook
        self.webhook = webhook
        self.channels = channels
        self.batchDeleteRate = batchDeleteRate
    }

    /// The pipeline keys each action kind needs, or nil when it is configured.
    public func missingService(for kind: ActionKind) -> String? {
        switch kind {
        case .updateName, .revokeSessions, .deleteAccount: identityToolkit == nil ? "services.google" : nil
        case .revokeApple: apple == nil ? "services.apple" : nil
        case .revokeFacebook: facebook == nil ? "services.facebook" : nil
        case .deleteData: webhook == nil ? "stages.delete.data_webhook" : nil
        case .deleteFirestore, .deleteDatabase, .deleteStorage: dataStores.missingService(for: kind)
        }
    }

    /// The client `kind` needs; a configuration error naming the missing pipeline keys when there is none.
    private func need<T>(_ client: T?, for kind: ActionKind) throws -> T {
        try required(client, for: kind, missing: missingService(for: kind))
    }

    public func displayName(uid: String) async throws -> NameCheck {
        let users = try await need(identityToolkit, for: .updateName).lookup(localIds: [uid])
        guard let user = users.first(where: { $0["localId"]?.string == uid }) else { return .missing }
        let name = user["displayName"]?.string ?? ""
        // Judged as the plan judged it: spaces, or characters that show nothing, are no name (the plan filled it, and
        // apply called it "set since the plan").
        var repairs = RepairSet()
        if case .success(nil) = DisplayNameCleaner.clean(name, repairs: &repairs) { return .empty }
        return .present(name)
    }

    public func setDisplayName(uid: String, name: String) async throws {
        try await need(identityToolkit, for: .updateName).update(localId: uid, displayName: name)
    }

    public func revokeApple(_ token: StoredAppleToken, now: Int64, resent: Bool) async throws -> StepResult {
        let client = try need(apple, for: .revokeApple)
        switch token.kind {
        case .refreshToken, .accessToken:
            try await client.revoke(token: token.token.value, hint: token.kind == .refreshToken ? .refreshToken : .accessToken)
            return .done("revoked or already invalid")
        case .authorizationCode:
            // A code is good for five minutes after Apple issued it: judged now, not when the plan was made.
            guard now - token.capturedAt < Planner.authorizationCodeLifetimeMs else {
                return .notPossible("authorization code expired before apply (captured \(Timestamp.formatRFC3339(token.capturedAt)))")
            }
            // Captured after now: its age is not known. A failure (when_revocation_fails, which keeps the account by
            // default), not "not possible": a code of 2030, refused by Apple, let its account go under when_not_revocable.
            if Planner.capturedTooLate(token, now: now) {
                throw ConnectorError.rejected(service: "apple", code: "code-captured-later",
                                              message: "the stored authorization code was captured at \(Timestamp.formatRFC3339(token.capturedAt)), "
                                                + "after now: a clock or stored-tokens file error; not sent")
            }
            let tokens: AppleTokenResponse
            do {
                tokens = try await client.exchange(code: token.token.value)
            } catch ConnectorError.rejected(let service, let code, _) where code == "invalid_grant" {
                // Sent before, the code may have been exchanged then, its tokens live and out of reach: a failure (the
                // when_revocation_fails rule), not "not possible" (when_not_revocable, which may delete the account).
                if resent {
                    throw ConnectorError.rejected(service: service, code: code, message: "Apple refused the authorization code, "
                        + "which the interrupted send may have used: the tokens it gave, if any, could not be revoked")
                }
                return .notPossible("Apple refused the authorization code (invalid_grant: expired or already used)")
            }
            if let refresh = tokens.refreshToken {
                try await client.revoke(token: refresh, hint: .refreshToken)
            } else {
                try await client.revoke(token: tokens.accessToken, hint: .accessToken)
            }
            return .done("code exchanged; revoked or already invalid")
        }
    }

    public func revokeFacebook(appScopedId: String) async throws {
        try await need(facebook, for: .revokeFacebook).revokeLogin(appScopedId: appScopedId)
    }

    public func revokeSessions(uid: String, validSince: Int64) async throws {
        try await need(identityToolkit, for: .revokeSessions).update(localId: uid, validSince: validSince)
    }

    public func deleteData(uid: String, idempotencyKey: String, run: String) async throws {
        try await need(webhook, for: .deleteData).deleteUserData(uid: uid, idempotencyKey: idempotencyKey, run: run)
    }

    public func countPaths(_ kind: ActionKind, uid: String) async throws -> [PathCount] {
        try await dataStores.count(kind, uid: uid)
    }

    public func deletePaths(_ kind: ActionKind, uid: String) async throws -> [PathCount] {
        try await dataStores.delete(kind, uid: uid)
    }

    public func deleteAccounts(_ uids: [String]) async throws -> [String: String] {
        let failures = try await need(identityToolkit, for: .deleteAccount).batchDelete(localIds: uids)
        return Dictionary(failures.map { ($0.localId, $0.message) }, uniquingKeysWith: { first, _ in first })
    }

    public func traffic() -> [ServiceTraffic] {
        channels.map { channel in
            let stats = channel.stats
            return ServiceTraffic(service: channel.service, requests: stats.requests, retries: stats.retries, throttled: stats.throttled, failures: stats.failures)
        }
    }
}
