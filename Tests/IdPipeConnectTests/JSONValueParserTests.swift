import Foundation
import IdPipeTestSupport
import Testing
@testable import IdPipeConnect

/// The connectors' JSON reader (`JSONValue.decode`) and writer (`encoded()`) against Foundation's `JSONDecoder` and
/// `JSONEncoder` through `JSONValue`'s `Codable` conformance, which they replaced: the same values for the same texts,
/// nil for what JSON does not allow, and the same text for the same value.
@Suite struct JSONValueParserTests {
    static func foundation(_ text: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text))
    }

    /// Whole files of the repository: an export, the data a sandbox serves, stored tokens' lines.
    @Test(arguments: ["Samples/accounts.json", "Samples/data.json"])
    func filesReadAsFoundationReadsThem(path: String) throws {
        let bytes = Array(try Data(contentsOf: repositoryRoot.appendingPathComponent(path)))
        let value = try #require(JSONValue.decode(bytes))
        #expect(value == Self.foundation(bytes))
        #expect((value["users"]?.array?.count ?? 1) > 0)
    }

    @Test func linesOfStoredTokensReadAsFoundationReadsThem() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("Samples/stored-tokens.jsonl"), encoding: .utf8)
        for line in text.split(separator: "\n") {
            #expect(JSONValue.decode(Array(line.utf8)) == Self.foundation(Array(line.utf8)), "\(line)")
        }
    }

    @Test(arguments: [
        (#"{"a": [1, -2, 3.5, 1e2, -0.25E-1, true, false, null, "x"], "b": {}, "c": []}"#,
         JSONValue.object(["a": [1, -2, .double(3.5), 100, .double(-0.025), true, false, .null, "x"], "b": .object([:]), "c": []])),
        (#""\u00e9\ud83d\ude00\/\\\"\b\f\n\r\t""#, .string("é😀/\\\"\u{8}\u{C}\n\r\t")),
        ("9223372036854775807", .int(Int64.max)),
        ("9223372036854775808", .double(9223372036854775808)),
        (" \n\t{\"k\": 1, \"k\": 2}\r\n ", .object(["k": 1])),
        ("[2.0, 1e20, -0.5e1]", [2, .double(1e20), -5]),
        ("\"é 中\"", .string("é 中")),
    ] as [(String, JSONValue)])
    func readsValues(text: String, expected: JSONValue) {
        #expect(JSONValue.decode(Array(text.utf8)) == expected, "\(text)")
        #expect(Self.foundation(Array(text.utf8)) == expected, "Foundation reads \(text) so too")
    }

    @Test(arguments: ["", " ", "{", "[1,]", "{\"a\": 1,}", "{'a': 1}", "01", "-", "1.", ".5", "1e", "tru", "nul", "NaN", "{} x",
                      "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"\\x\"", "\"a\u{1}b\"", "\"open", "[1 2]", "{\"a\" 1}", "// c\n1", "+1"])
    func refusesWhatJSONDoesNotAllow(text: String) {
        #expect(JSONValue.decode(Array(text.utf8)) == nil, "\(text)")
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(JSONValue.decode([0x22, 0xC3, 0x28, 0x22]) == nil)
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(JSONValue.decode(Array(deep.utf8)) == nil)
        let nested = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(JSONValue.decode(Array(nested.utf8)) != nil)
    }

    /// Foundation's `JSONEncoder`, through `JSONValue`'s `Codable` conformance, as `encoded()` used it.
    static func foundationText(_ value: JSONValue) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { Array($0) } ?? Array("null".utf8)
    }

    /// `encoded()` writes what Foundation's encoder wrote, byte for byte: whole files of accounts, numbers of every
    /// shape, keys ordered by their bytes, every control character; and `null` for a number JSON cannot hold.
    @Test func encodesAsFoundationDid() throws {
        for path in ["Samples/accounts.json", "Samples/data.json"] {
            let value = try #require(JSONValue.decode(Array(try Data(contentsOf: repositoryRoot.appendingPathComponent(path)))))
            #expect(value.encoded() == Self.foundationText(value), "\(path)")
        }
        let controls = String(String.UnicodeScalarView((0..<0x20).filter { $0 != 0x08 && $0 != 0x0C }.map { Unicode.Scalar(UInt8($0)) }))
        let values: [JSONValue] = [
            ["b": 1, "a": 2, "B": 3, "é": 4, "aa": 5, "a\u{0}": 6, "": .null],
            .string(controls + " \"\\/ é😀\u{7F}\u{2028}"),
            .array([1.0, 0.1, 1e20, 1e21, 1e-7, 123456789.123, -0.0, 5e-324, 1.7976931348623157e308, 1e16, 1.5e300, -2.5].map { .double($0) }),
            .array([.int(Int64.min), .int(Int64.max), 0, -1, true, false, .null, [:], []]),
            ["users": [["localId": "u", "providerUserInfo": [["providerId": "apple.com", "rawId": "001.x"]]]]],
            [.double(.nan)], ["a": [.double(.infinity)]],
        ]
        for value in values {
            #expect(value.encoded() == Self.foundationText(value), "\(String(decoding: value.encoded(), as: UTF8.self))")
        }
        // Backspace and form feed are written `\u0008` and `\u000c` (Foundation wrote `\b`, `\f`): the same string.
        let escaped: JSONValue = .string("a\u{8}b\u{C}c")
        #expect(String(decoding: escaped.encoded(), as: UTF8.self) == #""a\u0008b\u000cc""#)
        #expect(JSONValue.decode(escaped.encoded()) == escaped)
    }

    /// What the clients encode reads back as it was.
    @Test func encodedValuesReadBack() {
        let value: JSONValue = ["users": [["localId": "u1", "displayName": "Zoë \"Z\" 😀\n", "createdAt": "1700000000000", "n": 7]], "ok": true]
        #expect(JSONValue.decode(value.encoded()) == value)
    }
}
