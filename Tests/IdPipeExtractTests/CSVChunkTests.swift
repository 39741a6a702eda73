import Testing
import IdPipeCore
import IdPipeCSV
@testable import IdPipeExtract
import IdPipeTestSupport

/// Hands every record over as a quarantine row naming its fields, lines and end, so that a plan's reading of a CSV can
/// be compared with one reader's.
struct RecordingDecoder: CSVRecordDecoder {
    func decode(_ record: CSVRecord) -> Result<Account, RecordIssue> {
        let fields = (0..<record.count).map { record.field($0) ?? "<invalid>" }.joined(separator: "|")
        return .failure(RecordIssue(field: fields, reason: "\(record.firstLine)-\(record.lastLine)@\(record.endOffset)"))
    }

    var idColumn: Int? { 0 }
}

@Suite struct CSVChunkTests {
    /// A CSV full of what makes cutting it hard: quoted fields over several lines, doubled quotes, a quote inside an
    /// unquoted field, text after a closing quote, a quote never closed (it swallows rows until the reader gives up on
    /// it), CR LF and a lone CR, blank lines, spaces, and a last line without its newline.
    static func text(rows: Int, seed: UInt64) -> String {
        var random = SeededGenerator(seed: seed)
        let pieces = ["u", "plain", " spaced ", "\"a, b\"", "\"two\nlines\"", "\"three\nshort\nlines\"", "\"say \"\"hi\"\"\"", "",
                      "é名", "ab\"c", "\"a\"b", "\"never closed", "x\ry"]
        var text = ""
        for row in 0..<rows {
            let fields = (0..<4).map { _ -> String in
                let roll = random.next() % 100
                if roll < 60 { return "f\(row)" }
                if roll < 97 { return pieces[Int(random.next() % 9)] }
                return pieces[9 + Int(random.next() % 4)]
            }
            text += fields.joined(separator: ",")
            text += random.next() % 10 == 0 ? "\r\n" : "\n"
            if random.next() % 40 == 0 { text += "\n" }
        }
        return text + "last,row,without,newline"
    }

    func items(_ items: [CSVItem]) -> [String] {
        items.map { item in
            switch item {
            case .record(let record): "\((0..<record.count).map { record.field($0) ?? "<invalid>" }.joined(separator: "|")) \(record.firstLine)-\(record.lastLine)@\(record.endOffset)"
            case .malformed(let bad): "malformed \(bad.firstLine): \(bad.reason)\(bad.lastLine > bad.firstLine ? " (found on line \(bad.lastLine))" : "")"
            }
        }
    }

    func read(_ path: String, batchBytes: Int, parts: Int) throws -> [String] {
        var wrongGuesses = 0
        return try read(path, batchBytes: batchBytes, parts: parts, wrongGuesses: &wrongGuesses)
    }

    func read(_ path: String, batchBytes: Int, parts: Int, wrongGuesses: inout Int) throws -> [String] {
        let source = try CSVSource(path: path, checkpoint: InputCheckpoint(), decoder: RecordingDecoder(), batchBytes: batchBytes)
        return try readAll(source, parts: parts, wrongGuesses: &wrongGuesses) { batch, part in
            var records: [String] = []
            batch.decode(part: part) { record in
                switch record {
                case .malformed(let entry) where entry.field == "record": records.append("malformed \(entry.position.line): \(entry.reason)")
                case .malformed(let entry): records.append("\(entry.field) \(entry.reason)")
                case .account, .normalized, .fatal: records.append("unexpected \(record)")
                }
            }
            return records
        }
    }

    @Test(arguments: [(64, 1), (100, 3), (333, 2), (4096, 4), (4096, 16), (1 << 20, 8)])
    func chunksCutInPartsReadAsOneReaderDoes(batchBytes: Int, parts: Int) throws {
        var wrongGuesses = 0
        for seed in [1, 2, 3] as [UInt64] {
            let path = TemporaryFile.write(Self.text(rows: 400, seed: seed), name: "quirks.csv")
            let reader = try CSVRecordReader(path: path)
            var reference: [CSVItem] = []
            while let item = try reader.next() { reference.append(item) }
            let expected = items(reference)
            #expect(expected.contains { $0.hasPrefix("malformed") }, "the sample must hold broken rows")
            let chunked = try read(path, batchBytes: batchBytes, parts: parts, wrongGuesses: &wrongGuesses)
            #expect(chunked.count == expected.count, "seed \(seed)")
            for (index, (a, b)) in zip(expected, chunked).enumerated() where a != b {
                Issue.record("seed \(seed), item \(index): \(a) != \(b)\nPREV \(expected[max(0, index - 2)..<min(expected.count, index + 3)])\nGOT \(chunked[max(0, index - 2)..<min(chunked.count, index + 3)])")
                break
            }
        }
        if batchBytes < 1000 {
            // The broken quotes make some guesses of where a chunk's records end wrong: those chunks are read again.
            #expect(wrongGuesses > 0, "small chunks of this sample must meet a wrong guess")
        }
    }

    /// The next chunk is read from where the source guessed this one's records end (the last newline with the quotes
    /// before it balanced). A quote inside an unquoted field, which the parser reads as text, tips that count: here the
    /// guess falls inside the quoted field of r3. Once the chunks are decoded, the next is found not to follow; it is
    /// dropped, and the source reads again from where the decoding stopped, as one pass reads.
    @Test func aChunkWhoseEndWasGuessedWrongIsFollowedByTheRightOne() throws {
        let head = "r1,ab\"c\nr2,x\nr3,\"q\nr4,y\n"
        let text = head + "r5,z\"\n" + (0..<20).map { "s\($0),x\n" }.joined()
        let path = TemporaryFile.write(text, name: "guess.csv")
        let source = try CSVSource(path: path, checkpoint: InputCheckpoint(), decoder: RecordingDecoder(), batchBytes: head.utf8.count)
        let first = try #require(try source.nextBatch(records: 0, parts: 1))
        let second = try #require(try source.nextBatch(records: 0, parts: 1))
        for part in 0..<first.partCount { first.decode(part: part) { _ in } }
        #expect(!source.follows(second, after: first))
        #expect(first.checkpoint == InputCheckpoint(offset: Int64("r1,ab\"c\nr2,x\n".utf8.count), line: 3))
        source.readAgain(after: first)
        let third = try #require(try source.nextBatch(records: 0, parts: 1))
        #expect(source.follows(third, after: first))
        for part in 0..<third.partCount { third.decode(part: part) { _ in } }
        #expect(third.checkpoint.offset > first.checkpoint.offset)

        var wrongGuesses = 0
        let reader = try CSVRecordReader(path: path)
        var reference: [CSVItem] = []
        while let item = try reader.next() { reference.append(item) }
        #expect(try read(path, batchBytes: head.utf8.count, parts: 1, wrongGuesses: &wrongGuesses) == items(reference))
        #expect(wrongGuesses == 1)

        // Well-formed, with LF or CR LF line ends, every guess holds.
        for end in ["\n", "\r\n"] {
            let plain = TemporaryFile.write((0..<200).map { "p\($0),\"a\(end)b\",c\(end)" }.joined(), name: "plain.csv")
            wrongGuesses = 0
            _ = try read(plain, batchBytes: 100, parts: 2, wrongGuesses: &wrongGuesses)
            #expect(wrongGuesses == 0, "line end \(Array(end.utf8))")
        }
    }

    /// Cut where the quotes before are balanced, a chunk's parts start between records, for well-formed CSV. Two broken
    /// quotes balance each other, and a cut after the second falls inside the quoted field it opened: the part before
    /// does not end between records, and the rest of the chunk is read again in one go.
    @Test func aPartCutInsideAQuotedFieldIsReadAgainFromItsLastRecord() throws {
        let text = "a,b\n\"open1,c\nd,e\nf,g\n\"open2,h\n" + (0..<40).map { "r\($0),x\n" }.joined()
        let path = TemporaryFile.write(text, name: "open.csv")
        let source = try CSVSource(path: path, checkpoint: InputCheckpoint(), decoder: RecordingDecoder(), batchBytes: 1 << 20)
        let batch = try #require(try source.nextBatch(records: 0, parts: 4))
        for part in 0..<batch.partCount { batch.decode(part: part) { _ in } }
        #expect(batch.remainder() != nil, "a part ends inside the field open2 opened")
        let reader = try CSVRecordReader(path: path)
        var reference: [CSVItem] = []
        while let item = try reader.next() { reference.append(item) }
        #expect(try read(path, batchBytes: 1 << 20, parts: 4) == items(reference))
    }

    /// A quoted field longer than the 64 KiB a record may keep is legal CSV. It was taken for an unbalanced quote, and
    /// reading went on from its second line: rows written inside the field were read as accounts. Now the file is read
    /// on to where the field and its record end, and the record is quarantined whole; none of its lines is a row. In
    /// one reader and in chunks of any size and parts, cut inside the field or not.
    @Test func aFieldLongerThanTheLimitIsOneQuarantinedRecord() throws {
        let filler = String(repeating: "phantom,x\n", count: 7_000)  // 70,000 bytes of lines that look like rows
        let text = "r1,a\nr2,\"L\n" + filler + "end\"\"quote\",b\nr3,c\n" + (4..<300).map { "r\($0),x\n" }.joined()
        let path = TemporaryFile.write(text, name: "long.csv")
        let reader = try CSVRecordReader(path: path)
        var reference: [CSVItem] = []
        while let item = try reader.next() { reference.append(item) }
        let expected = items(reference)
        #expect(expected.count == 299 && !expected.contains { $0.hasPrefix("phantom") }, "\(expected.count) \(expected.prefix(4))")
        #expect(expected[1] == "malformed 2: the record is longer than 64 KiB (a quoted field); its lines are not read as rows (found on line 7003)")
        #expect(expected[2].hasPrefix("r3|c 7004-7004@"), "\(expected[2])")
        for (batchBytes, parts) in [(1 << 20, 1), (1 << 20, 4), (4096, 2), (50_000, 3)] {
            #expect(try read(path, batchBytes: batchBytes, parts: parts) == expected, "chunks of \(batchBytes) bytes, \(parts) parts")
        }
    }

    /// A fault found below a record's first line, after its field over line breaks closed as it should (a stray quote in
    /// a photo URL, a lone CR, a quote never closed at the end of the file): the record is quarantined whole. Read again
    /// from its second line, the name's text became rows (`phantom`), and the plan deleted the accounts they named.
    @Test(arguments: ["https://cdn.example/a\"b.jpg,z\n", "x\ry,z\n", "\"never closed,z\n"])
    func aFaultAfterAFieldOverLinesQuarantinesTheWholeRecord(tail: String) throws {
        let name = "\"L\n" + String(repeating: "phantom,x\n", count: 30) + "end\""
        let atEnd = tail.hasPrefix("\"never")
        let text = "r0,a\nr1," + name + "," + tail + (atEnd ? "" : (2..<40).map { "r\($0),b\n" }.joined())
        let path = TemporaryFile.write(text, name: "fault.csv")
        let reader = try CSVRecordReader(path: path)
        var reference: [CSVItem] = []
        while let item = try reader.next() { reference.append(item) }
        let expected = items(reference)
        #expect(!expected.contains { $0.hasPrefix("phantom") }, "\(expected.prefix(5))")
        #expect(expected.count == (atEnd ? 2 : 40) && expected[1].hasPrefix("malformed 2: ") && expected[1].hasSuffix("its lines are not read as rows (found on line 33)")
                || atEnd, "\(expected.prefix(3))")
        for (batchBytes, parts) in [(1 << 20, 1), (1 << 20, 3), (300, 2), (1000, 4)] {
            #expect(try read(path, batchBytes: batchBytes, parts: parts) == expected, "chunks of \(batchBytes) bytes, \(parts) parts")
        }
    }

    /// Two long records in a row, each longer than a chunk: after the first is skipped past its chunk, the second is
    /// read in chunks twice as long until it fits (the plan took the second reading from one place for a loop).
    @Test func twoLongRecordsInARowAreReadInAnyChunks() throws {
        let long = "\"L\n" + String(repeating: "phantom,x\n", count: 11_000) + "\""
        let text = "r0,a\nr1," + long + "\nr2," + long + "\nr3,b\n"
        let path = TemporaryFile.write(text, name: "long2.csv")
        let reader = try CSVRecordReader(path: path)
        var reference: [CSVItem] = []
        while let item = try reader.next() { reference.append(item) }
        let expected = items(reference)
        #expect(expected.count == 4 && expected[1].hasPrefix("malformed 2") && expected[2].hasPrefix("malformed 11004"), "\(expected)")
        for batchBytes in [50_000, 60_000, 1 << 20] {
            #expect(try read(path, batchBytes: batchBytes, parts: 2) == expected, "chunks of \(batchBytes) bytes")
        }
    }

    /// An unbalanced quote with no other quote for more than 64 KiB after it (the reading on finds the end of the file
    /// inside the field) still costs its one row, and one whose field a later quoted field breaks (text after what
    /// would close it) too.
    @Test func anUnbalancedQuoteBeforeLongQuoteFreeTextCostsOneRow() throws {
        let rows = (0..<8_000).map { "r\($0),xxxxxxxx\n" }.joined()  // over 100 KB
        for tail in ["", "late,\"quoted\",y\n"] {
            let path = TemporaryFile.write("a,b\nbad,\"open\n" + rows + tail, name: "unbalanced.csv")
            let reader = try CSVRecordReader(path: path)
            var reference: [CSVItem] = []
            while let item = try reader.next() { reference.append(item) }
            let expected = items(reference)
            #expect(expected.count == 8_002 + (tail.isEmpty ? 0 : 1), "\(expected.count)")
            #expect(expected[1].hasPrefix("malformed 2: a quoted field is not closed (unbalanced quote)"), "\(expected[1])")
            #expect(expected[2].hasPrefix("r0|xxxxxxxx 3-3@"), "\(expected[2])")
            for (batchBytes, parts) in [(1 << 20, 2), (30_000, 3)] {
                #expect(try read(path, batchBytes: batchBytes, parts: parts) == expected, "chunks of \(batchBytes) bytes, \(parts) parts")
            }
        }
    }
}
