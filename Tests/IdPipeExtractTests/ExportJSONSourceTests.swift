import Testing
import IdPipeCore
import IdPipeCSV
@testable import IdPipeExtract
import IdPipeTestSupport

/// A user object exactly as `firebase auth:export` writes it (JSON.stringify(user, null, 2)).
func exportUser(_ uid: String, email: String = "a@example.com", extra: String = "") -> String {
    "{\n  \"localId\": \"\(uid)\",\n  \"email\": \"\(email)\",\n  \"emailVerified\": true,\(extra)\n  \"providerUserInfo\": [\n    {\n      \"providerId\": \"apple.com\",\n      \"rawId\": \"001.\(uid)\"\n    }\n  ]\n}"
}

func readRecords(_ text: String, batchBytes: Int = 4 << 20, parts: Int = 2) throws -> [DecodedRecord] {
    try readRecords(Array(text.utf8), batchBytes: batchBytes, parts: parts)
}

func readRecords(_ bytes: [UInt8], batchBytes: Int = 4 << 20, parts: Int = 2) throws -> [DecodedRecord] {
    let path = TemporaryFile.write(bytes, name: "export.json")
    let source = try ExportJSONSource(path: path, batchBytes: batchBytes)
    var records: [DecodedRecord] = []
    while let batch = try source.nextBatch(records: 100, parts: parts) {
        for part in 0..<batch.partCount { records += batch.decode(part: part) }
    }
    return records
}

func summary(_ records: [DecodedRecord]) -> [String] {
    records.map { record in
        switch record {
        case .account(let account, let position), .normalized(let account, let position): "\(position.line):\(account.localId)"
        case .malformed(let entry): "\(entry.position.line):quarantine:\(entry.field)"
        case .fatal(let error): "fatal:\(error)"
        }
    }
}

@Suite struct ExportJSONSourceTests {
    let users = (1...5).map { exportUser("u\($0)") }

    @Test(arguments: [64, 200, 4 << 20])
    func readsEveryUserWithItsLineWhateverTheChunkSize(batchBytes: Int) throws {
        let text = "{\"users\": [\n" + users.joined(separator: ",\n") + "]}"
        let records = try readRecords(text, batchBytes: batchBytes)
        // Each fixture user spans 11 lines; the first starts on line 2.
        #expect(summary(records) == ["2:u1", "13:u2", "24:u3", "35:u4", "46:u5"])
    }

    @Test func decodesEscapesAndProviders() throws {
        let text = "{\"users\": [\n" + exportUser("u1", extra: "\n  \"displayName\": \"\\u5c71\\u7530 \\\"T\\\" \\ud83d\\ude00\",\n  \"createdAt\": \"1608693364100\",\n  \"disabled\": true,") + "]}"
        guard case .account(let account, _)? = try readRecords(text).first else { Issue.record("expected an account"); return }
        #expect(account.displayName == "山田 \"T\" 😀")
        #expect(account.createdAt == 1_608_693_364_100)
        #expect(account.disabled)
        #expect(account.providers == [ProviderLink(providerId: "apple.com", rawId: "001.u1")])
    }

    /// A provider's email, name and photo are taken from the account's when their bytes are the same, and decoded
    /// on their own otherwise: an escape, a different case or length, a value the account does not have.
    @Test(arguments: [
        ("a@example.com", "a@example.com"), ("a\\u0040example.com", "a@example.com"), ("A@example.com", "A@example.com"),
        ("a@example.co", "a@example.co"), ("a@example.comm", "a@example.comm"), ("", ""),
    ])
    func providerFieldsRepeatingTheAccountsAreDecodedRight(raw: String, decoded: String) throws {
        let provider = "\n    {\n      \"providerId\": \"google.com\",\n      \"rawId\": \"g1\",\n      \"email\": \"\(raw)\","
            + "\n      \"displayName\": \"Zoë Ångström-Lindqvist\",\n      \"photoUrl\": \"https://p.example/\(raw)\"\n    }"
        let user = "{\n  \"localId\": \"u1\",\n  \"email\": \"a@example.com\",\n  \"displayName\": \"Zoë Ångström-Lindqvist\","
            + "\n  \"photoUrl\": \"https://p.example/a@example.com\",\n  \"providerUserInfo\": [\(provider)\n  ]\n}"
        guard case .account(let account, _)? = try readRecords("{\"users\": [\n" + user + "]}").first else {
            Issue.record("expected an account")
            return
        }
        let link = try #require(account.providers.first)
        #expect(link.email == decoded)
        #expect(link.displayName == "Zoë Ångström-Lindqvist")
        #expect(link.photoUrl == "https://p.example/" + decoded)
        #expect(account.email == "a@example.com")
    }

    /// Timestamps come as quoted digits (read without a String), as numbers, or as anything else (the general path).
    @Test(arguments: [
        ("\"1608693364100\"", "1608693364100"), ("1608693364100", "1608693364100"), ("\"0012\"", "12"), ("\"-5\"", "-5"),
        ("\"\"", "nil"), ("null", "nil"), ("\"123456789012345678\"", "123456789012345678"),
        ("\"1234567890123456789\"", "1234567890123456789"), ("\"12x\"", "quarantine: '12x' is not a timestamp in epoch milliseconds"),
        ("\"99999999999999999999\"", "quarantine: '99999999999999999999' is not a timestamp in epoch milliseconds"),
        ("\"\\u0031\"", "1"),
    ])
    func readsTimestampsInEveryForm(json: String, expected: String) throws {
        let text = "{\"users\": [\n" + exportUser("u1", extra: "\n  \"createdAt\": \(json),") + "]}"
        let found: String
        switch try readRecords(text).first {
        case .account(let account, _)?: found = account.createdAt.map(String.init) ?? "nil"
        case .malformed(let entry)?: found = "quarantine: \(entry.reason)"
        default: found = "nothing"
        }
        #expect(found == expected)
    }

    @Test func truncatedFileQuarantinesTheLastAccountOnly() throws {
        let text = "{\"users\": [\n" + users.prefix(3).joined(separator: ",\n") + ",\n" + String(exportUser("u4").prefix(40))
        let records = summary(try readRecords(text))
        // The account cut short, and the file's own row (where it ends), which makes the report say the input ends early.
        #expect(records == ["2:u1", "13:u2", "24:u3", "35:quarantine:email", "37:quarantine:file"], "\(records)")
    }

    @Test func fileWithoutClosingBracketIsReported() throws {
        let text = "{\"users\": [\n" + users.prefix(2).joined(separator: ",\n")
        let records = summary(try readRecords(text))
        #expect(records == ["2:u1", "13:u2", "23:quarantine:file"], "\(records)")
        // Cut after the array: quarantined the same way (it stopped the plan with exit 2, as if the JSON were broken).
        let cut = summary(try readRecords(text + "]\n"))
        #expect(cut == ["2:u1", "13:u2", "24:quarantine:file"], "\(cut)")  // where the file ends
        #expect(summary(try readRecords(text + "]}")) == ["2:u1", "13:u2"])
        let junk = summary(try readRecords(text + "] x"))
        #expect(junk.count == 3 && junk[2].hasPrefix("fatal:") && junk[2].contains("expected } after the users array"), "\(junk)")
    }

    @Test func unbalancedQuoteCostsOneAccount() throws {
        let broken = exportUser("u2", email: "bad@example.com,\n  \"oops\": \"x")
        let text = "{\"users\": [\n" + [users[0], broken, users[2]].joined(separator: ",\n") + "]}"
        let records = summary(try readRecords(text))
        #expect(records == ["2:u1", "13:quarantine:email", "25:u3"], "\(records)")
    }

    @Test func invalidUTF8AndBadTimestampAreQuarantinedWithTheirField() throws {
        let head = "{\"users\": [\n{\n  \"localId\": \"u1\",\n  \"displayName\": \"X"
        let tail = "\"\n},\n" + exportUser("u2", extra: "\n  \"createdAt\": \"yesterday\",") + ",\n" + exportUser("u3") + "]}"
        let bytes = Array(head.utf8) + [0xFF] + Array(tail.utf8)
        let records = summary(try readRecords(bytes, parts: 1))
        #expect(records == ["2:quarantine:displayName", "6:quarantine:createdAt", "18:u3"], "\(records)")
    }

    /// A key with a broken byte would have been skipped as unknown, its value lost ("dis\xFFabled": true read as not
    /// disabled): the account is quarantined instead, in an account and in a provider.
    @Test func invalidUTF8InAKeyQuarantinesTheAccount() throws {
        let head = "{\"users\": [\n" + exportUser("u1") + ",\n{\n  \"localId\": \"u2\",\n  \"dis"
        let tail = "abled\": true\n},\n" + exportUser("u3") + "]}"
        let records = try readRecords(Array(head.utf8) + [0xFF] + Array(tail.utf8), parts: 1)
        #expect(summary(records) == ["2:u1", "13:quarantine:record", "17:u3"], "\(summary(records))")
        guard case .malformed(let entry) = records[1] else { return }
        #expect(entry.reason.hasPrefix("a key of 9 bytes is not valid UTF-8"), "\(entry.reason)")
        #expect(entry.localId == "u2")
        let provider = "{\"users\": [\n{\n  \"localId\": \"u4\",\n  \"providerUserInfo\": [{\"providerId\": \"apple.com\", \"raw"
        let text = Array(provider.utf8) + [0xC3] + Array("Id\": \"x\"}]\n}]}".utf8)
        #expect(summary(try readRecords(text, parts: 1)).first == "2:quarantine:providerUserInfo[0]")
    }

    /// A stray comma, or a missing one, between two accounts costs no account: the fault is quarantined on its own (no
    /// id: it is no account's), and both accounts are read. Each cost the account after it.
    @Test(arguments: [(",,\n", "expected a user object, found ','"), ("\n", "expected ',' between user objects")])
    func aFaultBetweenAccountsCostsNoAccount(separator: String, message: String) throws {
        let text = "{\"users\": [\n" + users[0] + ",\n" + users[1] + separator + users[2] + ",\n" + users[3] + "]}"
        let records = try readRecords(text, parts: 1)
        #expect(summary(records).filter { !$0.contains("quarantine") } == ["2:u1", "13:u2", "24:u3", "35:u4"], "\(summary(records))")
        let entries = records.compactMap { record -> QuarantineEntry? in
            if case .malformed(let entry) = record { return entry }
            return nil
        }
        #expect(entries.count == 1 && entries[0].localId == nil && entries[0].reason.hasPrefix(message), "\(entries)")
        // Named as the separator's fault, which the plan does not count as an account read.
        #expect(entries.first?.field == "separator", "\(entries)")
    }

    /// An element of the users list that is no object (a number, null, a string, a list) is quarantined alone, on its
    /// line; so is text that is no value, and an account that lost its closing `}`. The account after each was lost
    /// with it, its id on the entry of a fault that was not its own.
    @Test(arguments: [
        ("42", "expected a user object, found a number"), ("null", "expected a user object, found null"),
        ("\"text\"", "expected a user object, found a string"), ("[1, {\"localId\": \"x\"}]", "expected a user object, found a list"),
        ("oops", "expected a user object, found 'o'"), ("42,\n43", "expected a user object, found a number"),
    ])
    func anElementThatIsNoAccountCostsNoOther(element: String, message: String) throws {
        let text = "{\"users\": [\n" + users[0] + ",\n" + element + ",\n" + users[1] + ",\n" + users[2] + "]}"
        let records = try readRecords(text, parts: 1)
        let lines = element.split(separator: "\n").count
        let expected = ["2:u1"] + (0..<lines).map { "\(13 + $0):quarantine:record" } + ["\(13 + lines):u2", "\(24 + lines):u3"]
        #expect(summary(records) == expected, "\(summary(records))")
        guard case .malformed(let entry) = records[1] else { return }
        #expect(entry.localId == nil && entry.reason == "\(message) (line 13)", "\(entry)")

        // An account whose closing } is missing: quarantined with its own id, the next one read.
        let unclosed = users[1].dropLast()
        let broken = "{\"users\": [\n" + users[0] + ",\n" + unclosed + ",\n" + users[2] + ",\n" + users[3] + "]}"
        let read = try readRecords(broken, parts: 1)
        #expect(summary(read) == ["2:u1", "13:quarantine:record", "24:u3", "35:u4"], "\(summary(read))")
        guard case .malformed(let unclosedEntry) = read[1] else { return }
        #expect(unclosedEntry.localId == "u2", "\(unclosedEntry)")
    }

    /// Faults that leave a list, a value or an account open read the accounts after them as their own: reading goes
    /// on from the broken account's start, at the first brace that starts a line after it. The plan stopped ("cannot
    /// find where the next account starts", a list left open), an account was read as a skipped key's value without
    /// a word, and an account without its `{` made two entries without its id.
    @Test(arguments: [1, 2])
    func aBrokenAccountCostsOnlyItself(parts: Int) throws {
        let lines = users[1].split(separator: "\n").map(String.init)
        func read(_ broken: String, separator: String = ",\n") throws -> [String] {
            let text = "{\"users\": [\n" + users[0] + ",\n" + broken + separator + users[2] + ",\n" + users[3] + ",\n" + users[4] + "]}"
            return summary(try readRecords(text, parts: parts))
        }
        func expectOnly(_ summary: [String], lost: String = "u2", _ label: String) {
            #expect(summary.filter { $0.contains(":u") }.map { String($0.split(separator: ":").last!) } == ["u1", "u3", "u4", "u5"], "\(label): \(summary)")
            #expect(summary.filter { $0.contains("quarantine") }.count == 1, "\(label): \(summary)")
        }
        // Its provider list left open, then its closing brace; and without it (the list took in the next account).
        expectOnly(try read(lines[0..<5].joined(separator: "\n") + "\n}"), "list open")
        expectOnly(try read(lines[0..<5].joined(separator: "\n") + "\n  "), "list open, no closing brace")
        // A key's value missing: the next account was read as it.
        expectOnly(try read(lines[0..<3].joined(separator: "\n") + "\n  \"tenantId\": ", separator: "\n"), "value missing")
        // Its opening brace missing: one entry, with its id.
        let unopened = "{\"users\": [\n" + users[0] + ",\n" + lines.dropFirst().joined(separator: "\n") + ",\n" + users[2] + ",\n" + users[3] + ",\n" + users[4] + "]}"
        let records = try readRecords(unopened, parts: parts)
        expectOnly(summary(records), "no opening brace")
        #expect(records.contains { if case .malformed(let entry) = $0 { entry.localId == "u2" } else { false } }, "\(summary(records))")
        // A stray brace, or a number with no comma after it: quarantined alone, the account after it read.
        for extra in ["}\n", "42\n"] {
            let text = "{\"users\": [\n" + users[0] + ",\n" + extra + users[1] + ",\n" + users[2] + "]}"
            let read = summary(try readRecords(text, parts: parts))
            #expect(read.filter { $0.contains(":u") }.count == 3 && read.filter { $0.contains("quarantine") }.count == 1, "\(extra): \(read)")
        }
    }

    /// A key given twice would have had its second value replace the first without a word (an older last sign-in, a
    /// provider list emptied, another id): the account is quarantined, naming the key.
    @Test(arguments: [
        ("\n  \"lastSignedInAt\": \"1763000000000\",\n  \"lastLoginAt\": \"1000000000000\",", "lastSignedInAt",
         "is given twice (as lastSignedInAt or lastLoginAt)"),
        ("\n  \"disabled\": true,\n  \"disabled\": false,", "disabled", "is given twice"),
        ("\n  \"providerUserInfo\": [],", "providerUserInfo", "is given twice"),  // the fixture's own list comes after
        ("\n  \"localId\": \"other\",", "localId", "is given twice"),
    ])
    func aKeyGivenTwiceQuarantinesTheAccount(extra: String, field: String, reason: String) throws {
        let text = "{\"users\": [\n" + [users[0], exportUser("u2", extra: extra), users[2]].joined(separator: ",\n") + "]}"
        let records = try readRecords(text, parts: 1)
        #expect(summary(records).count == 3 && summary(records)[2].hasSuffix(":u3"), "\(summary(records))")
        guard case .malformed(let entry) = records[1] else {
            Issue.record("\(summary(records))")
            return
        }
        #expect(entry.field == field && entry.reason == reason, "\(entry)")
        let provider = "{\"users\": [\n{\"localId\": \"u9\", \"providerUserInfo\": [{\"providerId\": \"apple.com\", \"rawId\": \"a\", \"rawId\": \"b\"}]}\n]}"
        guard case .malformed(let twice)? = try readRecords(provider, parts: 1).first else {
            Issue.record("a rawId given twice was read")
            return
        }
        #expect(twice.field == "providerUserInfo[0].rawId" && twice.reason == "is given twice", "\(twice)")
    }

    /// Every line at column 0 (Python's `json.dump(indent=0)`): nested objects close with `}` at a line start too, and
    /// an account with two logins has a `},` line inside it. The file was taken for the export's layout, cut into
    /// parts inside an account, and the plan stopped ("cannot find where the next account starts").
    @Test(arguments: [64, 200, 4 << 20])
    func unindentedLayoutIsReadWhole(batchBytes: Int) throws {
        let unindented = (1...5).map { index in
            "{\n\"localId\": \"u\(index)\",\n\"providerUserInfo\": [\n{\n\"providerId\": \"apple.com\",\n\"rawId\": \"001.u\(index)\"\n},\n"
                + "{\n\"providerId\": \"facebook.com\",\n\"rawId\": \"\(index)\"\n}\n]\n}"
        }
        let text = "{\n\"users\": [\n" + unindented.joined(separator: ",\n") + "\n]\n}\n"
        let expected = ["3:u1", "16:u2", "29:u3", "42:u4", "55:u5"]
        #expect(summary(try readRecords(text, batchBytes: batchBytes)) == expected)
        let crlf = text.utf8.flatMap { $0 == 0x0A ? [0x0D, 0x0A] : [$0] }
        #expect(summary(try readRecords(crlf, batchBytes: batchBytes)) == expected)
    }

    @Test func minifiedLayoutIsReadOnOneCore() throws {
        let text = "{\"users\":[{\"localId\":\"a\"},{\"localId\":\"b\",\"email\":\"b@example.com\"}]}"
        #expect(summary(try readRecords(text, batchBytes: 16)) == ["1:a", "1:b"])
    }

    /// The word-at-a-time newline count agrees with a plain count, for bytes near 0x0A and every alignment.
    @Test func countsNewlinesAsAPlainLoopDoes() {
        var state: UInt64 = 42
        let bytes: [UInt8] = (0..<4099).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return [0x0A, 0x0B, 0x09, 0x8A, 0x00, 0xFF, 0x7F, 0x20][Int(state >> 61)]
        }
        for (start, end) in [(0, 4099), (1, 4098), (3, 11), (7, 7), (5, 4096), (4090, 4099)] {
            #expect(Newlines.count(bytes, start..<end) == bytes[start..<end].filter { $0 == 0x0A }.count, "\(start)..<\(end)")
        }
        // Nothing but newlines: every per-byte counter fills up before it is summed.
        let lines = [UInt8](repeating: 0x0A, count: 8 * 255 * 3 + 5)
        for (start, end) in [(0, lines.count), (3, 8 * 255 + 3), (0, 8 * 255), (1, 8 * 510 + 9)] {
            #expect(Newlines.count(lines, start..<end) == end - start, "\(start)..<\(end)")
        }
    }

    /// The word-at-a-time scan inside strings stops where a byte-by-byte scan does (the first quote, backslash or
    /// control byte), and says whether a byte before it is not ASCII, for every start and bytes near the stops.
    @Test func stringScanStopsWhereAPlainLoopDoes() {
        var state: UInt64 = 7
        let alphabet: [UInt8] = [0x22, 0x5C, 0x00, 0x1F, 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xC3, 0xFF, 0x61, 0x61, 0x61,
                                 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61]
        let bytes: [UInt8] = (0..<2053).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return alphabet[Int(state >> 59)]
        }
        bytes.withUnsafeBufferPointer { buffer in
            for start in 0..<bytes.count {
                let end = min(bytes.count, start + 1 + start % 37)
                var high: UInt64 = 0
                let stop = JSONCursor.plainRun(buffer, from: start, end: end, high: &high)
                let expected = bytes[start..<end].firstIndex { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 } ?? end
                #expect(stop == expected, "from \(start) to \(end)")
                #expect((high & UTF8Text.highBits != 0) == bytes[start..<expected].contains { $0 >= 0x80 }, "from \(start) to \(end)")
            }
        }
    }

    /// Strings around the scan's eight-byte steps: escapes, non-ASCII, invalid UTF-8 and control bytes at each offset.
    @Test(arguments: 0..<10)
    func stringsDecodeAtEveryOffset(_ pad: Int) throws {
        let filler = String(repeating: "x", count: pad)
        let cases: [(String, String?)] = [
            ("\"\(filler)abcdefghijklmnop\"", "\(filler)abcdefghijklmnop"),
            ("\"\(filler)a\\\"b\\\\c\\u00e9\"", "\(filler)a\"b\\cé"),
            ("\"\(filler)Thérèse García 山田\"", "\(filler)Thérèse García 山田"),
            ("\"\(filler)tab\there\"", nil),
            ("\"\(filler)unclosed", nil),
        ]
        for (json, expected) in cases {
            let bytes = Array(json.utf8)
            let result: String? = bytes.withUnsafeBufferPointer { buffer in
                var cursor = JSONCursor(bytes: buffer, start: 0, end: buffer.count)
                return try? cursor.string()
            }
            #expect(result == expected, "\(json)")
        }
        var invalid = Array("\"\(filler)ab".utf8) + [0xC3, 0x28] + Array("cdefgh\"".utf8)
        invalid.withUnsafeBufferPointer { buffer in
            var cursor = JSONCursor(bytes: buffer, start: 0, end: buffer.count)
            #expect(throws: JSONCursor.SyntaxError.self) { try cursor.string() }
        }
        invalid = Array("\"\(filler)key12345678\":".utf8)
        invalid.withUnsafeBufferPointer { buffer in
            var cursor = JSONCursor(bytes: buffer, start: 0, end: buffer.count)
            #expect((try? cursor.key()).map { String(decoding: $0, as: UTF8.self) } == "\(filler)key12345678")
        }
    }

    @Test func notAnExportFileIsAClearError() throws {
        let path = TemporaryFile.write("[1,2,3]", name: "export.json")
        #expect(throws: InputError.self) { try ExportJSONSource(path: path) }
    }
}

@Suite struct ExportCSVDecoderTests {
    func row(_ fields: [Int: String]) -> String {
        (0..<52).map { fields[$0] ?? "" }.joined(separator: ",") + ",\n"
    }

    @Test func readsColumnsAndProviders() throws {
        let text = row([0: "u1", 1: "a@example.com", 2: "true", 5: "\"Doe, Jane\"", 11: "123", 13: "Jane FB", 23: "1608693364100", 26: "true", 28: "001.x.1", 29: "r@privaterelay.appleid.com"])
        let path = TemporaryFile.write(text, name: "export.csv")
        let source = try CSVSource.authExport(path: path)
        let batch = try #require(try source.nextBatch(records: 10, parts: 1))
        guard case .account(let account, let position) = batch.decode(part: 0).first else { Issue.record("expected an account"); return }
        #expect(position.line == 1)
        #expect(account.displayName == "Doe, Jane")
        #expect(account.emailVerified && account.disabled)
        #expect(account.createdAt == 1_608_693_364_100)
        #expect(account.providers == [
            ProviderLink(providerId: "facebook.com", rawId: "123", displayName: "Jane FB"),
            ProviderLink(providerId: "apple.com", rawId: "001.x.1", email: "r@privaterelay.appleid.com"),
        ])
    }

    @Test func wrongColumnCountAndBadBooleanAreQuarantined() throws {
        let text = "u1,a@example.com,\n" + row([0: "u2", 2: "maybe"]) + row([0: "u3"])
        let path = TemporaryFile.write(text, name: "export.csv")
        let source = try CSVSource.authExport(path: path)
        let batch = try #require(try source.nextBatch(records: 10, parts: 2))
        let records = (0..<batch.partCount).flatMap { batch.decode(part: $0) }
        #expect(summary(records) == ["1:quarantine:record", "2:quarantine:emailVerified", "3:u3"])
    }

    /// A row of 52 fields is read as a row without its trailing comma; a fault in it says a field may be missing, and
    /// a flag where the email should be (a field missing before it) is caught here rather than as a bad email.
    @Test func aRowOfFiftyTwoFieldsSaysAFieldMayBeMissing() throws {
        func short(_ fields: [Int: String]) -> String { String(row(fields).dropLast(2)) + "\n" }
        let missingEmail = [0: "u2", 1: "true", 22: "1608693364100"]  // emailVerified and createdAt, each one column early
        // The empty customAttributes column left out: the Apple id and email move one column to the left.
        let missingClaims = [0: "u4", 1: "b@example.com", 27: "000001.abcdef.1", 28: "b@example.com"]
        let text = short([0: "u1", 1: "a@example.com", 23: "1608693364100"]) + short(missingEmail) + short([0: "u3", 26: "sometimes"])
            + short(missingClaims) + short([0: "u5", 1: "c@example.com", 27: "\"{\"\"role\"\":\"\"admin\"\"}\""])
        let path = TemporaryFile.write(text, name: "export.csv")
        let batch = try #require(try CSVSource.authExport(path: path).nextBatch(records: 10, parts: 1))
        let records = batch.decode(part: 0)
        #expect(summary(records) == ["1:u1", "2:quarantine:email", "3:quarantine:disabled", "4:quarantine:customAttributes", "5:u5"])
        let hint = "; the row has one field too few (52, and no empty field after a trailing comma): a field may be missing and the columns after it shifted"
        guard case .malformed(let second) = records[1], case .malformed(let third) = records[2] else { return }
        #expect(second.reason == "has no @ (column 2)" + hint)
        #expect(third.reason.hasSuffix(hint) && third.reason.hasPrefix("'sometimes'"), "\(third.reason)")
    }

    /// The rows of a file agree on their field count. In a file of 53-field rows (the trailing comma), a 52-field row
    /// lost a field: with the empty Apple name left out, a Microsoft email moved into the Microsoft rawId, and the
    /// account was no longer covered by its protected domain. In a file saved without the trailing commas, a 53-field
    /// row gained one. Either is quarantined; a file with as many of each is read as before.
    @Test func aRowWithAnotherFieldCountThanTheFilesIsQuarantined() throws {
        let shifted = [0: "u2", 1: "r@privaterelay.appleid.com", 28: "001.a.2", 29: "r@privaterelay.appleid.com", 31: "ms-2", 32: "boss@corp.example"]
        func short(_ fields: [Int: String]) -> String { String(row(fields).dropLast(2)) + "\n" }
        func read(_ text: String) throws -> [String] {
            let path = TemporaryFile.write(text, name: "export.csv")
            let batch = try #require(try CSVSource.authExport(path: path).nextBatch(records: 10, parts: 1))
            return summary(batch.decode(part: 0))
        }
        #expect(try read(row([0: "u1"]) + short(shifted) + row([0: "u3"])) == ["1:u1", "2:quarantine:record", "3:u3"])
        #expect(try read(short([0: "u1"]) + row([0: "u2"]) + short([0: "u3"])) == ["1:u1", "2:quarantine:record", "3:u3"])
        // A tie: the file says nothing, each row is read on its own.
        #expect(try read(row([0: "u1"]) + short([0: "u2"])) == ["1:u1", "2:u2"])
        let path = TemporaryFile.write(row([0: "u1"]) + row([0: "u3"]) + short(shifted), name: "export.csv")
        let batch = try #require(try CSVSource.authExport(path: path).nextBatch(records: 10, parts: 1))
        guard case .malformed(let entry) = batch.decode(part: 0).last else { Issue.record("expected a quarantined row"); return }
        #expect(entry.localId == "u2")
        #expect(entry.reason == "has 52 fields where the rows of this file have 52 and a trailing comma: a field is missing and the columns after it shifted")
    }

    /// A row libcsv cannot read names its id when the id stands plain at the start of its first line; a quoted id, or
    /// none, is not guessed at. Before, every such entry had no id, where the JSON reader's named the account.
    @Test func aMalformedRowNamesItsId() throws {
        let text = row([0: "u1"]) + row([0: "u2", 5: "\"broken"]) + row([0: "u3"]) + row([0: "\"u4\"", 5: "a\"b"]) + row([0: "u5"])
        let path = TemporaryFile.write(text, name: "export.csv")
        let batch = try #require(try CSVSource.authExport(path: path).nextBatch(records: 10, parts: 1))
        let ids = batch.decode(part: 0).map { record -> String in
            switch record {
            case .account(let account, _): account.localId
            case .malformed(let entry): "quarantined \(entry.localId ?? "-")"
            default: "?"
            }
        }
        #expect(ids == ["u1", "quarantined u2", "u3", "quarantined -", "u5"])
    }

    /// A quoted name may hold any number of line breaks: at 65 (over a limit of 64 lines there was), the record was
    /// taken for an unbalanced quote, read again from its second line, and a row written inside the name became an
    /// account planned for deletion.
    @Test func aNameWithManyLineBreaksIsOneField() throws {
        let phantom = (0..<52).map { $0 == 0 ? "PhantomUid" : $0 == 26 ? "true" : "" }.joined(separator: ",")
        let name = "\"L" + String(repeating: "\n", count: 70) + phantom + "\n\""
        let path = TemporaryFile.write(row([0: "u1", 5: name, 26: "false"]) + row([0: "u2"]), name: "export.csv")
        let batch = try #require(try CSVSource.authExport(path: path).nextBatch(records: 10, parts: 1))
        let records = batch.decode(part: 0)
        #expect(summary(records) == ["1:u1", "73:u2"])
        guard case .account(let account, _) = records.first else { return }
        #expect(account.displayName?.hasSuffix(phantom + "\n") == true)
    }

    /// Past the 64 KiB a record may keep, the name's account is quarantined whole, with its id, and none of the rows
    /// written inside the name is read (they were, from its second line on).
    @Test func aNameLongerThanARecordMayBeIsQuarantinedWhole() throws {
        let phantom = (0..<52).map { $0 == 0 ? "PhantomUid" : $0 == 26 ? "true" : "" }.joined(separator: ",")
        let name = "\"L\n" + String(repeating: phantom + "\n", count: 1_000) + "\""
        let path = TemporaryFile.write(row([0: "u1", 5: name, 26: "false"]) + row([0: "u2"]), name: "export.csv")
        for parts in [1, 3] {
            let batch = try #require(try CSVSource.authExport(path: path).nextBatch(records: 10, parts: parts))
            let records = (0..<batch.partCount).flatMap { batch.decode(part: $0) }
            #expect(summary(records) == ["1:quarantine:record", "1003:u2"], "\(parts) parts")
            guard case .malformed(let entry) = records.first else { continue }
            #expect(entry.localId == "u1" && entry.reason.hasPrefix("the record is longer than 64 KiB"), "\(entry)")
        }
    }

    /// Seconds too large for milliseconds are quarantined (the conversion trapped, and every resume trapped again).
    @Test func epochSecondsTooLargeAreQuarantined() throws {
        let text = "id,since\nu1,1600000000\nu2,9223372036854775807\nu3,-9223372036854775808\n"
        let path = TemporaryFile.write(text, name: "users.csv")
        let mapping = ColumnMapping(columns: ["localId": "id", "createdAt": "since"], providers: [:])
        let batch = try #require(try CSVSource.mapped(path: path, mapping: mapping, timestamps: .epochSeconds).nextBatch(records: 10, parts: 1))
        let records = batch.decode(part: 0)
        #expect(summary(records) == ["2:u1", "3:quarantine:createdAt", "4:quarantine:createdAt"])
        guard case .account(let first, _) = records[0], case .malformed(let entry) = records[1] else { return }
        #expect(first.createdAt == 1_600_000_000_000)
        #expect(entry.reason == "'9223372036854775807' is not a time in epoch seconds (column \"since\")")
    }

    /// PostgreSQL's `EXTRACT(EPOCH FROM …)` writes seconds with a fraction: cut to the millisecond, not refused.
    @Test func epochSecondsWithAFractionAreCutToTheMillisecond() throws {
        let text = "id,since\nu1,1551699296.5\nu2,1551699296.123456\nu3,1551699296.\nu4,1.5e9\nu5,-1.25\nu6,.5\n"
        let path = TemporaryFile.write(text, name: "users.csv")
        let mapping = ColumnMapping(columns: ["localId": "id", "createdAt": "since"], providers: [:])
        let records = try #require(try CSVSource.mapped(path: path, mapping: mapping, timestamps: .epochSeconds).nextBatch(records: 10, parts: 1)).decode(part: 0)
        #expect(summary(records) == ["2:u1", "3:u2", "4:quarantine:createdAt", "5:quarantine:createdAt", "6:u5", "7:quarantine:createdAt"])
        let times = records.compactMap { record -> Int64? in
            guard case .account(let account, _) = record else { return nil }
            return account.createdAt
        }
        #expect(times == [1_551_699_296_500, 1_551_699_296_123, -1_250])
    }

    /// A table's NULL: `\N` (MySQL's INTO OUTFILE, PostgreSQL's text COPY) is no value by default, other texts when the
    /// pipeline lists them. NULL written as a word and not listed, and MySQL's zero date, are quarantined with that said:
    /// they went into the import file as a name and as Apple and Facebook sign-ins. A Facebook id must be digits; t/f are flags.
    @Test func aTablesNullIsNoValue() throws {
        let text = """
            id,mail,name,apple,fb,since,off
            u1,a@example.com,\\N,\\N,\\N,\\N,\\N
            u2,b@example.com,NULL,,,,t
            u3,c@example.com,,null,12 345,0000-00-00 00:00:00,f
            u4,d@example.com,,001234.abc.0001,1234,,

            """
        let path = TemporaryFile.write(text, name: "users.csv")
        let mapping = ColumnMapping(columns: ["localId": "id", "email": "mail", "displayName": "name", "createdAt": "since", "disabled": "off"],
                                    providers: ["apple.com": "apple", "facebook.com": "fb"])
        func read(_ nulls: [String]) throws -> [DecodedRecord] {
            try #require(try CSVSource.mapped(path: path, mapping: mapping, timestamps: .rfc3339, nullCells: nulls).nextBatch(records: 10, parts: 1))
                .decode(part: 0)
        }
        let byDefault = try read(SourceConfig.defaultNullValues)
        #expect(summary(byDefault) == ["2:u1", "3:quarantine:displayName", "4:quarantine:createdAt", "5:u4"])
        if case .account(let u1, _) = byDefault[0] {
            #expect(u1.displayName == nil && u1.providers.isEmpty && u1.createdAt == nil && !u1.disabled, "\(u1)")
        }
        if case .malformed(let u2) = byDefault[1] {
            #expect(u2.reason == "holds the text NULL (column \"name\"): if the table writes NULL so, list it in source.null_values to read it as no value")
        }
        if case .malformed(let u3) = byDefault[2] {
            #expect(([RecordIssue(field: u3.field, reason: u3.reason)] + u3.otherIssues).map { "\($0.field): \($0.reason)" } == [
                "createdAt: is MySQL's zero date, 0000-00-00 00:00:00 (column \"since\"): no date; if the table writes no date so, list it in "
                    + "source.null_values to read it as none",
                "providerUserInfo[0].rawId: holds the text null (column \"apple\"): if the table writes NULL so, list it in source.null_values to read it as no value",
                "providerUserInfo[1].rawId: '12 345' is not a Facebook user id, which is digits only (column \"fb\")",
            ])
        }
        if case .account(let u4, _) = byDefault[3] {
            // A link has no email of its own: the account's was copied to the Apple link, a guess that went into the import file.
            #expect(u4.providers.map { "\($0.providerId) \($0.rawId) \($0.email ?? "-")" } == ["apple.com 001234.abc.0001 -", "facebook.com 1234 -"])
        }
        // Listed, NULL and the zero date are no value too; \N, left out of the list, is said to be a NULL not listed (it went
        // into the import file as a name and an Apple id).
        let listed = try read(["NULL", "null", "0000-00-00 00:00:00"])
        #expect(summary(listed) == ["2:quarantine:displayName", "3:u2", "4:quarantine:providerUserInfo[0].rawId", "5:u4"])
        if case .malformed(let u1) = listed[0] {
            #expect(u1.reason == "holds the text \\N (column \"name\"): if the table writes NULL so, list it in source.null_values to read it as no value")
            #expect(u1.otherIssues.count == 4, "the Apple and Facebook ids, the time and the flag too: \(u1.otherIssues)")
        }
        if case .account(let u2, _) = listed[1] { #expect(u2.displayName == nil && u2.disabled) }
        if case .malformed(let u3) = listed[2] { #expect(u3.otherIssues.isEmpty, "only the Facebook id: \(u3)") }
    }

    /// Every mapped name the header lacks is named at once (one a run took a plan for each).
    @Test func everyMissingColumnIsNamedAtOnce() throws {
        let path = TemporaryFile.write("ID,Email,name\nu1,a@example.com,Ann\n", name: "users.csv")
        let mapping = ColumnMapping(columns: ["localId": "id", "email": "email", "displayName": "full_name"], providers: [:])
        #expect { try CSVSource.mapped(path: path, mapping: mapping, timestamps: .rfc3339) } throws: { error in
            "\(error)".hasSuffix(":1: the mapping names 3 columns the header does not have: 'full_name' for displayName, 'email' for email (it has 'Email'), "
                + "'id' for localId (it has 'ID'); names are matched as written, letter case included; the header has: ID, Email, name")
        }
    }

    /// A table's SQL DATETIME values (no zone) are quarantined with the key that reads them; given the zone, they are read
    /// in it, and a time with its own offset keeps it.
    @Test func datetimesWithoutAZoneAreReadInTheTablesZone() throws {
        let text = "id,since\nu1,2026-10-03 12:00:00\nu2,2026-10-03T12:00:00+02:00\nu3,2026-10-03\n"
        let path = TemporaryFile.write(text, name: "users.csv")
        let mapping = ColumnMapping(columns: ["localId": "id", "createdAt": "since"], providers: [:])
        let plain = try #require(try CSVSource.mapped(path: path, mapping: mapping, timestamps: .rfc3339).nextBatch(records: 10, parts: 1)).decode(part: 0)
        #expect(summary(plain) == ["2:quarantine:createdAt", "3:u2", "4:u3"])
        if case .malformed(let entry) = plain[0] {
            #expect(entry.reason == "'2026-10-03 12:00:00' is not an RFC 3339 time (column \"since\"): it has no Z or offset from UTC after its time "
                + "(a SQL DATETIME?): source.timestamp_zone says the zone the column was written in (UTC, or an offset such as +01:00)")
        }
        let zoned = try #require(try CSVSource.mapped(path: path, mapping: mapping, timestamps: .rfc3339, zone: TimestampZone("+01:00"))
            .nextBatch(records: 10, parts: 1)).decode(part: 0)
        let created = zoned.map { record -> Int64? in
            guard case .account(let account, _) = record else { return nil }
            return account.createdAt
        }
        #expect(created == [1_791_025_200_000, 1_791_021_600_000, 1_790_982_000_000])
    }

    /// A table without a header row has data where the header should be: the error names the columns it found, with
    /// what looks like personal data masked (the first row's email and name went to stderr in clear).
    @Test func aMissingHeaderIsNamedWithoutPersonalData() throws {
        let path = TemporaryFile.write("u1,ann@example.com,Ann Lee\n", name: "users.csv")
        let mapping = ColumnMapping(columns: ["localId": "id", "email": "mail"], providers: [:])
        #expect { try CSVSource.mapped(path: path, mapping: mapping, timestamps: .rfc3339) } throws: { error in
            "\(error)".hasSuffix(":1: the mapping names column 'mail' for email, but the first row has none of the mapped columns: is it a header? "
                + "(its 3 cells are not shown: they may be personal data)")
        }
        // A header with one name mistyped is shown, to find the typo.
        let typo = TemporaryFile.write("id,email\nu1,ann@example.com\n", name: "users.csv")
        #expect { try CSVSource.mapped(path: typo, mapping: mapping, timestamps: .rfc3339) } throws: { error in
            "\(error)".hasSuffix(":1: the mapping names column 'mail' for email, but the header has: id, email")
        }
    }

    /// Header names are trimmed, and a mapped name found twice is refused (the first column was taken silently).
    @Test func mappedHeadersAreTrimmedAndUnique() throws {
        let mapping = ColumnMapping(columns: ["localId": "id", "email": "mail"], providers: [:])
        let spaced = TemporaryFile.write("id , mail\nu1,a@example.com\n", name: "users.csv")
        let batch = try #require(try CSVSource.mapped(path: spaced, mapping: mapping, timestamps: .rfc3339).nextBatch(records: 10, parts: 1))
        guard case .account(let account, _)? = batch.decode(part: 0).first else { Issue.record("expected an account"); return }
        #expect(account.email == "a@example.com")
        let twice = TemporaryFile.write("id,mail,mail\nu1,a@example.com,b@example.com\n", name: "users.csv")
        #expect { try CSVSource.mapped(path: twice, mapping: mapping, timestamps: .rfc3339) } throws: { error in
            "\(error)".hasSuffix(":1: the header has the column 'mail' (mapped to email) twice")
        }
    }

    /// Invalid UTF-8 is quarantined under the field's JSON name (as every other CSV issue), with the column in the reason.
    @Test func invalidUTF8NamesTheFieldAndColumn() throws {
        var bytes = Array(row([0: "u1", 5: "Jane\u{1}"]).utf8)
        bytes[bytes.firstIndex(of: 0x01)!] = 0xFF
        bytes += Array(row([0: "u2", 11: "123", 28: "001.x.2", 30: "Bad\u{1}"]).utf8)
        bytes[bytes.firstIndex(of: 0x01)!] = 0xC3
        bytes += Array(row([0: "u3"]).utf8)
        // A bad boolean before the invalid text: the text is named, as every column is checked before any is read.
        bytes += Array(row([0: "u4", 2: "yes", 5: "Zoë", 40: "9\u{1}"]).utf8)
        bytes[bytes.lastIndex(of: 0x01)!] = 0xE0
        bytes += Array(row([0: "u5", 5: "Zoë Ångström", 28: "001.x.5", 30: "山田"]).utf8)
        let path = TemporaryFile.write(bytes, name: "export.csv")
        let batch = try #require(try CSVSource.authExport(path: path).nextBatch(records: 10, parts: 1))
        let records = batch.decode(part: 0)
        #expect(summary(records) == ["1:quarantine:displayName", "2:quarantine:providerUserInfo[1].displayName", "3:u3",
                                     "4:quarantine:providerUserInfo[0].rawId", "5:u5"])
        guard case .malformed(let entry) = records[1] else { Issue.record("expected a quarantine entry"); return }
        #expect(entry.reason == "is not valid UTF-8 (column 31)")
        #expect(entry.localId == "u2")
        guard case .malformed(let fourth) = records[3] else { Issue.record("expected a quarantine entry"); return }
        #expect(fourth.reason == "is not valid UTF-8 (column 41)")
        guard case .account(let fifth, _) = records[4] else { Issue.record("expected an account"); return }
        #expect(fifth.displayName == "Zoë Ångström" && fifth.providers.first?.displayName == "山田")
    }

    /// A record over several lines whose quoting breaks below its first line: the entry names the line it starts on
    /// (where the account is) and the line where the fault was found. Reading resumes on the line after the start, as
    /// an unclosed quote may have swallowed good rows, so the broken record's second line is quarantined on its own.
    @Test func brokenMultiLineRecordNamesWhereTheFaultIs() throws {
        let broken = "u2,a@example.com,,,,\"Line one\nline two\"x,\n"
        let text = row([0: "u1"]) + broken + row([0: "u3"])
        let path = TemporaryFile.write(text, name: "export.csv")
        let batch = try #require(try CSVSource.authExport(path: path).nextBatch(records: 10, parts: 1))
        let records = batch.decode(part: 0)
        #expect(summary(records) == ["1:u1", "2:quarantine:record", "3:quarantine:record", "4:u3"])
        guard case .malformed(let entry) = records[1] else { Issue.record("expected a quarantine entry: \(summary(records))"); return }
        #expect(entry.position.line == 2)
        #expect(entry.reason.hasSuffix("(found on line 3)"), "\(entry.reason)")
    }
}

@Suite struct BatchPartTests {
    /// Every split of a batch into parts covers its records once each, in order, whatever the counts: a page of 9
    /// users cut into 8 parts gave part 5 the range 10..<9, which stopped the process.
    @Test(arguments: [(0, 1), (1, 8), (5, 4), (9, 8), (10, 8), (17, 8), (1000, 8), (1001, 8), (1024, 3)])
    func partsCoverEveryRecordOnce(count: Int, parts: Int) {
        let ranges = (0..<parts).map { BatchParts.range($0, of: parts, count: count) }
        #expect(ranges.flatMap { Array($0) } == Array(0..<count))
    }

    /// A live page with more users than parts but not a multiple of them decodes every user, in order.
    @Test func aLivePageOfNineUsersInEightParts() {
        let users = (0..<9).map { Array("{\"localId\": \"u\($0)\"}".utf8) }
        let page = LivePage(path: "live", page: 1, users: users, ids: (0..<9).map { "u\($0)" }, parts: 8, checkpoint: InputCheckpoint())
        let ids = (0..<page.partCount).flatMap { part in
            page.decode(part: part).compactMap { record -> String? in
                if case .account(let account, _) = record { return account.localId }
                return nil
            }
        }
        #expect(ids == (0..<9).map { "u\($0)" })
    }

    /// A user of a live page that cannot be read is quarantined under its id: a page has no line to find it at (the
    /// reviewer had the page number alone).
    @Test func aLivePagesUnreadableUserIsNamed() {
        let users = [#"{"localId": "u1", "createdAt": "soon"}"#, #"{"localId": "u2", "email": 5}"#].map { Array($0.utf8) }
        let page = LivePage(path: "live", page: 3, users: users, ids: ["u1", "u2"], parts: 1, checkpoint: InputCheckpoint())
        let named = page.decode(part: 0).compactMap { record -> String? in
            if case .malformed(let entry) = record { return "\(entry.localId ?? "-") \(entry.position.line) \(entry.field)" }
            return nil
        }
        #expect(named == ["u1 3 createdAt", "u2 3 email"])
    }
}
