import IdPipeCore

/// Reads a JSON text (RFC 8259) into a `JSONValue`, in one pass over its bytes. `JSONDecoder` through `Codable` tried
/// each kind in turn for every value (a bool, a number, a text, a list, then an object), each failure thrown: an
/// import's requests were read back at about 10 µs an account, most of apply's time.
/// Strict: nothing after the value but white space, no comment, no trailing comma, valid UTF-8, escapes as JSON has them.
/// As Foundation's reader did: a number is `.int` when it is a whole number within Int64 (`1e2` too), else `.double`;
/// of a key given twice, the first is kept. Nesting deeper than `maxDepth` is refused (no stack is spent on a hostile
/// answer).
struct JSONValueParser {
    static let maxDepth = 512

    private let bytes: [UInt8]
    private var index = 0

    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        var parser = JSONValueParser(bytes: bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipSpace()
        return parser.index == bytes.count ? value : nil
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    private mutating func value(depth: Int) -> JSONValue? {
        guard depth < Self.maxDepth else { return nil }
        skipSpace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return object(depth: depth)
        case UInt8(ascii: "["): return array(depth: depth)
        case UInt8(ascii: "\""): return string().map(JSONValue.string)
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return number()
        }
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { return nil }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return nil }
        index += count
        return value
    }

    private mutating func object(depth: Int) -> JSONValue? {
        index += 1
        var members: [String: JSONValue] = [:]
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            guard let member = value(depth: depth + 1) else { return nil }
            if members[key] == nil { members[key] = member }
            guard let more = another(closing: UInt8(ascii: "}")) else { return nil }
            if !more { return .object(members) }
        }
    }

    private mutating func array(depth: Int) -> JSONValue? {
        index += 1
        var elements: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            guard let element = value(depth: depth + 1) else { return nil }
            elements.append(element)
            guard let more = another(closing: UInt8(ascii: "]")) else { return nil }
            if !more { return .array(elements) }
        }
    }

    /// After a member or an element: true past a `,` (another follows), false past `close`, nil at anything else.
    private mutating func another(closing close: UInt8) -> Bool? {
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ",") || bytes[index] == close else { return nil }
        index += 1
        return bytes[index - 1] == UInt8(ascii: ",")
    }

    /// A string from its opening quote; the text, or nil when it is not one JSON allows.
    private mutating func string() -> String? {
        index += 1
        let start = index
        // Most texts have no escape: taken as they are.
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 { index += 1 }
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "\"") {
            defer { index += 1 }
            return String(validating: bytes[start..<index], as: UTF8.self)
        }
        var text = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(validating: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                if let byte = JSONText.unescaped(escape) {
                    text.append(byte)
                    continue
                }
                switch escape {
                case UInt8(ascii: "u"):
                    guard var code = hex4() else { return nil }
                    // A surrogate pair is one scalar; a lone surrogate is no text.
                    if (0xD800...0xDBFF).contains(code) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { return nil }
                        index += 2
                        guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { return nil }
                    text.append(contentsOf: String(Character(scalar)).utf8)
                default:
                    return nil
                }
            case 0..<0x20:
                return nil
            default:
                text.append(byte)
                index += 1
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() -> JSONValue? {
        let start = index
        func digits() -> Int {
            let first = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - first
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let leading = index
        guard digits() > 0 else { return nil }
        // No leading zero before other digits.
        if bytes[leading] == UInt8(ascii: "0") && index - leading > 1 { return nil }
        var integral = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            integral = false
            guard digits() > 0 else { return nil }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            integral = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let value = Int64(text) { return .int(value) }
        guard let value = Double(text) else { return nil }
        if !integral, value.rounded() == value, let whole = Int64(exactly: value) { return .int(whole) }
        return .double(value)
    }
}
