/// A change normalization made to a value it could repair. Counted per kind in the report; in a migration, whose import
/// file carries the repaired values, each repaired account is listed with its repairs too.
public enum Repair: Int, CaseIterable, Sendable, Codable {
    case emailTrimmed
    case emailDomainLowercased
    case emailDomainIDNA
    case phoneReformatted
    case nameWhitespace
    case nameControlCharacters
    case timestampInSeconds
    case providerIdCase
    case phoneCountryCodeAdded

    public var label: String {
        switch self {
        case .emailTrimmed: "email: surrounding whitespace removed"
        case .emailDomainLowercased: "email: domain lower-cased"
        case .emailDomainIDNA: "email: internationalised domain converted to IDNA (xn--)"
        case .phoneReformatted: "phone: rewritten in E.164"
        case .nameWhitespace: "display name: whitespace collapsed or trimmed"
        case .nameControlCharacters: "display name: control characters removed"
        case .timestampInSeconds: "timestamp: seconds converted to milliseconds"
        case .providerIdCase: "provider id: lower-cased or trimmed"
        case .phoneCountryCodeAdded: "phone: country code added (source.phone_country_code)"
        }
    }

    /// The name plan.json gives it (the case's name, as in the tally's `repairs.` keys).
    public var key: String {
        switch self {
        case .emailTrimmed: "emailTrimmed"
        case .emailDomainLowercased: "emailDomainLowercased"
        case .emailDomainIDNA: "emailDomainIDNA"
        case .phoneReformatted: "phoneReformatted"
        case .nameWhitespace: "nameWhitespace"
        case .nameControlCharacters: "nameControlCharacters"
        case .timestampInSeconds: "timestampInSeconds"
        case .providerIdCase: "providerIdCase"
        case .phoneCountryCodeAdded: "phoneCountryCodeAdded"
        }
    }
}

/// The set of repairs made to one account.
public struct RepairSet: Sendable, Equatable {
    public private(set) var bits: UInt32 = 0

    public init() {}

    /// The set whose `bits` these are (as the state store keeps them); bits of no repair are dropped.
    public init(bits: UInt32) {
        self.bits = bits & (1 << UInt32(Repair.allCases.count) - 1)
    }

    public mutating func insert(_ repair: Repair) { bits |= 1 << UInt32(repair.rawValue) }
    public func contains(_ repair: Repair) -> Bool { bits & (1 << UInt32(repair.rawValue)) != 0 }
    public var isEmpty: Bool { bits == 0 }
    public var all: [Repair] { Repair.allCases.filter(contains) }
}
