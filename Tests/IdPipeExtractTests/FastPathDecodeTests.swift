import Testing
@testable import IdPipeCore
@testable import IdPipeExtract
import IdPipeTestSupport

/// One record as a plan sees it, read the full way or by the fast path.
enum ReadRecord: Equatable {
    /// Where it is, its outcome from the full path.
    case outcome(line: Int, offset: Int64, RecordOutcomeSummary)
    /// Taken by the fast path: where it is, its id and counts.
    case plain(line: Int, offset: Int64, uid: String, PlainAccount)
    case fatal(String)
}

/// What the comparison needs of a full-path outcome.
struct RecordOutcomeSummary: Equatable {
    var outcome: String
    var tally: Tally
}

/// Reads `path` through `open` both ways (every record the full way; with the fast path) and returns what each made
/// of every record, in order.
func readBothWays(_ open: () throws -> any AccountSource, processor: AccountProcessor, parts: Int = 3) throws -> (full: [ReadRecord], fast: [ReadRecord]) {
    var normalized = 0
    return try readBothWays(open, processor: processor, parts: parts, normalized: &normalized)
}

/// The same, counting in `normalized` the records the fast path handed over as normalized already
/// (`DecodedRecord.normalized`): each is checked to be one the normalize stage leaves as it is, and processed as the plan
/// processes it, without that stage.
func readBothWays(_ open: () throws -> any AccountSource, processor: AccountProcessor, parts: Int = 3,
                  normalized: inout Int) throws -> (full: [ReadRecord], fast: [ReadRecord]) {
    var skipped = 0
    func summary(_ record: consuming DecodedRecord) -> ReadRecord {
        let account: Account, position: SourcePosition
        var checked = false
        switch consume record {
        case .fatal(let error): return .fatal(error.description)
        case .malformed(let entry):
            var counter = TallyCounter()
            counter.count(entry)
            return .outcome(line: entry.position.line, offset: entry.position.byteOffset, RecordOutcomeSummary(outcome: "\(entry)", tally: counter.tally()))
        case .account(let read, let at):
            account = read
            position = at
        case .normalized(let read, let at):
            account = read
            position = at
            checked = true
            skipped += 1
            #expect(AccountProcessor.normalizes(to: account), "\(position): handed over as normalized, but the normalizer changes it")
        }
        var counter = TallyCounter()
        var idHash: UInt64 = 0
        switch processor.process(account, position: position, sequence: 0, idHash: &idHash, normalized: checked) {
        case .account(let outcome):
            counter.count(outcome)
            // Kept outcomes whole; the others as the fast path would count them.
            let text = outcome.isNoteworthy ? "\(outcome)" : "plain \(outcome.account.localId)"
            return .outcome(line: position.line, offset: position.byteOffset, RecordOutcomeSummary(outcome: text, tally: counter.tally()))
        case .quarantined(let entry):
            counter.count(entry)
            return .outcome(line: position.line, offset: position.byteOffset, RecordOutcomeSummary(outcome: "\(entry)", tally: counter.tally()))
        }
    }
    let full = try readAll(try open(), parts: parts) { batch, part in
        var records: [ReadRecord] = []
        batch.decode(part: part) { records.append(summary($0)) }
        return records
    }
    let fast = try readAll(try open(), parts: parts) { batch, part in
        var records: [ReadRecord] = []
        batch.decode(part: part, fastPath: processor, each: { records.append(summary($0)) }, plain: { record in
            records.append(.plain(line: record.line, offset: record.byteOffset, uid: String(decoding: record.localId, as: UTF8.self), record.account))
        })
        return records
    }
    normalized = skipped
    return (full, fast)
}

/// Everything a source gives, its batches' parts decoded by `decode` as the plan decodes them: the parts after one
/// that did not end where the next began are replaced by the rest of the batch read in one go, and a batch that does not
/// start where the one before ended (`AccountSource.follows`: read from a wrong guess) is dropped and read again.
func readAll<T>(_ source: any AccountSource, parts: Int, _ decode: (any RawBatch, Int) -> [T]) throws -> [T] {
    var wrongGuesses = 0
    return try readAll(source, parts: parts, wrongGuesses: &wrongGuesses, decode)
}

/// The same, counting the batches dropped in `wrongGuesses`.
func readAll<T>(_ source: any AccountSource, parts: Int, wrongGuesses: inout Int, _ decode: (any RawBatch, Int) -> [T]) throws -> [T] {
    func whole(_ batch: any RawBatch) -> [T] {
        var decoded = (0..<batch.partCount).map { decode(batch, $0) }
        if let (part, rest) = batch.remainder() {
            decoded.removeSubrange((part + 1)...)
            decoded.append(decode(rest, 0))
        }
        return Array(decoded.joined())
    }
    var all: [T] = []
    var held: (any RawBatch)?
    while let batch = try source.nextBatch(records: 64, parts: parts) {
        if let previous = held {
            held = nil
            all += whole(previous)
            guard source.follows(batch, after: previous) else {
                wrongGuesses += 1
                source.readAgain(after: previous)
                continue
            }
        }
        held = batch
    }
    if let held { all += whole(held) }
    return all
}

/// Holds the two readings to each other: the same records in the same places; each one the fast path took is one the
/// full path only counts, the same way.
func expectSameReading(_ full: [ReadRecord], _ fast: [ReadRecord], minimumTaken: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(full.count == fast.count, sourceLocation: sourceLocation)
    var taken = 0
    for (index, (a, b)) in zip(full, fast).enumerated() {
        if case .plain(let line, let offset, let uid, let plain) = b {
            taken += 1
            guard case .outcome(let fullLine, let fullOffset, let summary) = a else {
                Issue.record("record \(index): taken by the fast path, but \(a) the full way", sourceLocation: sourceLocation)
                continue
            }
            var counter = TallyCounter()
            counter.count(plain)
            #expect(line == fullLine && offset == fullOffset, "record \(index)", sourceLocation: sourceLocation)
            #expect(summary.outcome == "plain \(uid)", "record \(index)", sourceLocation: sourceLocation)
            #expect(summary.tally == counter.tally(), "record \(index): \(uid)", sourceLocation: sourceLocation)
        } else {
            #expect(a == b, "record \(index)", sourceLocation: sourceLocation)
        }
    }
    #expect(taken >= minimumTaken, "the fast path took \(taken) records", sourceLocation: sourceLocation)
    #expect(taken < full.count, "every record was taken: the quirks did not reach the full path", sourceLocation: sourceLocation)
}

@Suite struct FastPathDecodeTests {
    static let asOf = Timestamp.parseRFC3339("2026-11-21T00:00:00Z")!

    static func processor() throws -> AccountProcessor {
        let pipeline = try PipelineDefinition.parse(yaml: """
            version: 1
            name: t
            source: {path: x.json}
            inputs: {legacy_names: names.csv, deletion_requests: requests.csv}
            select: {deletion_requested: true}
            stages: {backfill_names: {sources: [legacy, provider:facebook.com]}, revoke: true, delete: {when_not_revocable: delete}}
            """, file: "t.yaml")
        var requests = KeyedRows<DeletionRequest>()
        requests["u7"] = DeletionRequest(requestedAt: asOf, source: "app")
        return AccountProcessor(pipeline: pipeline, sideInputs: SideInputs(deletionRequests: requests), asOf: asOf)
    }

    /// Values for each field of a user object, as JSON text: ordinary ones first, then what the decoder must judge.
    static let quirks: [String: [String]] = [
        "email": ["\"ann@example.com\"", "\"k2@privaterelay.appleid.com\"", "null", "\"a\\u0040example.com\"", "\"Ann@EXAMPLE.com\"", "12",
                  "\"\"", "\"a@ex\\\"ample.com\"", "\"é@example.com\""],
        "displayName": ["\"Ann Lee\"", "\"刘芳\"", "null", "\"\\u5c71\\u7530\"", "\"Ann  Lee\"", "true", "\"\"", "\"bad \u{1}\""],
        "createdAt": ["\"1700000000000\"", "\"1600000000000\"", "1700000000000", "null", "\"12a\"", "\"1500000000\"", "\"-5\"", "\"99999999999999999999\""],
        "lastSignedInAt": ["\"1790000000000\"", "\"1780000000000\"", "\"\"", "17", "{}"],
        "disabled": ["false", "true", "null", "\"false\"", "1"],
        "emailVerified": ["true", "false", "null", "\"yes\""],
        "passwordHash": ["\"aGFzaA==\"", "null", "3", "\"a\\/b\"", "\"a\\qb\"", "\"\\ud800\""],
        "phoneNumber": ["\"+14155550100\"", "\"+1 415 555 0100\"", "null", "\"+0123456789\""],
        "customAttributes": ["\"{\\\"admin\\\":true}\"", "null", "{\"admin\": true}"],
        "photoUrl": ["\"https://p/1\"", "null", "\"https:\\/\\/p\\/2\"", "7"],
        "salt": ["\"c2FsdA==\"", "null", "[]"],
        "extra": ["\"x\"", "[1, {\"a\": [null, false]}]", "1.5e3", "-0", "1.", "[1,]", "{\"a\" 1}", "\"\\u12\""],
    ]

    static let links = [
        "{\n      \"providerId\": \"apple.com\",\n      \"rawId\": \"001.a.1\",\n      \"email\": \"k2@privaterelay.appleid.com\"\n    }",
        "{\n      \"providerId\": \"google.com\",\n      \"rawId\": \"9\",\n      \"email\": \"ann@example.com\",\n      \"displayName\": \"Ann Lee\",\n      \"photoUrl\": \"https://p/1\"\n    }",
        "{\n      \"providerId\": \"facebook.com\",\n      \"rawId\": \"77\",\n      \"displayName\": \"Bo\"\n    }",
        "{\n      \"providerId\": \"apple.com\",\n      \"email\": \"x@y.com\"\n    }",
        "{\n      \"rawId\": \"5\",\n      \"providerId\": null\n    }",
        "{\n      \"providerId\": \"google.com\",\n      \"rawId\": \"9\",\n      \"rawId\": \"10\"\n    }",
        "{\n      \"providerId\": \"password\",\n      \"rawId\": \"ann@example.com\",\n      \"photoUrl\": 5\n    }",
        "{\n      \"providerId\": \"apple\\u002ecom\",\n      \"rawId\": \"1\"\n    }",
    ]

    /// The `n`-th user object, in the export's layout: mostly ordinary values, each field now and then one of its quirks.
    static func user(_ n: Int) -> String {
        var random = SeededGenerator(seed: UInt64(n))
        func pick(_ pool: [String]) -> String {
            random.next() % 8 != 0 ? pool[Int(random.next() % 2)] : pool[Int(random.next() % UInt64(pool.count))]
        }
        var fields = ["  \"localId\": \(n % 97 == 5 ? "null" : n % 89 == 3 ? "\"u\\u0031\(n)\"" : "\"u\(n % 500 == 7 ? 7 : n)\"")"]
        for key in ["email", "emailVerified", "displayName", "passwordHash", "createdAt", "lastSignedInAt", "phoneNumber", "disabled",
                    "customAttributes", "photoUrl", "salt"] where random.next() % 5 != 0 {
            fields.append("  \"\(key)\": \(pick(quirks[key]!))")
        }
        if random.next() % 6 == 0 { fields.append("  \"unknownKey\": \(pick(quirks["extra"]!))") }
        if random.next() % 40 == 0 { fields.append("  \"email\": \"again@example.com\"") }
        if random.next() % 40 == 0 { fields.append("  \"lastLoginAt\": \"1790000000001\"") }
        if random.next() % 30 == 0 { fields.append("  \"mfaInfo\": [{\"phoneInfo\": \"+14155550100\", \"mfaEnrollmentId\": \"e1\"}]") }
        let linkCount = Int(random.next() % 3)
        if linkCount > 0 {
            let chosen = (0..<linkCount).map { _ in random.next() % 6 != 0 ? links[Int(random.next() % 3)] : links[Int(random.next() % UInt64(links.count))] }
            fields.append("  \"providerUserInfo\": [\n    " + chosen.joined(separator: ",\n    ") + "\n  ]")
        }
        return "{\n" + fields.shuffled(using: &random).joined(separator: ",\n") + "\n}"
    }

    @Test(arguments: [3, 1])
    func theFastPathReadsAnExportAsTheFullPathDoes(parts: Int) throws {
        let text = "{\"users\": [\n" + (0..<3000).map(Self.user).joined(separator: ",\n") + "]}"
        let path = TemporaryFile.write(text, name: "quirks.json")
        var normalized = 0
        let (full, fast) = try readBothWays({ try ExportJSONSource(path: path, batchBytes: 64 << 10) }, processor: try Self.processor(), parts: parts,
                                            normalized: &normalized)
        expectSameReading(full, fast, minimumTaken: 300)
        #expect(normalized > 100, "the full path must get accounts the fast path found normalized: \(normalized)")
    }

    /// Values for the columns of an export CSV row: ordinary ones first, then what the decoder must judge.
    static let csvQuirks: [Int: [String]] = [
        1: ["ann@example.com", "k2@privaterelay.appleid.com", "", "Ann@EXAMPLE.com", "no-at", "\"a,b@example.com\"", "é@example.com"],
        2: ["true", "false", "", "TRUE", "1", "yes"],
        5: ["Ann Lee", "刘芳", "", "\"Lee, Ann\"", "\"two\nlines\"", "Ann  Lee", " Ann"],
        23: ["1700000000000", "1600000000000", "", "+1700000000000", "12a", "1500000000", "-5", "99999999999999999999"],
        24: ["1790000000000", "", "17"],
        25: ["+14155550100", "", "+1 415 555 0100", "+0123456789"],
        26: ["false", "true", "", "FALSE", "0", "maybe"],
    ]

    /// The `n`-th row of an export CSV (52 columns and the trailing comma), mostly ordinary, now and then broken.
    static func csvRow(_ n: Int) -> String {
        var random = SeededGenerator(seed: UInt64(n) &+ 77)
        var fields = [String](repeating: "", count: 53)
        fields[0] = n % 97 == 5 ? "" : "u\(n % 500 == 7 ? 7 : n)"
        for (column, pool) in csvQuirks { fields[column] = random.next() % 8 != 0 ? pool[Int(random.next() % 2)] : pool[Int(random.next() % UInt64(pool.count))] }
        // Providers: Apple at 28, Google at 7, Facebook at 11 (rawId, email, displayName, photoUrl).
        for first in [28, 7, 11] where random.next() % 3 == 0 {
            fields[first] = random.next() % 15 == 0 ? "" : "r\(n)"
            fields[first + 1] = random.next() % 2 == 0 ? fields[1] : "k9@privaterelay.appleid.com"
            fields[first + 2] = random.next() % 4 == 0 ? "Bo" : ""
        }
        // BEL stands for a byte that is not UTF-8 (a String cannot hold one): the file gets 0xFF in its place.
        if random.next() % 60 == 0 { fields[3] = "\u{7}bad" }
        if random.next() % 60 == 0 { fields.removeLast() }
        if random.next() % 60 == 0 { fields[52] = "extra" }
        if random.next() % 80 == 0 { fields[5] = "\"never closed" }
        return fields.joined(separator: ",")
    }

    @Test(arguments: [(3, 64 << 10), (2, 4 << 10), (1, 1 << 20)])
    func theFastPathReadsAnExportCSVAsTheFullPathDoes(parts: Int, batchBytes: Int) throws {
        let text = (0..<3000).map(Self.csvRow).joined(separator: "\n") + "\n"
        let path = TemporaryFile.write(Array(text.utf8).map { $0 == 0x07 ? 0xFF : $0 }, name: "quirks.csv")
        var normalized = 0
        let (full, fast) = try readBothWays({ try CSVSource.authExport(path: path, batchBytes: batchBytes) }, processor: try Self.processor(), parts: parts,
                                            normalized: &normalized)
        expectSameReading(full, fast, minimumTaken: 300)
        #expect(normalized > 100, "the full path must get accounts the fast path found normalized: \(normalized)")
    }

    /// A file cut inside an account, and one that breaks the export's layout: the records around them read the same.
    @Test(arguments: [true, false])
    func aCutOrOddlyLaidOutFileReadsTheSame(cut: Bool) throws {
        var text = "{\"users\": [" + (0..<1000).map(Self.user).joined(separator: cut ? ",\n" : ", ") + "]}"
        if cut { text = String(text.prefix(text.count * 2 / 3)) }
        let path = TemporaryFile.write(text, name: "odd.json")
        let (full, fast) = try readBothWays({ try ExportJSONSource(path: path, batchBytes: 4 << 10) }, processor: try Self.processor())
        expectSameReading(full, fast, minimumTaken: 20)
    }
}
