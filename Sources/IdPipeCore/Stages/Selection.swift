/// Why an account is selected for cleanup.
public struct SelectionReasons: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let deletionRequested = SelectionReasons(rawValue: 1)
    public static let disabled = SelectionReasons(rawValue: 2)
    public static let inactive = SelectionReasons(rawValue: 4)

    public var labels: [String] {
        var result: [String] = []
        if contains(.deletionRequested) { result.append("deletion requested") }
        if contains(.disabled) { result.append("disabled") }
        if contains(.inactive) { result.append("inactive") }
        return result
    }

    /// The labels joined by ", ", made once for each of the eight sets (the store writes it for every selected account).
    public var text: String { rawValue < 8 ? Self.texts[Int(rawValue)] : labels.joined(separator: ", ") }
    private static let texts = (0..<8).map { SelectionReasons(rawValue: UInt8($0)).labels.joined(separator: ", ") }
}

public enum SelectionOutcome: Sendable, Equatable {
    case notSelected
    case selected(SelectionReasons)
    /// A rule matched but the account is protected: it is never selected for deletion.
    case protected(SelectionReasons, why: String)
    /// A rule matched but the provider filter excludes the account.
    case filteredByProvider(SelectionReasons)
    /// No rule matched, and the account's owner asked for its deletion: why the request is not acted on (yet).
    case requestNotActedOn(why: String)

    public var isSelected: Bool {
        if case .selected = self { return true }
        return false
    }
}

/// The selection rules of a pipeline, ready to apply at a fixed moment (`asOf`, epoch ms).
public struct Selector: Sendable {
    public let config: SelectionConfig
    public let asOf: Int64
    private let protectedIds: Set<String>
    private let inactiveBefore: Int64?
    /// The latest time a deletion request may have been made to be acted on: `asOf`, less the grace period.
    public let requestsHonouredUntil: Int64

    public init(config: SelectionConfig, asOf: Int64, extraProtectedIds: Set<String> = []) {
        self.config = config
        self.asOf = asOf
        self.protectedIds = Set(config.protectedIds).union(extraProtectedIds)
        self.inactiveBefore = config.inactiveForDays.map { asOf - Int64($0) * 86_400_000 }
        self.requestsHonouredUntil = config.requestsHonouredUntil(asOf: asOf)
    }

    /// A deletion request dated after `asOf` did not exist at the plan's time (a clock or time zone off, or a plan
    /// made as of an earlier day): it is not honoured, and the plan says how many there are
    /// (`RunRecord.deletionRequestsAfterAsOf`). One within its grace period (`select.deletion_grace_days`) is not
    /// acted on yet (`RunRecord.deletionRequestsInGrace`).
    public func select(_ account: Account, deletionRequest: DeletionRequest?) -> SelectionOutcome {
        let reasons = reasons(deletionRequested: deletionRequest.map { $0.requestedAt <= requestsHonouredUntil } ?? false, disabled: account.disabled,
                              lastSignedInAt: account.lastSignedInAt, createdAt: account.createdAt)
        guard !reasons.isEmpty else { return deletionRequest.map { .requestNotActedOn(why: whyNotActedOn($0)) } ?? .notSelected }
        if !config.providers.isEmpty && !config.providers.contains(where: account.isLinked(to:)) {
            return .filteredByProvider(reasons)
        }
        if protectedIds.contains(account.localId) { return .protected(reasons, why: "protected account id") }
        // The account's own address and those of its links: a staff member signed in with Facebook only is staff too.
        if !config.protectedEmailDomains.isEmpty, ([account.email] + account.providers.map(\.email)).contains(where: { $0.map(isProtected) == true }) {
            return .protected(reasons, why: "protected email domain")
        }
        return .selected(reasons)
    }

    /// Why a deletion request selects no account, in words for the reviewer of the list of those not acted on.
    func whyNotActedOn(_ request: DeletionRequest) -> String {
        if !config.deletionRequested { return "select.deletion_requested is off" }
        if request.requestedAt > asOf { return "made after the plan's time" }
        // Shown to the second, rounded up: rounded down, a request 1 ms too young read as acted on from the plan's own time.
        let from = request.requestedAt + asOf - requestsHonouredUntil
        return "within select.deletion_grace_days: acted on from \(Timestamp.formatRFC3339((from + 999).floorDiv(1000) * 1000))"
    }

    /// Whether the address is at a protected domain or at a subdomain of one (`corp.example` protects
    /// `x@eu.corp.example`): a protection errs on the side of keeping an account. The domain is compared as the
    /// normalize stage writes it, as the protected domains are, so that it matches whether or not that stage ran
    /// (a final dot, which that stage would refuse, is dropped).
    func isProtected(_ email: String) -> Bool {
        guard let at = email.lastIndex(of: "@") else { return false }
        var raw = TextScan.trimmingWhitespace(email[email.index(after: at)...])
        if raw.hasSuffix(".") { raw = raw.dropLast() }
        var repairs = RepairSet()
        let domain = (try? EmailNormalizer.normalizeDomain(raw, repairs: &repairs).get()) ?? raw.lowercased()
        return config.protectedEmailDomains.contains { domain == $0 || domain.hasSuffix("." + $0) }
    }

    /// What keeps `uid` from being an account id as written in a protection list, or nil: a quote, a comma, a space, or
    /// a character that does not show (a control or format character: a NUL, a zero-width space, a byte-order mark
    /// inside a file made of two). Any of these makes an id that matches no account, and the account it meant would
    /// be planned for deletion unprotected, without a word.
    public static func problem(inProtectedId uid: String) -> String? {
        for scalar in uid.unicodeScalars {
            if scalar == "\"" || scalar == "'" || scalar == "," { return "\(scalar) in the id" }
            if TextScan.isSpace(scalar) { return "a space in the id" }
            if scalar.isControlOrFormat { return "an invisible character (\(scalar.codePoint)) in the id" }
        }
        return nil
    }

    /// Which rules match an account with these facts (before the provider filter and the protections). An account is
    /// inactive by the later of its last sign-in and its creation (an import can leave a sign-in older than the
    /// account), and a time of 0 is no time: an account is never taken for inactive on a value that says nothing.
    /// With `retention_match: all`, the retention rules match only together.
    func reasons(deletionRequested: Bool, disabled: Bool, lastSignedInAt: Int64?, createdAt: Int64?) -> SelectionReasons {
        var retention: SelectionReasons = []
        if config.disabled && disabled { retention.insert(.disabled) }
        if let inactiveBefore {
            let last = max(lastSignedInAt ?? 0, createdAt ?? 0)
            if last > 0 && last < inactiveBefore { retention.insert(.inactive) }
        }
        if config.retentionMatch == .all && retention != [.disabled, .inactive] { retention = [] }
        if config.deletionRequested && deletionRequested { retention.insert(.deletionRequested) }
        return retention
    }
}
