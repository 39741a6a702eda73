/// A change normalization made to a value it could repair. Counted per kind in the report.
public enum Repair: Int, CaseIterable, Sendable, Codable {
    case emailTrimmed
    case emailDomainLowercased
    case emailDomainIDNA
    case phoneReformatted
    case nameWhitespace
    case nameControlCharacters
    case timestampInSeconds
    case providerIdCase

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
        }
    }
}

/// The set of repairs made to one account.
public struct RepairSet: Sendable, Equatable {
    public private(set) var bits: UInt32 = 0

    public init() {}

    public mutating func insert(_ repair: Repair) { bits |= 1 << UInt32(repair.rawValue) }
    public func contains(_ repair: Repair) -> Bool { bits & (1 << UInt32(repair.rawValue)) != 0 }
    public var isEmpty: Bool { bits == 0 }
    public var all: [Repair] { Repair.allCases.filter(contains) }
}
