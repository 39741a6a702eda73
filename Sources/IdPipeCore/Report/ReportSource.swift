/// An account row as the report reads it back from the store.
public struct ReportAccount: Sendable {
    public var sequence: Int64
    public var uid: String
    public var file: String
    public var line: Int
    public var relay: String?
    public var consentReview: String?
    public var selection: String
    public var selectionDetail: String?
    public var nameOutcome: String?
    public var email: String?
    public var displayName: String?
    public var phone: String?
    public var providers: String
    public var deletionRequest: String?
    /// What normalization repaired; kept (and listed) only in a migration, whose import file carries the repaired values.
    public var repairs: RepairSet

    public init(sequence: Int64, uid: String, file: String, line: Int, relay: String?, consentReview: String?, selection: String,
                selectionDetail: String?, nameOutcome: String?, email: String?, displayName: String?, phone: String?, providers: String,
                deletionRequest: String?, repairs: RepairSet = RepairSet()) {
        self.sequence = sequence
        self.uid = uid
        self.file = file
        self.line = line
        self.relay = relay
        self.consentReview = consentReview
        self.selection = selection
        self.selectionDetail = selectionDetail
        self.nameOutcome = nameOutcome
        self.email = email
        self.displayName = displayName
        self.phone = phone
        self.providers = providers
        self.deletionRequest = deletionRequest
        self.repairs = repairs
    }
}

public struct ReportAction: Sendable {
    public var sequence: Int64
    public var uid: String
    public var kind: String
    public var state: String
    public var detail: String
    public var reason: String?
    public var value: String?
    public var attempts: Int
    /// What apply made of it, the rule that let a deletion through, and how often it was sent again after a crash.
    public var result: String?
    public var policy: String?
    public var resent: Int
    /// Path deletions: the dry run's count and per-path detail, and what apply deleted.
    public var wouldDelete: Int?
    public var counted: String?
    public var deleted: Int?

    public init(sequence: Int64, uid: String, kind: String, state: String, detail: String, reason: String?, value: String?, attempts: Int,
                result: String? = nil, policy: String? = nil, resent: Int = 0, wouldDelete: Int? = nil, counted: String? = nil, deleted: Int? = nil) {
        self.wouldDelete = wouldDelete
        self.counted = counted
        self.deleted = deleted
        self.result = result
        self.policy = policy
        self.resent = resent
        self.sequence = sequence
        self.uid = uid
        self.kind = kind
        self.state = state
        self.detail = detail
        self.reason = reason
        self.value = value
        self.attempts = attempts
    }
}

extension ReportAccount {
    /// The row the plan keeps of an outcome: the store writes these columns, and the reports read them back (or get
    /// them here, as the plan commits its batches). One mapping for both, so a report is the same either way.
    /// `withRepairs`: the plan writes an import file, so its repairs are the account's (else they only served matching).
    public init(_ outcome: borrowing AccountOutcome, withRepairs: Bool = false) {
        let (selection, detail) = Self.selection(outcome.selection)
        self.init(
            sequence: outcome.sequence, uid: outcome.account.localId, file: outcome.position.file, line: outcome.position.line,
            relay: outcome.relay.map(\.relayClass.name), consentReview: outcome.relay.flatMap { $0.consentReview.isEmpty ? nil : $0.consentReview.text },
            selection: selection, selectionDetail: detail, nameOutcome: outcome.name.map(Self.name), email: outcome.account.email,
            displayName: outcome.account.displayName, phone: outcome.account.phoneNumber, providers: Self.providerList(outcome.account.providers),
            deletionRequest: outcome.deletionRequest.map { "\($0.source) at \(Timestamp.formatRFC3339($0.requestedAt))" },
            repairs: withRepairs ? outcome.repairs : RepairSet())
    }

    /// The provider ids, sorted, separated by spaces; without the three arrays of the general way for the one or two
    /// providers most accounts have.
    static func providerList(_ providers: [ProviderLink]) -> String {
        switch providers.count {
        case 0: ""
        case 1: providers[0].providerId
        case 2 where providers[0].providerId <= providers[1].providerId: providers[0].providerId + " " + providers[1].providerId
        case 2: providers[1].providerId + " " + providers[0].providerId
        default: providers.map(\.providerId).sorted().joined(separator: " ")
        }
    }

    static func selection(_ outcome: SelectionOutcome) -> (String, String?) {
        switch outcome {
        case .notSelected: ("not-selected", nil)
        case .selected(let reasons): ("selected", reasons.text)
        case .protected(let reasons, let why): ("protected", "\(why); matched: \(reasons.text)")
        case .filteredByProvider(let reasons): ("filtered-by-provider", reasons.text)
        case .requestNotActedOn(let why): ("not-selected", why)
        }
    }

    static func name(_ outcome: NameOutcome) -> String {
        switch outcome {
        case .present: "present"
        case .fill(let update): "fill from \(update.source)"
        case .noSource(let why): "no source: \(why)"
        }
    }
}

extension ReportAction {
    /// A planned action as the plan keeps it (see `ReportAccount.init(_:)`): not sent yet, nothing counted.
    public init(_ action: PlannedAction, sequence: Int64, uid: String) {
        self.init(sequence: sequence, uid: uid, kind: action.kind.rawValue, state: action.state.rawValue, detail: action.detail,
                  reason: action.reason, value: action.value, attempts: 0)
    }
}

extension AccountOutcome {
    /// The actions in the order they are carried out, which is the order they are kept in (the planner makes them so;
    /// any other order is sorted).
    public var actionsInStepOrder: [PlannedAction] {
        let inOrder = actions.count < 2 || actions.indices.dropFirst().allSatisfy { actions[$0 - 1].kind.order <= actions[$0].kind.order }
        return inOrder ? actions : actions.sorted { $0.kind.order < $1.kind.order }
    }
}

/// Which accounts a report list shows.
public enum AccountList: Sendable, CaseIterable {
    case consentReview
    case nameFill
    case selected
    case protected
    /// A rule matched, and `select.providers` left the account out: a deletion request among them is not carried out.
    case filteredByProvider
    /// A deletion request no rule acted on: within its grace period (`select.deletion_grace_days`), dated after the
    /// plan's time, or not read by any rule.
    case requestNotActedOn
    /// In a migration: an account whose values normalization repaired (the import file carries the repaired values).
    case repaired
}

/// What the report reads: the run, its totals, and the rows in input order, streamed.
public protocol ReportSource {
    func run() throws -> RunRecord
    func tally() throws -> Tally
    /// How many accounts each list holds, counted in one pass over them.
    func counts() throws -> [AccountList: Int]
    func actions(limit: Int?, _ body: (ReportAction) throws -> Void) throws
    /// The accounts of `list` (every account when nil) with their actions, in input order, at most `limit` of them;
    /// every account is streamed without holding all actions at once.
    func accountsWithActions(_ list: AccountList?, limit: Int?, _ body: (ReportAccount, [ReportAction]) throws -> Void) throws
    func quarantine(limit: Int?, _ body: (Int64, QuarantineEntry) throws -> Void) throws
    /// What apply did; nil before the first apply.
    func applySummary() throws -> ApplySummary?
    /// Where apply's import stands (`stages.import`), with at most `limit` refused accounts; nil before its first apply.
    func importSummary(limit: Int) throws -> ImportSummary?
    /// The configured data paths; nil when the pipeline has none. `largest` lists at most `limit` accounts.
    func dataSummary(limit: Int) throws -> DataSummary?
}

extension AccountList {
    /// Whether the list holds the account: the state store's condition for it (`StateStore.condition`), in Swift, for
    /// the lists a plan gathers as it goes. Tests hold the two to the same plan.md.
    public func holds(_ account: borrowing ReportAccount) -> Bool {
        switch self {
        case .consentReview: account.consentReview != nil
        // SQL's `LIKE 'fill from %'`: the prefix, ASCII letters in either case.
        case .nameFill: account.nameOutcome.map { TextScan.hasPrefixIgnoringASCIICase($0, "fill from ") } ?? false
        case .selected: account.selection == "selected"
        case .protected: account.selection == "protected"
        case .filteredByProvider: account.selection == "filtered-by-provider"
        case .requestNotActedOn: account.deletionRequest != nil && account.selection == "not-selected"
        case .repaired: !account.repairs.isEmpty
        }
    }
}

/// The Markdown report's account lists, gathered as a plan commits its batches: how many accounts each holds, and
/// its first `limit` in input order. The report then needs no pass over the store's tables (a tenth of a second after
/// a plan of 1M accounts, while nothing else was left to do).
public struct GatheredLists: Sendable {
    public let limit: Int
    public private(set) var counts = Dictionary(uniqueKeysWithValues: AccountList.allCases.map { ($0, 0) })
    public private(set) var first: [AccountList: [(ReportAccount, [ReportAction])]] = [:]
    /// Planned deletions of data paths: with none, there is no data summary to read from the store.
    public private(set) var pathDeletions = 0

    public init(limit: Int) {
        self.limit = limit
    }

    /// Adds a kept account; accounts come in input order.
    public mutating func add(_ account: borrowing ReportAccount, actions: borrowing [ReportAction]) {
        for index in actions.indices where ActionKind.named(actions[index].kind)?.isPathDeletion == true { pathDeletions += 1 }
        for list in AccountList.allCases where list.holds(account) {
            counts[list, default: 0] += 1
            if first[list, default: []].count < limit { first[list, default: []].append((copy account, copy actions)) }
        }
    }
}

/// A report source that answers the account lists from `lists`, gathered during the plan, and everything else
/// from `base`.
public struct GatheredListsSource<Base: ReportSource>: ReportSource {
    let base: Base
    let lists: GatheredLists

    public init(base: Base, lists: GatheredLists) {
        self.base = base
        self.lists = lists
    }

    public func run() throws -> RunRecord { try base.run() }
    public func tally() throws -> Tally { try base.tally() }
    public func counts() throws -> [AccountList: Int] { lists.counts }

    public func accountsWithActions(_ list: AccountList?, limit: Int?, _ body: (ReportAccount, [ReportAction]) throws -> Void) throws {
        guard let list, let limit, limit <= lists.limit else { return try base.accountsWithActions(list, limit: limit, body) }
        for (account, actions) in (lists.first[list] ?? []).prefix(limit) { try body(account, actions) }
    }

    public func actions(limit: Int?, _ body: (ReportAction) throws -> Void) throws { try base.actions(limit: limit, body) }
    public func quarantine(limit: Int?, _ body: (Int64, QuarantineEntry) throws -> Void) throws { try base.quarantine(limit: limit, body) }
    public func applySummary() throws -> ApplySummary? { try base.applySummary() }
    public func importSummary(limit: Int) throws -> ImportSummary? { try base.importSummary(limit: limit) }
    /// The store's summary has a row per kind of path deletion planned, and is nil without any.
    public func dataSummary(limit: Int) throws -> DataSummary? { lists.pathDeletions == 0 ? nil : try base.dataSummary(limit: limit) }
}
