/// The sandbox's own JSON: a strict parser (RFC 8259; duplicate keys refused) and a writer.
/// Numbers keep their text, so int64 values and booleans are never confused.
enum SJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([SJSON])
    case object([(String, SJSON)])

    static func == (lhs: SJSON, rhs: SJSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    subscript(key: String) -> SJSON? {
        if case .object(let members) = self { return members.first { $0.0 == key }?.1 }
        return nil
    }

    var string: String? { if case .string(let value) = self { value } else { nil } }
    var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    var array: [SJSON]? { if case .array(let value) = self { value } else { nil } }
    var members: [(String, SJSON)]? { if case .object(let value) = self { value } else { nil } }
    var int: Int64? {
        switch self {
        case .number(let text): Int64(text)
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// Replaces or appends a member of an object.
    mutating func set(_ key: String, _ value: SJSON?) {
        guard case .object(var members) = self else { return }
        if let index = members.firstIndex(where: { $0.0 == key }) {
            if let value { members[index].1 = value } else { members.remove(at: index) }
        } else if let value {
            members.append((key, value))
        }
        self = .object(members)
    }

    // MARK: Writing

    var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let text): out += text
        case .string(let value): SJSON.quote(value, into: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                SJSON.quote(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    static func quote(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    // MARK: Parsing

    struct ParseError: Error, CustomStringConvertible {
        let offset: Int
        let message: String
        var description: String { "\(message) at byte \(offset)" }
    }

    static func parse(_ bytes: [UInt8]) throws(ParseError) -> SJSON {
        var parser = Parser(bytes: bytes)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw ParseError(offset: parser.index, message: "trailing characters") }
        return value
    }

    static func parse(_ text: String) throws(ParseError) -> SJSON { try parse(Array(text.utf8)) }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        func fail(_ message: String) -> ParseError { ParseError(offset: index, message: message) }

        mutating func value(depth: Int) throws(ParseError) -> SJSON {
            guard depth < 64 else { throw fail("nested too deeply") }
            guard index < bytes.count else { throw fail("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var members: [(String, SJSON)] = []
                var keys = Set<String>()
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                    let key = try string()
                    // A set, not a scan: a fixture object may hold tens of thousands of keys.
                    guard keys.insert(key).inserted else { throw fail("duplicate key \"\(key)\"") }
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    index += 1
                    skipSpace()
                    members.append((key, try value(depth: depth + 1)))
                    skipSpace()
                    guard index < bytes.count else { throw fail("unexpected end") }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    guard bytes[index] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                    index += 1
                    return .object(members)
                }
            case UInt8(ascii: "["):
                index += 1
                var items: [SJSON] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < bytes.count else { throw fail("unexpected end") }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    guard bytes[index] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
                    index += 1
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default:
                return .number(try number())
            }
        }

        mutating func literal(_ word: String) throws(ParseError) {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw fail("unexpected character")
            }
            index += expected.count
        }

        mutating func number() throws(ParseError) -> String {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digitsStart = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            guard index > digitsStart else { throw fail("unexpected character") }
            if bytes[digitsStart] == 0x30, index - digitsStart > 1 { throw fail("leading zero") }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                let fraction = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                guard index > fraction else { throw fail("bad number") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                let exponent = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                guard index > exponent else { throw fail("bad number") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                throw fail("bad \\u escape")
            }
            index += 4
            return value
        }

        mutating func string() throws(ParseError) -> String {
            index += 1
            var out: [UInt8] = []
            while true {
                guard index < bytes.count else { throw fail("unterminated string") }
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\"") { break }
                guard byte >= 0x20 else { throw fail("control character in a string") }
                guard byte == UInt8(ascii: "\\") else { out.append(byte); continue }
                guard index < bytes.count else { throw fail("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw fail("lone surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("lone surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let value = Unicode.Scalar(scalar) else { throw fail("lone surrogate") }
                    out.append(contentsOf: Array(String(value).utf8))
                default: throw fail("bad escape")
                }
            }
            guard let text = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
            return text
        }
    }
}
