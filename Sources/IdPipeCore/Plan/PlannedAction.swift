/// The remote actions idpipe plans and (in a later stage) carries out.
public enum ActionKind: String, Sendable, Codable, CaseIterable {
    case updateName = "update-name"
    case revokeApple = "revoke-apple"
    case revokeFacebook = "revoke-facebook"
    case revokeSessions = "revoke-sessions"
    case deleteData = "delete-data"
    /// The configured Firestore paths of the account (`stages.delete.firestore`).
    case deleteFirestore = "delete-firestore"
    /// The configured Realtime Database paths.
    case deleteDatabase = "delete-database"
    /// The configured Cloud Storage prefixes.
    case deleteStorage = "delete-storage"
    case deleteAccount = "delete-account"

    /// The kind a store row or report names, looked up in a table: `init(rawValue:)` compares the text with each case
    /// in turn (about 600 instructions; the reports ask twice for each action).
    public static func named(_ text: String) -> ActionKind? { byName[text] }

    private static let byName = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

    /// The service the action goes to.
    public var service: String {
        switch self {
        case .updateName, .revokeSessions, .deleteAccount: "identitytoolkit"
        case .revokeApple: "apple"
        case .revokeFacebook: "facebook"
        case .deleteData: "data-webhook"
        case .deleteFirestore: "firestore"
        case .deleteDatabase: "database"
        case .deleteStorage: "storage"
        }
    }

    /// Execution order within an account: names, revocations, data, then the account.
    public var order: Int { ActionKind.allCases.firstIndex(of: self)! }
}

/// Where an action stands. The later stages move `planned` → `sent` → `done`/`failed`.
public enum ActionState: String, Sendable, Codable, CaseIterable {
    case planned
    case sent
    case done
    case failed
    /// It cannot be done at all (no token, Limited Login…); the reason says why.
    case notPossible = "not-possible"
    /// It waits on something that did not happen (a revocation that is not possible, with policy keep).
    case blocked

    /// Still to do: never sent, or sent without an answer recorded (the process stopped in between).
    public var isOpen: Bool { self == .planned || self == .sent }
}

extension Dictionary where Key == ActionState, Value == Int {
    /// How many of the tallied actions are still to do.
    public var open: Int { reduce(0) { $0 + ($1.key.isOpen ? $1.value : 0) } }
}

public struct PlannedAction: Sendable, Equatable {
    public var kind: ActionKind
    public var state: ActionState
    /// What will be sent, without secrets: the token kind and fingerprint, the name source, the policy.
    public var detail: String
    /// Why it is not possible or blocked.
    public var reason: String?
    /// The new display name, for `update-name` (personal data: masked in reports by default).
    public var value: String?

    public init(kind: ActionKind, state: ActionState, detail: String, reason: String? = nil, value: String? = nil) {
        self.kind = kind
        self.state = state
        self.detail = detail
        self.reason = reason
        self.value = value
    }
}
