/// The plan stage: which remote actions an account needs, computed without any network call.
public struct Planner: Sendable {
    /// Apple authorization codes can be exchanged only within 5 minutes of being issued.
    public static let authorizationCodeLifetimeMs: Int64 = 5 * 60 * 1000

    public let stages: StagesConfig
    public let asOf: Int64
    /// What each configured path deletion covers, in the plan's words: the same for every account.
    let pathDetails: [ActionKind: String]

    public init(stages: StagesConfig, asOf: Int64) {
        self.stages = stages
        self.asOf = asOf
        pathDetails = Dictionary(uniqueKeysWithValues: (stages.delete?.pathKinds ?? []).map { ($0, Self.pathDetail($0, stages.delete!)) })
    }

    /// Everything a selected account goes through: its revocations, then its data and account deletion.
    /// A Firebase session revocation is left out when the account itself is deleted: the deletion ends its
    /// sessions, and each `accounts:update` would cost one of the project's 10 updates per second for nothing.
    public func cleanup(for account: Account, credentials: StoredCredentials?) -> [PlannedAction] {
        var revocations = self.revocations(for: account, credentials: credentials)
        let deletions = self.deletions(after: revocations, uid: account.localId)
        if deletions.contains(where: { $0.kind == .deleteAccount && $0.state == .planned }) {
            revocations.removeAll { $0.kind == .revokeSessions }
        }
        return revocations + deletions
    }

    /// The account's revocations. With the stage (or one provider's revocation) off in a pipeline that deletes, an
    /// Apple or Facebook login is still named, as a revocation not possible: its token is not revoked before the
    /// deletion, and `when_not_revocable` decides whether the account goes all the same (by default it stays).
    ///
    /// A token the stored-tokens file holds for the account counts as a login even when the account has no such link
    /// any more: unlinking in Firebase revokes nothing at Apple or Facebook, and the app still holds the grant.
    public func revocations(for account: Account, credentials: StoredCredentials?) -> [PlannedAction] {
        let revoke = stages.revoke
        var actions: [PlannedAction] = []
        let appleLinked = account.isLinked(to: ProviderID.apple)
        if appleLinked || credentials?.apple != nil {
            if revoke?.apple == true {
                actions.append(appleRevocation(credentials?.apple, linked: appleLinked))
            } else if stages.delete != nil {
                actions.append(switchedOff(.revokeApple, detail: "auth/revoke", key: revoke == nil ? "stages.revoke" : "stages.revoke.apple"))
            }
        }
        let facebookLink = account.provider(ProviderID.facebook)
        if facebookLink != nil || credentials?.facebook != nil {
            if revoke?.facebook == true {
                actions.append(facebookRevocation(facebookLink, stored: credentials?.facebook))
            } else if stages.delete != nil {
                actions.append(switchedOff(.revokeFacebook, detail: Self.facebookDetail,
                                           key: revoke == nil ? "stages.revoke" : "stages.revoke.facebook"))
            }
        }
        if revoke?.firebaseSessions == true {
            actions.append(PlannedAction(kind: .revokeSessions, state: .planned, detail: "accounts:update validSince"))
        }
        return actions
    }

    static let facebookDetail = "DELETE /{app-scoped id}/permissions with the app token"

    /// Whether an authorization code was captured later than `now` by more than a code lives (clocks a little apart
    /// are not that far).
    public static func capturedTooLate(_ token: StoredAppleToken, now: Int64) -> Bool {
        token.capturedAt - now > authorizationCodeLifetimeMs
    }

    /// Said of a revocation whose only ground is the stored-tokens file.
    static let storedOnly = " (from the stored-tokens file: the account has no such login)"

    private func switchedOff(_ kind: ActionKind, detail: String, key: String) -> PlannedAction {
        PlannedAction(kind: kind, state: .notPossible, detail: detail, reason: "\(key) is off in the pipeline")
    }

    private func appleRevocation(_ token: StoredAppleToken?, linked: Bool) -> PlannedAction {
        guard let token else {
            return PlannedAction(kind: .revokeApple, state: .notPossible, detail: "auth/revoke", reason: "no stored Apple token")
        }
        let detail = "auth/revoke \(token.kind.rawValue) sha256:\(token.token.fingerprint)" + (linked ? "" : Self.storedOnly)
        // A code lives 5 minutes: at 5:00 it is gone.
        if token.kind == .authorizationCode && asOf - token.capturedAt >= Self.authorizationCodeLifetimeMs {
            return PlannedAction(kind: .revokeApple, state: .notPossible, detail: detail, reason: "authorization code older than 5 minutes")
        }
        // Captured after the plan's time, by more than a code lives: planned, as apply judges a code's age when it sends
        // (a plan given an earlier --as-of), with that said for the reviewer: a code of 2030 went unremarked.
        if token.kind == .authorizationCode, Self.capturedTooLate(token, now: asOf) {
            return PlannedAction(kind: .revokeApple, state: .planned, detail: detail,
                                 reason: "authorization code captured after the plan's time (at \(Timestamp.formatRFC3339(token.capturedAt))): "
                                    + "apply judges its age as it sends, and fails it if it is later than then (a clock or file error)")
        }
        return PlannedAction(kind: .revokeApple, state: .planned, detail: detail)
    }

    private func facebookRevocation(_ link: ProviderLink?, stored: StoredFacebookLogin?) -> PlannedAction {
        let detail = Self.facebookDetail + (link == nil ? Self.storedOnly : "")
        // The provider link's rawId is the app-scoped id Facebook gave the app; apply sends it.
        let linkedId = link.map(\.rawId) ?? ""
        let storedId = stored?.facebookId ?? ""
        if !linkedId.isEmpty, !storedId.isEmpty, linkedId != storedId {
            // The stored entry describes another Facebook user (its login kind too): neither id is taken on trust.
            return PlannedAction(kind: .revokeFacebook, state: .notPossible, detail: detail,
                                 reason: "the stored-tokens file gives another facebook_id than the account's facebook.com login")
        }
        let id = linkedId.isEmpty ? storedId : linkedId
        guard !id.isEmpty else {
            return PlannedAction(kind: .revokeFacebook, state: .notPossible, detail: detail, reason: "no Facebook app-scoped id")
        }
        guard let stored else {
            return PlannedAction(kind: .revokeFacebook, state: .planned, detail: detail + " (login kind unknown: taken as classic)", value: id)
        }
        if stored.login == .limited {
            return PlannedAction(kind: .revokeFacebook, state: .notPossible, detail: detail, reason: "Facebook Limited Login cannot be revoked from a server")
        }
        return PlannedAction(kind: .revokeFacebook, state: .planned, detail: detail, value: id)
    }

    /// Data and account deletion, after the revocations: what the revocations allow under the pipeline's policy.
    public func deletions(after revocations: [PlannedAction], uid: String) -> [PlannedAction] {
        guard let delete = stages.delete else { return [] }
        let notPossible = revocations.filter { $0.state == .notPossible }
        var state = ActionState.planned
        // An account with no login to revoke (only Twitter, say) was said to have its revocations planned first.
        // (Ending its sessions is no revocation to come first: the deletion ends them.)
        var policyNote = revocations.allSatisfy { $0.kind == .revokeSessions } ? "no login to revoke first" : "revocations planned first"
        var reason: String?
        if !notPossible.isEmpty {
            let why = notPossible.map { "\($0.kind.rawValue): \($0.reason ?? "not possible")" }.joined(separator: "; ")
            switch delete.whenNotRevocable {
            case .delete:
                policyNote = "allowed by when_not_revocable: delete (\(why))"
            case .keep:
                state = .blocked
                policyNote = "kept by when_not_revocable: keep"
                reason = why
            }
        }
        var actions: [PlannedAction] = []
        if delete.dataWebhook != nil {
            actions.append(PlannedAction(kind: .deleteData, state: state, detail: "data webhook; " + policyNote, reason: reason))
        }
        var unreachable: [String] = []
        for kind in delete.pathKinds {
            let detail = pathDetails[kind, default: ""] + "; " + policyNote
            if let refusal = DataPath.refusal(uid: uid, kind: kind) {
                actions.append(PlannedAction(kind: kind, state: .notPossible, detail: detail, reason: refusal.reason))
                unreachable.append("\(kind.rawValue): \(refusal.reason)")
            } else {
                actions.append(PlannedAction(kind: kind, state: state, detail: detail, reason: reason))
            }
        }
        if delete.accounts, !unreachable.isEmpty, state == .planned {
            // The account goes only after its data: data that cannot be reached keeps it for a person to look at.
            actions.append(PlannedAction(kind: .deleteAccount, state: .blocked, detail: "accounts:batchDelete force; kept: its data cannot be deleted",
                                         reason: unreachable.joined(separator: "; ")))
        } else if delete.accounts {
            actions.append(PlannedAction(kind: .deleteAccount, state: state, detail: "accounts:batchDelete force (ends its Firebase sessions); " + policyNote, reason: reason))
        }
        return actions
    }

    /// What a path deletion covers, in the plan's words: the `{uid}` paths and where they are.
    public static func pathDetail(_ kind: ActionKind, _ delete: DeleteConfig) -> String {
        let paths = delete.paths(kind).joined(separator: ", ")
        switch kind {
        case .deleteFirestore:
            let config = delete.firestore!
            return "Firestore \(config.database) \(config.mode.rawValue): \(paths)"
        case .deleteDatabase: return "Realtime Database \(delete.realtimeDatabase!.instance): \(paths)"
        case .deleteStorage: return "Cloud Storage prefixes: \(paths)"
        default: return paths
        }
    }
}
