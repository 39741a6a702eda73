import Foundation

/// Emails: surrounding whitespace removed, the domain lower-cased and converted to IDNA; the rest validated.
public enum EmailNormalizer {
    public static let maxLocalPartBytes = 64
    public static let maxDomainBytes = 253

    /// Returns the normalized address, or a reason it cannot be repaired.
    public static func normalize(_ raw: String, repairs: inout RepairSet) -> Result<String, RecordIssueReason> {
        if raw.withUTF8Bytes(isAlreadyNormal) { return .success(raw) }
        return normalizeFully(raw, repairs: &repairs)
    }

    static func normalizeFully(_ raw: String, repairs: inout RepairSet) -> Result<String, RecordIssueReason> {
        var text = Substring(raw)
        let trimmed = TextScan.trimmingWhitespace(text)
        if trimmed.utf8.count != text.utf8.count {
            repairs.insert(.emailTrimmed)
            text = trimmed
        }
        guard !text.isEmpty else { return .failure("is empty") }
        let utf8 = text.utf8
        var atCount = 0
        var atIndex = utf8.startIndex
        for index in utf8.indices where utf8[index] == UInt8(ascii: "@") {
            atCount += 1
            atIndex = index
        }
        guard atCount == 1 else { return .failure(atCount == 0 ? "has no @" : "has more than one @") }
        let local = utf8[utf8.startIndex..<atIndex]
        let domain = utf8[utf8.index(after: atIndex)...]
        if let problem = checkLocalPart(local) { return .failure(problem) }
        guard !domain.isEmpty else { return .failure("has no domain") }

        switch normalizeDomain(Substring(domain), repairs: &repairs) {
        case .success(let domainText):
            // Most addresses are already normal: keep the original string rather than build a new one.
            if text.utf8.count == raw.utf8.count && domainText.utf8.elementsEqual(domain) { return .success(raw) }
            return .success(String(Substring(local)) + "@" + domainText)
        case .failure(let reason): return .failure(reason)
        }
    }

    /// The common case in one pass over the bytes: a lower-case ASCII address that passes every check below
    /// unchanged. False sends the address down the full path (which repairs it or names what is wrong).
    static func isAlreadyNormal(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let at = bytes.firstIndex(of: UInt8(ascii: "@")), at > 0, at <= maxLocalPartBytes,
              bytes.count - at - 1 <= maxDomainBytes else { return false }
        var previous: UInt8 = UInt8(ascii: ".")
        for index in 0..<at {
            let byte = bytes[index]
            guard byte > 0x20, byte < 0x7F, !isForbiddenInLocalPart(byte), !(byte == UInt8(ascii: ".") && previous == byte) else { return false }
            previous = byte
        }
        guard previous != UInt8(ascii: ".") else { return false }
        var labels = 0, labelLength = 0
        var labelAllDigits = true
        previous = UInt8(ascii: ".")
        for index in (at + 1)..<bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ".") {
                guard labelLength > 0, previous != UInt8(ascii: "-") else { return false }
                labels += 1
                labelLength = 0
                labelAllDigits = true
            } else {
                let digit = byte >= 48 && byte <= 57
                guard (byte >= 97 && byte <= 122) || digit || (byte == UInt8(ascii: "-") && labelLength > 0) else { return false }
                labelLength += 1
                labelAllDigits = labelAllDigits && digit
                guard labelLength <= 63 else { return false }
            }
            previous = byte
        }
        return labels >= 1 && labelLength > 0 && previous != UInt8(ascii: "-") && !labelAllDigits
    }

    private static func checkLocalPart(_ local: Substring.UTF8View) -> RecordIssueReason? {
        if local.isEmpty { return "has an empty local part" }
        if local.count > maxLocalPartBytes { return "local part is longer than 64 bytes" }
        if local.first == UInt8(ascii: ".") || local.last == UInt8(ascii: ".") { return "local part starts or ends with a dot" }
        var previous: UInt8 = 0
        for byte in local {
            if byte == UInt8(ascii: ".") && previous == byte { return "local part has two dots in a row" }
            if byte <= 0x20 || byte == 0x7F { return "contains whitespace or a control character" }
            if isForbiddenInLocalPart(byte) { return "local part contains '\(Character(Unicode.Scalar(byte)))'" }
            previous = byte
        }
        if local.contains(where: { $0 >= 0x80 }), let hidden = Substring(local).unicodeScalars.first(where: isHiddenInLocalPart) {
            return "local part contains white space or an invisible character (\(hidden.codePoint))"
        }
        return nil
    }

    /// Beyond ASCII (whose spaces and controls are refused above): white space (a no-break or ideographic space),
    /// controls (NEL), format characters (a bidi override, a soft hyphen) and the rest of what is not shown. An address
    /// holding one is no address a mail system delivers to, and it reads as another.
    private static func isHiddenInLocalPart(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        return properties.isWhitespace || properties.isDefaultIgnorableCodePoint
            || scalar.isControlOrFormat || [.lineSeparator, .paragraphSeparator, .spaceSeparator].contains(properties.generalCategory)
    }

    private static func isForbiddenInLocalPart(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "["), UInt8(ascii: "]"),
             UInt8(ascii: "\\"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: ":"), UInt8(ascii: "\""):
            true
        default:
            false
        }
    }

    /// Lower-cases a domain and converts Unicode labels to their `xn--` form; checks label syntax.
    public static func normalizeDomain(_ domain: Substring, repairs: inout RepairSet) -> Result<String, RecordIssueReason> {
        var isASCII = true
        var hasUpper = false
        for byte in domain.utf8 {
            if byte >= 0x80 { isASCII = false } else if byte >= 65 && byte <= 90 { hasUpper = true }
        }
        var result: String
        if isASCII {
            result = hasUpper ? domain.lowercased() : String(domain)
            if hasUpper { repairs.insert(.emailDomainLowercased) }
        } else {
            var labels: [String] = []
            guard let mapped = mapped(domain) else { return .failure("domain contains a zero-width joiner or non-joiner") }
            for label in mapped.split(separator: ".", omittingEmptySubsequences: false) {
                if label.utf8.allSatisfy({ $0 < 0x80 }) {
                    labels.append(String(label))
                } else {
                    guard let encoded = Punycode.encode(String(label)) else { return .failure("domain label '\(label)' cannot be converted to IDNA") }
                    labels.append("xn--" + encoded)
                }
            }
            result = labels.joined(separator: ".")
            repairs.insert(.emailDomainIDNA)
        }
        if let problem = checkDomainSyntax(result) { return .failure(problem) }
        return .success(result)
    }

    /// A Unicode domain as IDNA reads it before encoding (UTS #46, as browsers and mail systems map it): characters
    /// UTS #46 ignores dropped (a soft hyphen, a zero-width space, a byte order mark), compatibility forms folded
    /// (fullwidth `ｃｏｒｐ` is `corp`), composed (a `u` with a combining diaeresis is `ü`, Hangul written as jamo is
    /// the syllable), lower case, and the ideographic full stops taken for dots. Without it, one domain written two
    /// ways got two `xn--` forms: an invisible character made `corp.example` another domain, and the account escaped
    /// its protection. Nil when the domain holds a zero-width joiner or non-joiner, which UTS #46 keeps (a script's
    /// spelling needs them) and no rule here can tell from a disguise.
    static func mapped(_ domain: Substring) -> String? {
        // The ideographic and halfwidth ideographic full stops, which NFKC leaves as they are.
        func isFullStop(_ scalar: Unicode.Scalar) -> Bool { scalar == "\u{3002}" || scalar == "\u{FF61}" }
        var scalars = String.UnicodeScalarView()
        for scalar in domain.unicodeScalars {
            if scalar == "\u{200C}" || scalar == "\u{200D}" { return nil }
            if scalar.properties.isDefaultIgnorableCodePoint { continue }
            scalars.append(isFullStop(scalar) ? "." : scalar)
        }
        return String(scalars).lowercased().precomposedStringWithCompatibilityMapping.lowercased()
    }

    private static func checkDomainSyntax(_ domain: String) -> RecordIssueReason? {
        if domain.utf8.count > maxDomainBytes { return "domain is longer than 253 bytes" }
        let labels = domain.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if labels.count < 2 { return "domain '\(domain)' has no dot" }
        for label in labels {
            if label.isEmpty { return "domain '\(domain)' has an empty label" }
            if label.count > 63 { return "domain label is longer than 63 bytes" }
            if label.first == UInt8(ascii: "-") || label.last == UInt8(ascii: "-") { return "domain label starts or ends with '-'" }
            for byte in label {
                let ok = (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57) || byte == UInt8(ascii: "-")
                if !ok { return "domain '\(domain)' contains '\(Character(Unicode.Scalar(byte)))'" }
            }
        }
        if let tld = labels.last, tld.allSatisfy({ $0 >= 48 && $0 <= 57 }) { return "domain '\(domain)' ends in a numeric label" }
        return nil
    }
}

/// The reason a value was rejected, as text for the quarantine. A string literal is enough to make one.
public struct RecordIssueReason: Error, Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public let text: String
    public init(stringLiteral value: String) { text = value }
    public init(stringInterpolation: DefaultStringInterpolation) { text = String(stringInterpolation: stringInterpolation) }
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}
