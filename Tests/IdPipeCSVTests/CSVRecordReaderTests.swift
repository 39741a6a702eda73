import Testing
@testable import IdPipeCSV
import IdPipeTestSupport

func readAll(_ contents: String) throws -> [CSVItem] {
    let reader = try CSVRecordReader(path: TemporaryFile.write(contents, name: "t.csv"))
    var items: [CSVItem] = []
    while let item = try reader.next() { items.append(item) }
    return items
}

@Suite struct CSVRecordReaderTests {
    @Test func trailingCommaAndQuotedFieldsSpanningLines() throws {
        let items = try readAll("u1,\"Smith, John\",x,\nu2,\"Line\nBreak\",\"say \"\"hi\"\"\",\nu3,plain,,\n")
        let records = items.compactMap { if case .record(let r) = $0 { r } else { nil } }
        #expect(records.count == 3)
        #expect(records.map { $0.count } == [4, 4, 4])
        #expect(records[0].field(1) == "Smith, John")
        #expect(records[1].field(1) == "Line\nBreak")
        #expect(records[1].field(2) == "say \"hi\"")
        #expect(records[1].firstLine == 2 && records[1].lastLine == 3)
        #expect(records[2].firstLine == 4)
        #expect(records[2].field(3) == "")
    }

    @Test func anUnbalancedQuoteCostsOneRow() throws {
        let lines = ["u1,ok,", "u2,\"broken,", "u3,ok,", "u4,ok,"]
        let items = try readAll(lines.joined(separator: "\n") + "\n")
        var good: [String] = []
        var bad: [CSVMalformedRecord] = []
        for item in items {
            switch item {
            case .record(let record): good.append(record.field(0)!)
            case .malformed(let malformed): bad.append(malformed)
            }
        }
        #expect(good == ["u1", "u3", "u4"])
        #expect(bad.count == 1)
        #expect(bad.first?.firstLine == 2)
    }

    @Test func aQuoteInsideAnUnquotedFieldIsMalformed() throws {
        let items = try readAll("u1,ok,\nu2,bad\"field,\nu3,ok,\n")
        let lines = items.map { item -> String in
            switch item {
            case .record(let record): "\(record.firstLine):\(record.field(0)!)"
            case .malformed(let malformed): "\(malformed.firstLine):malformed"
            }
        }
        #expect(lines == ["1:u1", "2:malformed", "3:u3"])
    }

    /// A CR outside quotes inside a line that ends with a line feed splits the row: libcsv ends a record there, so
    /// `Evil\rVictimUid,…` was read as two rows, the second one with another account's id. The line is malformed, and
    /// reading goes on with the next line (where the rest of a record that went on over lines is malformed too).
    /// A CR inside quotes is text, and a file whose lines all end with a CR alone is read as before.
    @Test func aLoneCRInsideALineIsMalformed() throws {
        func read(_ text: String) throws -> [String] {
            try readAll(text).map { item in
                switch item {
                case .record(let record): "\(record.firstLine):" + (0..<record.count).map { record.field($0)! }.joined(separator: "|")
                case .malformed(let bad): "\(bad.firstLine):malformed: \(bad.reason)"
                }
            }
        }
        let split = "a carriage return (CR) outside quotes splits the row (the line holds 2 rows by CRs; none is read)"
        #expect(try read("u1,a\nEvil\rVictim,b\nu3,c\n") == ["1:u1|a", "2:malformed: \(split)", "3:u3|c"])
        #expect(try read("u1,a\r\nEvil\rVictim,b\r\nu3,c\r\n") == ["1:u1|a", "2:malformed: \(split)", "3:u3|c"])
        #expect(try read("x,y\rz,\"multi\nline\"\nlast,one\n").prefix(1) == ["1:malformed: \(split)"])
        #expect(try read("x,y\rz,\"multi\nline\"\nlast,one\n").last == "3:last|one")
        #expect(try read("u1,\"in\rside\"\nu2,b\n") == ["1:u1|in\rside", "2:u2|b"])
    }

    /// A file whose lines end with a CR alone is refused with the way to convert it: read by line feeds, it was one
    /// line (every row on line 1), and with a last line feed one malformed row. A stray CR in a file of LF lines is not.
    @Test(arguments: ["x,y\rz,w\rlast,one", "x,y\r\rz,w\r", "a,b\rc,d\re,f\n", "\"q\nq\",1\r2,3\r"])
    func classicMacLineEndsAreRefused(text: String) throws {
        #expect { try readAll(text) } throws: { error in
            "\(error)".contains("its lines end with a carriage return alone (classic Mac line ends)")
        }
    }

    /// Past the sample, a stretch of CR-ended rows is one line: its one quarantine entry says how many rows it holds.
    @Test func aLineOfRowsEndedByCRsSaysHowManyItHolds() throws {
        let text = String(repeating: "lf,row\n", count: 10_000) + String(repeating: "cr,row\r", count: 200) + "\n"
        let items = try readAll(text)
        guard case .malformed(let bad)? = items.last else { Issue.record("expected a malformed line"); return }
        #expect(items.count == 10_001 && bad.reason.contains("the line holds 200 rows by CRs"), "\(bad.reason)")
    }

    /// A stray quote in the first row hid every CR after it from the sample (the quotes were followed).
    @Test func aQuoteDoesNotHideMacLineEnds() {
        #expect(CSVLineEnds.endWithCarriageReturns(path: TemporaryFile.write("a,http://x/\"y\rb,c\rd,e\r", name: "t.csv")))
    }

    @Test func aStrayCarriageReturnDoesNotMakeAMacFile() {
        #expect(!CSVLineEnds.endWithCarriageReturns(path: TemporaryFile.write("x,y\rz,\"multi\nline\"\nlast,one\n", name: "t.csv")))
        #expect(!CSVLineEnds.endWithCarriageReturns(path: TemporaryFile.write("a,b\r\nc,d\r\n", name: "t.csv")))
        #expect(!CSVLineEnds.endWithCarriageReturns(path: TemporaryFile.write("", name: "t.csv")))
    }

    @Test func crlfAndMissingFinalNewline() throws {
        let items = try readAll("a,b\r\nc,d")
        let records = items.compactMap { if case .record(let r) = $0 { r } else { nil } }
        #expect(records.map { $0.field(0)! } == ["a", "c"])
        #expect(records.last?.field(1) == "d")
    }

    @Test func resumesFromARecordsEndOffset() throws {
        let path = TemporaryFile.write("u1,a,\nu2,\"two\nlines\",\nu3,c,\n", name: "t.csv")
        let first = try CSVRecordReader(path: path)
        _ = try first.next()
        guard case .record(let second)? = try first.next() else { Issue.record("expected a record"); return }
        let resumed = try CSVRecordReader(path: path, offset: second.endOffset, line: second.lastLine + 1)
        guard case .record(let third)? = try resumed.next() else { Issue.record("expected a record"); return }
        #expect(third.field(0) == "u3")
        #expect(third.firstLine == 4)
    }

    /// Spaces and tabs are field text wherever they stand, as strict CSV reads them: around unquoted fields, at the
    /// start and end of a line, in runs, and inside quotes; one after a closing quote or before an opening one makes
    /// the row malformed. (The scanner spares libcsv its space check on lines whose spaces all stand inside fields.)
    @Test(arguments: [
        ("Finn Schmidt,b c d,e\n", "Finn Schmidt|b c d|e"),
        (" a,b\n", " a|b"), ("a, b\n", "a| b"), ("a ,b\n", "a |b"), ("a,b \n", "a|b "), ("a,b \r\n", "a|b "),
        ("a,b ", "a|b "), ("a  b,c\n", "a  b|c"), ("\ta,b\tc,d\t\n", "\ta|b\tc|d\t"), ("a, ,b\n", "a| |b"),
        ("\"a b\",c\n", "a b|c"), ("\" a \",c\n", " a |c"), ("\"a, b\",c\n", "a, b|c"), ("\"x \"\" y\",c\n", "x \" y|c"),
        ("\"two\n lines \",c\n", "two\n lines |c"), ("\"a\" ,b\n", "malformed"), (" \"a\",b\n", "malformed"),
        ("\"a\"\t,b\n", "malformed"), ("\"a\" b,c\n", "malformed"), ("a,\"b\" \n", "malformed"), ("x\r y,z\n", "malformed"),
    ])
    func spacesAreText(_ csv: String, _ expected: String) throws {
        let read = try readAll(csv).map { item -> String in
            switch item {
            case .record(let record): (0..<record.count).map { record.field($0)! }.joined(separator: "|")
            case .malformed: "malformed"
            }
        }
        #expect(read.joined(separator: "/") == expected)
    }

    /// Random lines of text, spaces, tabs, commas, quotes, CRs and LFs read alike whether or not libcsv is spared
    /// its space check on lines whose spaces all stand inside fields.
    @Test func sparingTheSpaceCheckChangesNothing() throws {
        var random = SeededGenerator(seed: 11)
        let alphabet = Array("aaabb  ,\"\t\r\n\n".utf8)
        var spared = 0
        for _ in 0..<3000 {
            let bytes = (0..<Int(random.next() % 30)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
            spared += lines.dropLast().count { ($0 + [0x0A]).withUnsafeBufferPointer(CSVScanner.spacesOnlyInsideFields) && $0.contains(0x20) }
            #expect(try scan(bytes, everySpace: false) == scan(bytes, everySpace: true), "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
        #expect(spared > 100)
    }

    /// Everything the scanner hands over for `bytes`, fed a line at a time and read on where it says.
    func scan(_ bytes: [UInt8], everySpace: Bool) throws -> [String] {
        let scanner = try CSVScanner(offset: 0, line: 1)
        scanner.asksAboutEverySpace = everySpace
        var items: [String] = []
        let collect = { (item: CSVItemView) in
            switch item.item {
            case .record(let record): items.append((0..<record.count).map { record.field($0) ?? "?" }.joined(separator: "|") + "@\(record.endOffset)")
            case .malformed(let bad): items.append("malformed \(bad.firstLine)-\(bad.lastLine): \(bad.reason)")
            }
        }
        var position = 0
        while true {
            while position < bytes.count {
                let end = bytes[position...].firstIndex(of: 0x0A).map { $0 + 1 } ?? bytes.count
                let next = bytes.withUnsafeBufferPointer { scanner.feed(UnsafeBufferPointer(rebasing: $0[position..<end]), at: Int64(position), collect) }
                if case .restart(let offset, _) = next { position = Int(offset) } else { position = end }
            }
            guard case .restart(let offset, _)? = scanner.finish(at: Int64(bytes.count), collect) else { return items }
            position = Int(offset)
        }
    }

    @Test func invalidUTF8IsVisible() throws {
        let bytes: [UInt8] = Array("u1,".utf8) + [0xC3, 0x28] + Array(",\n".utf8)
        let path = TemporaryFile.write(bytes, name: "t.csv")
        let reader = try CSVRecordReader(path: path)
        guard case .record(let record)? = try reader.next() else { Issue.record("expected a record"); return }
        #expect(record.field(1) == nil)
    }
}

@Suite struct UTF8TextTests {
    /// The word-at-a-time ASCII check agrees with a byte loop for every length and start, with one byte at or above
    /// 0x80 at each place in turn.
    @Test func asciiCheckAgreesWithAByteLoop() {
        var bytes = [UInt8](repeating: 0x61, count: 40)
        bytes.withUnsafeMutableBufferPointer { all in
            for start in 0..<9 {
                for end in start...all.count {
                    for marked in [nil] + Array(start..<end) {
                        if let marked { all[marked] = 0x80 }
                        let slice = UnsafeBufferPointer(rebasing: all[start..<end])
                        #expect(UTF8Text.isASCII(slice) == slice.allSatisfy { $0 < 0x80 }, "\(start)..<\(end), 0x80 at \(String(describing: marked))")
                        if let marked { all[marked] = 0x61 }
                    }
                }
            }
        }
    }

    @Test(arguments: [([0x61, 0x62], "ab"), ([0xC3, 0xA9], "é"), ([0xC3], nil), ([0xED, 0xA0, 0x80], nil), ([0xE5, 0xB1, 0xB1, 0x7F], "山\u{7F}")])
    func validatesOutsideASCII(_ bytes: [UInt8], _ expected: String?) {
        #expect(bytes.withUnsafeBufferPointer(UTF8Text.validated) == expected)
    }
}

/// Reading on after a record that outgrew the limit: where the record ends by libcsv's strict rules for quotes, or
/// nil for an unbalanced quote. The scan starts inside a quoted field, on line 10.
@Suite struct CSVRecordEndTests {
    @Test(arguments: [
        ("more text\"\n", 11),                 // the field closes at a line end
        ("a\"\"b\",x,\"y\"\"\",z\nnext\n", 11),  // doubled quotes, then more fields, quoted and not
        ("two\nlines\",x\r\nnext\n", 12),       // CR LF after the record
        ("closes at the end\"", 11),           // the file ends the record
        ("\"", 11),
        ("x\"\r\r\nnext\n", 11),                // CR CR LF (a CR LF file converted again), which libcsv reads too
        // Once the long field has closed, the record is one, whatever else is wrong in it: a stray quote in a photo URL,
        // text after a closing quote, a lone CR. It was taken for an unbalanced quote, and its text read as rows.
        ("x\",https://cdn.example/a\"b.jpg,z\nnext\n", 11),
        ("x\",\"y\"z,w\nnext\n", 11),
        ("x\"\rmore,text\nnext\n", 11),
    ] as [(String, Int)])
    func findsTheEndOfALongRecord(rest: String, line: Int) throws {
        let head = "r1,\"open\n"
        let path = TemporaryFile.write(head + rest, name: "rest.csv")
        let end = try #require(CSVRecordEnd.find(path: path, from: Int64(head.utf8.count), line: 10, blockSize: 4))
        let stop = rest.contains("next") ? rest.utf8.count - "next\n".utf8.count : rest.utf8.count
        #expect(end == CSVRecordEnd.End(offset: Int64(head.utf8.count + stop), line: line))
    }

    @Test(arguments: [
        "no closing quote\nr2,x\n",           // the file ends inside the field
        "closed\" then text\n",                // text after what would close it
        "x\nr5,\"quoted later\",y\n",          // the next quote is another field's opening one, and text follows
    ])
    func findsAnUnbalancedQuote(rest: String) throws {
        let path = TemporaryFile.write(rest, name: "rest.csv")
        #expect(CSVRecordEnd.find(path: path, from: 0, line: 10, blockSize: 4) == nil)
    }
}
