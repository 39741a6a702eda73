import Foundation

/// The totals of a run. Every account adds to them, whether or not the store keeps a row for it;
/// they are saved with each checkpoint, so a resumed run continues from the same totals.
public struct Tally: Sendable, Equatable, Codable {
    /// Counter name → value. Names are stable: they appear in the JSON report.
    public private(set) var counts: [String: Int] = [:]

    public init() {}

    public subscript(_ key: String) -> Int {
        counts[key] ?? 0
    }

    public mutating func add(_ key: String, _ amount: Int = 1) {
        counts[key, default: 0] += amount
    }

    public mutating func merge(_ other: Tally) {
        for (key, value) in other.counts { counts[key, default: 0] += value }
    }

    /// Quarantine fields of faults that are no account: the file itself (it ends early), and the separator between two
    /// accounts (a comma missing or repeated: both accounts are read). They are quarantined to be seen and to set the
    /// exit code, but not counted as accounts read.
    public static let faultFields = ["file", "separator"]

    /// Rows in the quarantine: the accounts set aside, and the faults that are no account (`faultFields`).
    public var quarantineRows: Int {
        self["accounts.quarantined"] + Self.faultFields.reduce(0) { $0 + self["quarantine.field." + $1] }
    }

    /// Whether the input was cut short (a quarantine row of the file itself).
    public var inputEndsEarly: Bool {
        self["quarantine.field.file"] > 0
    }

    /// The values whose key starts with `prefix`, keyed by the rest of the name.
    public func group(_ prefix: String) -> [(String, Int)] {
        counts.filter { $0.key.hasPrefix(prefix) }.map { (String($0.key.dropFirst(prefix.count)), $0.value) }.sorted { $0.0 < $1.0 }
    }
}

/// Counting into a tally, fast: per-account counters go through fixed slots and become names once per batch.
public struct TallyCounter: Sendable {
    private var slots = [Int](repeating: 0, count: Slot.count)
    private var keyed: [String: Int] = [:]

    public init() {}

    enum Slot {
        static let accounts = 0
        static let quarantined = 1
        static let relayBase = 2  // RelayClass.allCases
        static let consentReview = relayBase + RelayClass.allCases.count
        static let providerBase = consentReview + 1
        static let repairBase = providerBase + ProviderID.reported.count
        static let noProviders = repairBase + Repair.allCases.count
        static let disabled = noProviders + 1
        static let namesPresent = disabled + 1
        static let selected = namesPresent + 1
        static let protected = selected + 1
        static let filteredByProvider = protected + 1
        /// Accounts with a deletion (of data or of the account) planned: what the guards and apply's cap count.
        static let deleting = filteredByProvider + 1
        /// Of those, the accounts with a revocation that is not possible: `when_not_revocable: delete` lets them through.
        static let deletingUnrevoked = deleting + 1
        /// One per action kind and state, kind-major.
        static let actionBase = deletingUnrevoked + 1
        static let count = actionBase + ActionKind.allCases.count * ActionState.allCases.count

        static func action(_ kind: ActionKind, _ state: ActionState) -> Int {
            actionBase + ActionKind.allCases.firstIndex(of: kind)! * ActionState.allCases.count + ActionState.allCases.firstIndex(of: state)!
        }
    }

    /// Counts keyed by a value the account carries, named with their prefix only in `tally()`: building the full
    /// name (and hashing it) for every account cost more than the rest of the counting.
    private var nameFills: [String: Int] = [:]
    private var nameMisses: [String: Int] = [:]
    private var selectionReasons: [String: Int] = [:]

    /// Counts a quarantined row; `by: -1` takes back one counted before (a row whose first problem turns out to be another).
    public mutating func count(_ entry: QuarantineEntry, by amount: Int = 1) {
        slots[Slot.quarantined] += amount
        keyed["quarantine.field." + Self.fieldFamily(entry.field), default: 0] += amount
    }

    /// Counts an account; `by: -1` takes back one counted before (an account that turns out to be a duplicate).
    /// (It takes the outcome itself: taken out of a `RecordOutcome` by a pattern, it was copied, every string in it
    /// retained and released again, for each account.)
    public mutating func count(_ outcome: AccountOutcome, by amount: Int = 1) {
        slots[Slot.accounts] += amount
        if outcome.account.providers.isEmpty { slots[Slot.noProviders] += amount }
        for link in outcome.account.providers { slots[Slot.providerBase + ProviderID.reportIndex(link.providerId)] += amount }
        if outcome.account.disabled { slots[Slot.disabled] += amount }
        if !outcome.repairs.isEmpty {
            for repair in outcome.repairs.all { slots[Slot.repairBase + repair.rawValue] += amount }
        }
        if let relay = outcome.relay {
            slots[Slot.relayBase + relay.relayClass.rawValue] += amount
            if !relay.consentReview.isEmpty { slots[Slot.consentReview] += amount }
        }
        if let name = outcome.name {
            switch name {
            case .present: slots[Slot.namesPresent] += amount
            case .fill(let update): nameFills[update.source.description, default: 0] += amount
            case .noSource(let why): nameMisses[why, default: 0] += amount
            }
        }
        switch outcome.selection {
        case .notSelected, .requestNotActedOn: break
        case .selected(let reasons):
            slots[Slot.selected] += amount
            for label in reasons.labels { selectionReasons[label, default: 0] += amount }
        case .protected: slots[Slot.protected] += amount
        case .filteredByProvider: slots[Slot.filteredByProvider] += amount
        }
        var deleting = false, unrevoked = false
        for action in outcome.actions {
            slots[Slot.action(action.kind, action.state)] += amount
            if action.state == .planned && action.kind.isDeletion { deleting = true }
            if action.state == .notPossible && action.kind.isRevocation { unrevoked = true }
            if let reason = action.reason, action.state == .notPossible {
                keyed["not-possible.\(action.kind.rawValue).\(reason)", default: 0] += amount
            }
        }
        if deleting { slots[Slot.deleting] += amount }
        if deleting && unrevoked { slots[Slot.deletingUnrevoked] += amount }
        if !outcome.oddTimes.isEmpty {
            keyed[OddTimes.accountsKey, default: 0] += amount
            for (kind, key, _) in OddTimes.keys where outcome.oddTimes.contains(kind) { keyed[key, default: 0] += amount }
        }
    }

    /// Counts an account the fast path took (`AccountProcessor.fastPath`): what `count(_:by:)` counts of the full path's
    /// outcome of it, which has no repair, no review, no selection and no action.
    public mutating func count(_ plain: PlainAccount, by amount: Int = 1) {
        slots[Slot.accounts] += amount
        if plain.providers == 0 {
            slots[Slot.noProviders] += amount
        } else {
            var bits = plain.providers
            while bits != 0 {
                slots[Slot.providerBase + bits.trailingZeroBitCount] += amount
                bits &= bits - 1
            }
        }
        if plain.disabled { slots[Slot.disabled] += amount }
        if let relay = plain.relay { slots[Slot.relayBase + relay.rawValue] += amount }
        switch plain.name {
        case .notAsked: break
        case .present: slots[Slot.namesPresent] += amount
        case .noSource: nameMisses[NameBackfill.noSourceHasAName, default: 0] += amount
        }
    }

    /// An account left out of the import file, as it shares `field` with one before it (`ImportKeys`).
    public mutating func countLeftOutOfImport(field: String) {
        keyed["import.left-out." + field, default: 0] += 1
    }

    /// Counts an account written to the import file, and what in it `firebase auth:import` refuses (the file keeps it:
    /// an Apple link or an MFA enrolment left out would be lost, where the API can take them).
    /// `by: -1` takes back one counted before (an account the merge then refused).
    public mutating func countImported(_ account: Account, by amount: Int = 1) {
        keyed["import.accounts", default: 0] += amount
        // An import of these needs the project's password hash parameters (`stages.import.password_hash`).
        if let hash = account.passwordHash, !hash.isEmpty { keyed["import.password-hashes", default: 0] += amount }
        var refused = false
        // The links the file holds: it keeps the exported providers only.
        for link in account.providers where ProviderID.exported.contains(link.providerId)
            && !ProviderID.importedByFirebaseCLI.contains(link.providerId) {
            keyed["import.cli-refuses.provider " + link.providerId, default: 0] += amount
            refused = true
        }
        if account.mfaInfoJSON != nil {
            keyed["import.cli-refuses.mfaInfo", default: 0] += amount
            refused = true
        }
        if refused { keyed["import.cli-refused", default: 0] += amount }
    }

    /// An account left out of the import file, as Identity Toolkit refuses one of its values (`ImportJSON.refusal`).
    public mutating func countRefusedByTheAPI(_ what: String) {
        keyed["import.api-refuses." + what, default: 0] += 1
        keyed["import.api-refused", default: 0] += 1
    }

    /// Whether `text` is a JSON object as a strict parser reads it. JSONSerialization takes a comma before `}` or `]`,
    /// and a byte order mark before the text, which the CLI's parser (`JSON.parse`) refuses: such claims passed the
    /// check, and the import failed.
    static func isJSONObject(_ text: String) -> Bool {
        text.unicodeScalars.first != "\u{FEFF}" && !hasTrailingComma(text)
            && (try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any]
    }

    /// A `,` followed, white space apart, by `}` or `]`, outside strings.
    static func hasTrailingComma(_ text: String) -> Bool {
        var inString = false, escaped = false, afterComma = false
        for byte in text.utf8 {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): continue
            case UInt8(ascii: "}"), UInt8(ascii: "]"): if afterComma { return true }
            case UInt8(ascii: "\""): inString = true
            default: break
            }
            afterComma = byte == UInt8(ascii: ",")
        }
        return false
    }

    /// `providerUserInfo[2].rawId` and `providerUserInfo[0].rawId` count together.
    static func fieldFamily(_ field: String) -> String {
        guard field.contains("[") else { return field }
        var result = ""
        var skipping = false
        for character in field {
            if character == "[" { skipping = true; result.append("[]"); continue }
            if character == "]" { skipping = false; continue }
            if !skipping { result.append(character) }
        }
        return result
    }

    /// Adds another counter's counts (a worker's part of a batch).
    public mutating func merge(_ other: TallyCounter) {
        for index in slots.indices { slots[index] += other.slots[index] }
        for (key, value) in other.keyed { keyed[key, default: 0] += value }
        for (key, value) in other.nameFills { nameFills[key, default: 0] += value }
        for (key, value) in other.nameMisses { nameMisses[key, default: 0] += value }
        for (key, value) in other.selectionReasons { selectionReasons[key, default: 0] += value }
    }

    /// The counts as a tally with stable names.
    public func tally() -> Tally {
        var tally = Tally()
        func put(_ key: String, _ value: Int) { if value != 0 { tally.add(key, value) } }
        let accountsQuarantined = slots[Slot.quarantined] - Tally.faultFields.reduce(0) { $0 + (keyed["quarantine.field." + $1] ?? 0) }
        put("accounts.read", slots[Slot.accounts] + accountsQuarantined)
        put("accounts.processed", slots[Slot.accounts])
        put("accounts.quarantined", accountsQuarantined)
        put("accounts.disabled", slots[Slot.disabled])
        put("accounts.no-providers", slots[Slot.noProviders])
        for relay in RelayClass.allCases { put("relay.\(relay.name)", slots[Slot.relayBase + relay.rawValue]) }
        put("relay.consent-review", slots[Slot.consentReview])
        for (index, id) in ProviderID.reported.enumerated() { put("providers.\(id)", slots[Slot.providerBase + index]) }
        for repair in Repair.allCases { put("repairs.\(repair.key)", slots[Slot.repairBase + repair.rawValue]) }
        put("names.present", slots[Slot.namesPresent])
        for (source, value) in nameFills { put("names.fill." + source, value) }
        for (why, value) in nameMisses { put("names.no-source." + why, value) }
        put("selection.selected", slots[Slot.selected])
        for (label, value) in selectionReasons { put("selection.reason." + label, value) }
        put("selection.protected", slots[Slot.protected])
        put("selection.filtered-by-provider", slots[Slot.filteredByProvider])
        put("accounts.deletions-planned", slots[Slot.deleting])
        put("accounts.deletions-planned-unrevoked", slots[Slot.deletingUnrevoked])
        for kind in ActionKind.allCases {
            for state in ActionState.allCases { put("actions.\(kind.rawValue).\(state.rawValue)", slots[Slot.action(kind, state)]) }
        }
        for (key, value) in keyed { put(key, value) }
        return tally
    }
}
