/// One recorded action as `apply` reads it back: enough to carry it out and to judge what may follow it.
public struct PendingAction: Sendable, Equatable {
    public var id: Int64
    public var kind: ActionKind
    public var state: ActionState
    public var detail: String
    public var reason: String?
    /// `update-name`: the new display name; `revoke-facebook`: the app-scoped id.
    public var value: String?
    /// When it was first sent (epoch ms); a resent session revocation reuses it, so a retry changes nothing.
    public var firstSentAt: Int64?

    public init(id: Int64, kind: ActionKind, state: ActionState, detail: String, reason: String? = nil, value: String? = nil, firstSentAt: Int64? = nil) {
        self.id = id
        self.kind = kind
        self.state = state
        self.detail = detail
        self.reason = reason
        self.value = value
        self.firstSentAt = firstSentAt
    }

    public var isOpen: Bool { state.isOpen }
}

/// An account with at least one open action, and all of its actions (closed ones decide what the open ones may do).
public struct PendingAccount: Sendable, Equatable {
    public var sequence: Int64
    public var uid: String
    /// The plan selected it for cleanup (only such accounts may have deletions).
    public var selected: Bool
    public var actions: [PendingAction]

    public init(sequence: Int64, uid: String, selected: Bool, actions: [PendingAction]) {
        self.sequence = sequence
        self.uid = uid
        self.selected = selected
        self.actions = actions
    }

    public func action(_ kind: ActionKind) -> PendingAction? {
        actions.first { $0.kind == kind }
    }
}

/// A change of one action's state, written with others in one transaction.
public struct ActionUpdate: Sendable, Equatable {
    public var id: Int64
    public var state: ActionState
    /// What happened (`revoked or already invalid`, `display name set`…), for done actions.
    public var result: String?
    /// Why it failed, is not possible, or is blocked.
    public var reason: String?
    /// For deletions: the rule that let it through or held it back.
    public var policy: String?
    /// Epoch ms.
    public var at: Int64
    /// For path deletions: how many items (documents, nodes, objects) it deleted.
    public var count: Int?

    public init(id: Int64, state: ActionState, result: String? = nil, reason: String? = nil, policy: String? = nil, at: Int64, count: Int? = nil) {
        self.id = id
        self.count = count
        self.state = state
        self.result = result
        self.reason = reason
        self.policy = policy
        self.at = at
    }
}

/// What the pipeline does with an account's deletion when its revocations did not all succeed.
public struct DeletionPolicy: Sendable, Equatable {
    public var whenNotRevocable: NotRevocablePolicy
    public var whenRevocationFails: NotRevocablePolicy

    public init(whenNotRevocable: NotRevocablePolicy, whenRevocationFails: NotRevocablePolicy) {
        self.whenNotRevocable = whenNotRevocable
        self.whenRevocationFails = whenRevocationFails
    }

    public enum Verdict: Sendable, Equatable {
        /// The deletion may go ahead; the text names the rule that let it through (shown in the report).
        case allow(policy: String)
        /// It may not; `policy` names the rule, `reason` the revocations that held it back.
        case block(policy: String, reason: String)
        /// A revocation is still open: decide later.
        case wait
    }

    /// Judges an account's deletion on the final states of its revocations. When both rules apply (one revocation
    /// failed, another was not possible), `keep` in either keeps the account: a deletion goes ahead only when every rule
    /// that concerns it lets it.
    public func verdict(revocations: [PendingAction]) -> Verdict {
        if revocations.contains(where: \.isOpen) { return .wait }
        let rules: [(ActionState, String, String, NotRevocablePolicy)] = [
            (.failed, "failed", "when_revocation_fails", whenRevocationFails),
            (.notPossible, "not possible", "when_not_revocable", whenNotRevocable),
        ]
        var allowedBy: [String] = []
        for (state, label, key, policy) in rules {
            let held = revocations.filter { $0.state == state }
            guard !held.isEmpty else { continue }
            let reason = held.map { "\($0.kind.rawValue) \(label): \($0.reason ?? "no reason recorded")" }.joined(separator: "; ")
            switch policy {
            case .keep: return .block(policy: "\(key): keep", reason: reason)
            case .delete: allowedBy.append("\(key): delete (\(reason))")
            }
        }
        if !allowedBy.isEmpty { return .allow(policy: allowedBy.joined(separator: "; ")) }
        return .allow(policy: revocations.isEmpty ? "no revocation planned" : "revocations done")
    }
}

extension ActionKind {
    public var isRevocation: Bool { self == .revokeApple || self == .revokeFacebook || self == .revokeSessions }
    public var isDeletion: Bool { isDataDeletion || self == .deleteAccount }
    /// The user's data, deleted before the account: the webhook and the configured paths.
    public var isDataDeletion: Bool { self == .deleteData || isPathDeletion }
    /// Deletions of configured paths, counted by the dry run.
    public var isPathDeletion: Bool { self == .deleteFirestore || self == .deleteDatabase || self == .deleteStorage }
}

/// What one configured path holds (dry run) or held (apply) for one account, by its `{uid}` template.
public struct PathCount: Sendable, Equatable {
    public var template: String
    public var count: Int

    public init(template: String, count: Int) {
        self.template = template
        self.count = count
    }

    /// `users/{uid}: 3; /presence/{uid}: 0`, the stored and reported form.
    public static func describe(_ counts: [PathCount]) -> String {
        counts.map { "\($0.template): \($0.count)" }.joined(separator: "; ")
    }

    /// Reads back `describe`.
    public static func parse(_ detail: String) -> [PathCount] {
        detail.split(separator: "; ").compactMap { part in
            guard let colon = part.lastIndex(of: ":"), let count = Int(part[part.index(after: colon)...].drop { $0 == " " }) else { return nil }
            return PathCount(template: String(part[..<colon]), count: count)
        }
    }

    public static func total(_ counts: [PathCount]) -> Int {
        counts.reduce(0) { $0 + $1.count }
    }
}

/// A path deletion the dry run has yet to count.
public struct UncountedAction: Sendable, Equatable {
    public var id: Int64
    public var uid: String
    public var kind: ActionKind

    public init(id: Int64, uid: String, kind: ActionKind) {
        self.id = id
        self.uid = uid
        self.kind = kind
    }
}

/// The dry run's finding for one path deletion: the counts, or why they could not be had.
public struct DataSurveyResult: Sendable, Equatable {
    public var id: Int64
    public var counts: Result<[PathCount], SurveyFailure>

    public init(id: Int64, counts: Result<[PathCount], SurveyFailure>) {
        self.id = id
        self.counts = counts
    }
}

public struct SurveyFailure: Error, Sendable, Equatable {
    public var reason: String
    /// The count gave up on passing faults (5xx, timeouts, a long throttle): the next `plan` or `resume` tries it again.
    public var retryable: Bool
    public init(reason: String, retryable: Bool = false) {
        self.reason = reason
        self.retryable = retryable
    }
}
