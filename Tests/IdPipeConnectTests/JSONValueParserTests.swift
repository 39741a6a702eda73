import Foundation
import IdPipeTestSupport
import Testing
@testable import IdPipeConnect

/// The connectors' JSON reader (`JSONValue.decode`) against Foundation's `JSONDecoder` through `JSONValue`'s `Codable`
/// conformance, the reader it replaced: the same values for the same texts, and nil for what JSON does not allow.
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

    /// What the clients encode reads back as it was.
    @Test func encodedValuesReadBack() {
        let value: JSONValue = ["users": [["localId": "u1", "displayName": "Zoë \"Z\" 😀\n", "createdAt": "1700000000000", "n": 7]], "ok": true]
        #expect(JSONValue.decode(value.encoded()) == value)
    }
}
