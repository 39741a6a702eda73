import Foundation
import IdPipeCore

/// A JSON document as the clients build and read request and response bodies. Encoding sorts object keys,
/// so a body is byte-for-byte the same every time it is built.
public enum JSONValue: Sendable, Equatable, Codable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var int: Int64? {
        switch self {
        case .int(let value): value
        case .string(let text): Int64(text)
        default: nil
        }
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The value as compact JSON text, keys in the order of their UTF-8 bytes, `/` not escaped: what Foundation's
    /// `JSONEncoder` wrote with `[.sortedKeys, .withoutEscapingSlashes]`, written in one pass (through `Codable`, it took
    /// half the CPU of an import, whose requests carry 1000 accounts). A number that is not finite, which JSON cannot
    /// hold, makes the whole text `null`, as Foundation's refusal did.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        guard append(to: &out) else { return Array("null".utf8) }
        return out
    }

    /// Appends the value's JSON text; false for a number that is not finite.
    private func append(to out: inout [UInt8]) -> Bool {
        switch self {
        case .null: out.put("null")
        case .bool(let value): out.put(value ? "true" : "false")
        case .int(let value): out.put(String(value))
        case .double(let value):
            guard value.isFinite else { return false }
            // Swift's shortest form that reads back the same (`1e+20`, `0.1`), as Foundation writes it: without `.0`.
            let text = value.description
            out.put(text.hasSuffix(".0") ? String(text.dropLast(2)) : text)
        case .string(let value): JSONText.append(value, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard element.append(to: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.append(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                guard member.value.append(to: &out) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        }
        return true
    }

    /// The JSON text `bytes` as a value; nil when it is not one (`JSONValueParser`).
    public static func decode(_ bytes: [UInt8]) -> JSONValue? {
        JSONValueParser.parse(bytes)
    }
}
