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

    public init(config: SelectionConfig, asOf: Int64, extraProtectedIds: Set<String> = []) {
        self.config = config
        self.asOf = asOf
        self.protectedIds = Set(config.protectedIds).union(extraProtectedIds)
        self.inactiveBefore = config.inactiveForDays.map { asOf - Int64($0) * 86_400_000 }
    }

    public func select(_ account: Account, deletionRequest: DeletionRequest?) -> SelectionOutcome {
        let reasons = reasons(deletionRequested: deletionRequest != nil, disabled: account.disabled,
                              lastSignedInAt: account.lastSignedInAt, createdAt: account.createdAt)
        guard !reasons.isEmpty else { return .notSelected }
        if !config.providers.isEmpty && !config.providers.contains(where: account.isLinked(to:)) {
            return .filteredByProvider(reasons)
        }
        if protectedIds.contains(account.localId) { return .protected(reasons, why: "protected account id") }
        if !config.protectedEmailDomains.isEmpty, let email = account.email, isProtected(domainOf: email) {
            return .protected(reasons, why: "protected email domain")
        }
        return .selected(reasons)
    }

    /// Whether the address is at a protected domain or at a subdomain of one (`corp.example` protects
    /// `x@eu.corp.example`): a protection errs on the side of keeping an account. The domain is compared as the
    /// normalize stage writes it, as the protected domains are, so that it matches whether or not that stage ran.
    func isProtected(domainOf email: String) -> Bool {
        guard let at = email.lastIndex(of: "@") else { return false }
        let raw = TextScan.trimmingWhitespace(email[email.index(after: at)...])
        var repairs = RepairSet()
        let domain = (try? EmailNormalizer.normalizeDomain(raw, repairs: &repairs).get()) ?? raw.lowercased()
        return config.protectedEmailDomains.contains { domain == $0 || domain.hasSuffix("." + $0) }
    }

    /// Which rules match an account with these facts (before the provider filter and the protections).
    func reasons(deletionRequested: Bool, disabled: Bool, lastSignedInAt: Int64?, createdAt: Int64?) -> SelectionReasons {
        var reasons: SelectionReasons = []
        if config.deletionRequested && deletionRequested { reasons.insert(.deletionRequested) }
        if config.disabled && disabled { reasons.insert(.disabled) }
        if let inactiveBefore, let last = lastSignedInAt ?? createdAt, last < inactiveBefore { reasons.insert(.inactive) }
        return reasons
    }
}
