/// What the offline stages made of one account.
public struct AccountOutcome: Sendable, Equatable {
    /// The account's position in the input (0-based), which orders every list of a report.
    public var sequence: Int64
    public var position: SourcePosition
    /// The account after normalization.
    public var account: Account
    public var repairs: RepairSet
    public var relay: RelayFinding?
    public var name: NameOutcome?
    public var selection: SelectionOutcome
    public var deletionRequest: DeletionRequest?
    public var actions: [PlannedAction]
    /// Its times that cannot be right: kept as they are, counted for the reviewer.
    public var oddTimes = OddTimes()

    /// An outcome with nothing in it (and nothing to allocate): what a moved-out outcome leaves in its place.
    static var empty: AccountOutcome {
        AccountOutcome(sequence: 0, position: SourcePosition(file: "", line: 0), account: Account(localId: ""), repairs: RepairSet(),
                       relay: nil, name: nil, selection: .notSelected, deletionRequest: nil, actions: [])
    }

    /// Whether the store keeps a row for this account: it has actions, needs review, or was selected or protected.
    /// (Nameless accounts with no name source are only counted, by reason.)
    /// Other accounts only count in the totals, which keeps a 10-million-account plan small.
    public var isNoteworthy: Bool {
        if !actions.isEmpty { return true }
        // A deletion request not acted on (within its grace period, or dated after the plan) is named in the reports.
        if deletionRequest != nil { return true }
        if let relay, !relay.consentReview.isEmpty { return true }
        if case .notSelected = selection { return false }
        return true
    }
}

/// One input record after the offline stages: an account, or a quarantined row.
public enum RecordOutcome: Sendable {
    case account(AccountOutcome)
    case quarantined(QuarantineEntry)
}

/// An account's times that cannot be right: after the plan's time, or a last sign-in before the account was made. A
/// clock, time zone or unit is off at the source (or the plan is made as of an earlier day). Each by more than a
/// minute (`slack`): a server's clocks differ by less, and such a difference says nothing of the data.
public struct OddTimes: OptionSet, Sendable, Equatable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let createdAfterPlan = OddTimes(rawValue: 1)
    public static let signedInAfterPlan = OddTimes(rawValue: 2)
    public static let signedInBeforeCreated = OddTimes(rawValue: 4)
    static let slack: Int64 = 60_000

    /// Times in epoch milliseconds, as the normalize stage leaves them; `asOf`: the plan's time.
    public init(createdAt: Int64?, lastSignedInAt: Int64?, asOf: Int64) {
        self.init()
        if let createdAt, createdAt > asOf + Self.slack { insert(.createdAfterPlan) }
        if let lastSignedInAt, lastSignedInAt > asOf + Self.slack { insert(.signedInAfterPlan) }
        if let createdAt, let lastSignedInAt, lastSignedInAt < createdAt - Self.slack { insert(.signedInBeforeCreated) }
    }

    /// The tally's keys, one per kind, with what plan.md calls the accounts; and the accounts with any (`accounts.odd-times`).
    public static let keys: [(kind: OddTimes, key: String, said: String)] = [
        (.createdAfterPlan, "times.created-after-plan", "made after the plan's time"),
        (.signedInAfterPlan, "times.signed-in-after-plan", "last signed in after the plan's time"),
        (.signedInBeforeCreated, "times.signed-in-before-created", "last signed in before they were made"),
    ]
    public static let accountsKey = "accounts.odd-times"
}
