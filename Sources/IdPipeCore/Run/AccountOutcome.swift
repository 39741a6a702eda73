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
