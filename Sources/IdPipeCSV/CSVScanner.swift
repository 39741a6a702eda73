import CLibCSV
#if canImport(Glibc)
import Glibc
#endif

/// libcsv in strict mode, fed one whole line at a time, with the rules for a bad row. The one parser of every CSV
/// input: `CSVRecordReader` feeds it a file, `CSVPart` a part of a chunk held in memory.
///
/// Being fed whole lines, it knows the lines each record spans and the byte offset after it. A quoted field that
/// never closes (an unbalanced quote) is reported as a malformed record covering its first line, and reading starts
/// again on the next line: one bad row costs one row. So does a quote inside an unquoted field.
public final class CSVScanner {
    /// A record longer than this is not kept: it is an unbalanced quote swallowing the rows after it, or a quoted field
    /// that long, which `CSVRecordEnd` tells apart by reading on. Bytes only, not lines: a quoted name may hold many
    /// line breaks, and a limit of 64 lines cut a legal 132-character name with 65 of them, read the rest of it as
    /// rows, and planned the deletion of an account its text made up.
    public let maxRecordBytes: Int
    /// The file read, for `CSVRecordEnd` to read on in; nil when there is none (the record is then taken for an
    /// unbalanced quote).
    private let path: String?
    /// How far a long record's end may lie and still be skipped to; one further is left unfinished (`feed` goes on as
    /// if it were not long), for the caller to read again from its start. A part of a chunk (`CSVPart`) must not step
    /// over the part after it, which was read from a cut that may lie inside the record.
    private let skipLimit: Int64
    /// The record being read was found to end past `skipLimit`: not looked for again on each of its lines.
    private var endBeyondLimit = false

    private var parser = csv_parser()
    /// libcsv's callbacks write here. A struct behind a pointer: a class's fields would be checked for exclusive
    /// access on each of the ~53 callbacks per record, which cost more than the append.
    private let sink: UnsafeMutablePointer<FieldSink>
    /// The number of the last line fed.
    public private(set) var line: Int
    /// Where the record being read started: after the last line that ended between records.
    public private(set) var recordStartLine: Int
    public private(set) var recordStartOffset: Int64
    /// Where the first line of that record ends: where reading starts again when the record is malformed.
    private var recordFirstLineEnd: Int64 = 0
    private var awaitingFirstLine = true
    /// Tests set this to compare with libcsv asking `keepSpaces` about every byte of every line.
    var asksAboutEverySpace = false
    private var recordBytes = 0

    /// Starts at `offset`, the start of line `line`, between records.
    public init(offset: Int64, line: Int, maxRecordBytes: Int = 64 << 10, path: String? = nil, skipLimit: Int64 = .max) throws(CSVReadError) {
        self.maxRecordBytes = maxRecordBytes
        self.path = path
        self.skipLimit = skipLimit
        self.line = line - 1
        recordStartLine = line
        recordStartOffset = offset
        sink = .allocate(capacity: 1)
        sink.initialize(to: FieldSink())
        guard startParser() else {
            sink.pointee.free()
            sink.deinitialize(count: 1)
            sink.deallocate()
            throw CSVReadError(path: "", message: "libcsv could not start")
        }
    }

    deinit {
        csv_free(&parser)
        sink.pointee.free()
        sink.deinitialize(count: 1)
        sink.deallocate()
    }

    /// True when the lines fed so far hold whole records only.
    public var betweenRecords: Bool { parser.pstate == 0 }  // ROW_NOT_BEGUN

    /// Where to go on after a line.
    public enum Next: Equatable {
        case nextLine
        /// The record is malformed and ends past `skipLimit`: the caller stops before it (not between records), to
        /// read it again from its start with no such limit.
        case unfinished
        /// A malformed record was handed over: read again from here (the line after its first), between records.
        case restart(offset: Int64, line: Int)
    }

    /// Feeds one line that starts at `offset`: its bytes with its newline (the file's last line may have none). Hands
    /// over each item the line completes, in order, then says where to go on.
    public func feed(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int64, _ emit: (CSVItemView) -> Void) -> Next {
        line += 1
        if awaitingFirstLine {
            recordFirstLineEnd = offset + Int64(bytes.count)
            awaitingFirstLine = false
        }
        parser.is_space = !asksAboutEverySpace && CSVScanner.spacesOnlyInsideFields(bytes) ? nil : keepSpaces
        let consumed = csv_parse(&parser, bytes.baseAddress, bytes.count, fieldCallback, recordCallback, UnsafeMutableRawPointer(sink))
        recordBytes += bytes.count
        if consumed < bytes.count || csv_error(&parser) != 0 {
            return malformed("malformed quoting (a quote inside an unquoted field, or text after a closing quote)", lastLine: line, emit)
        }
        // A line that ends with a line feed ends at most one record, there. Two (or one and the start of the next) mean
        // a carriage return outside quotes ended a record inside the line: `Evil\rVictimUid,…` was read as a row
        // `Evil` and a row of `VictimUid`, and the plan deleted the account that uid names.
        let completed = sink.pointee.recordEnds
        if completed > 0, bytes.last == 0x0A, completed > 1 || parser.pstate != 0 {
            // The count says how many rows the line may hold: a file whose lines end with a CR alone, past the sample
            // `CSVLineEnds` reads, is one such line, and its quarantine entry stands for all of them.
            let parts = completed + (parser.pstate != 0 ? 1 : 0)
            return malformed("a carriage return (CR) outside quotes splits the row (the line holds \(parts) rows by CRs; none is read)", lastLine: line, emit)
        }
        let end = offset + Int64(bytes.count)
        emitRecords(lastLine: line, endOffset: end, emit)
        if parser.pstate == 0 {
            recordStartLine = line + 1
            recordStartOffset = end
            recordBytes = 0
            awaitingFirstLine = true
            endBeyondLimit = false
        } else if recordBytes > maxRecordBytes && !endBeyondLimit {
            return long(after: end, emit)
        }
        return .nextLine
    }

    /// The record outgrew `maxRecordBytes` with the line that ends at `offset`: quarantined whole when it ends further
    /// on, and reading goes on after it; else it is an unbalanced quote, which costs its first line.
    private func long(after offset: Int64, _ emit: (CSVItemView) -> Void) -> Next {
        guard let path, let end = CSVRecordEnd.find(path: path, from: offset, line: line + 1) else {
            return malformed("a quoted field is not closed (unbalanced quote)", lastLine: recordStartLine, reconsider: false, emit)
        }
        guard end.offset <= skipLimit else {
            endBeyondLimit = true
            return .nextLine
        }
        return skip(to: end, "the record is longer than \(maxRecordBytes >> 10) KiB (a quoted field); its lines are not read as rows", emit)
    }

    /// Hands over the record from `recordStartLine` to `end` as malformed, and goes on after it.
    private func skip(to end: CSVRecordEnd.End, _ reason: String, _ emit: (CSVItemView) -> Void) -> Next {
        sink.pointee.reset()
        emit(.malformed(CSVMalformedRecord(firstLine: recordStartLine, lastLine: end.line - 1, reason: reason, endOffset: end.offset,
                                           startOffset: recordStartOffset)))
        csv_free(&parser)
        _ = startParser()
        restart(at: end.offset, line: end.line)
        return .restart(offset: end.offset, line: end.line)
    }

    /// At the end of the file (`end`, its size): hands over the last record, or the malformed one the file ends in
    /// (then reading goes on where `.restart` says).
    public func finish(at end: Int64, _ emit: (CSVItemView) -> Void) -> Next? {
        if csv_fini(&parser, fieldCallback, recordCallback, UnsafeMutableRawPointer(sink)) != 0 {
            return malformed("the file ends inside a quoted field (unbalanced quote)", lastLine: line, emit)
        }
        emitRecords(lastLine: line, endOffset: end, emit)
        return nil
    }

    /// Hands over the malformed record that starts at `recordStartLine` and starts afresh on the line after it.
    ///
    /// Unless the fault lies below the record's first line, after a quoted field over line breaks closed as it should
    /// (`CSVRecordEnd`): then the record is one, whatever broke it later (a stray quote in a photo URL after a name of
    /// many lines), and it is quarantined whole. Read again from its second line, the name's text became rows, and a
    /// row written in it an account planned for deletion. `reconsider` is false where the reading on was done.
    private func malformed(_ reason: String, lastLine: Int, reconsider: Bool = true, _ emit: (CSVItemView) -> Void) -> Next {
        if reconsider, lastLine > recordStartLine, let path,
           let end = CSVRecordEnd.find(path: path, from: recordStartOffset, line: recordStartLine, insideQuotes: false) {
            // Past what this reader may skip to (a part of a chunk), the record is left unfinished for the caller.
            guard end.offset <= skipLimit else { return .unfinished }
            return skip(to: end, reason + "; its lines are not read as rows", emit)
        }
        let startLine = recordStartLine
        let resume = recordFirstLineEnd
        // Records the line completed before the fault go with it (libcsv's state past the fault is not to be trusted).
        sink.pointee.reset()
        emit(.malformed(CSVMalformedRecord(firstLine: startLine, lastLine: lastLine, reason: reason, endOffset: resume, startOffset: recordStartOffset)))
        csv_free(&parser)
        _ = startParser()
        restart(at: resume, line: startLine + 1)
        return .restart(offset: resume, line: startLine + 1)
    }

    /// Goes on from `offset`, the start of line `line`, between records.
    public func restart(at offset: Int64, line: Int) {
        self.line = line - 1
        recordStartLine = line
        recordStartOffset = offset
        recordBytes = 0
        awaitingFirstLine = true
        endBeyondLimit = false
    }

    private func emitRecords(lastLine: Int, endOffset: Int64, _ emit: (CSVItemView) -> Void) {
        let records = sink.pointee.recordEnds
        guard records > 0 else { return }
        let bytes = UnsafeBufferPointer(start: sink.pointee.bytes, count: sink.pointee.byteCount)
        let ends = UnsafeBufferPointer(start: sink.pointee.fieldEnds, count: sink.pointee.fieldCount)
        var firstField = 0
        for index in 0..<records {
            let lastField = sink.pointee.recordFieldEnds[index]
            let fields = UnsafeBufferPointer(rebasing: ends[firstField..<lastField])
            emit(.record(CSVRecordView(bytes: bytes, ends: fields, start: firstField == 0 ? 0 : ends[firstField - 1],
                                       firstLine: recordStartLine, lastLine: lastLine, endOffset: endOffset)))
            firstField = lastField
        }
        sink.pointee.dropRecords()
    }

    /// libcsv in strict mode. `feed` says for each line whether it must keep spaces around unquoted fields.
    private func startParser() -> Bool {
        csv_init(&parser, UInt8(CSV_STRICT | CSV_STRICT_FINI)) == 0
    }

    /// True when no space or tab in `bytes` is next to a comma, CR or LF, or at either end. libcsv's own rule
    /// (spaces and tabs trimmed around unquoted fields, and allowed after a closing quote) and `keepSpaces` (nothing
    /// is a space) then read the bytes alike: they differ only for a space that starts or ends a field, and where a
    /// space follows a closing quote both find the row malformed. libcsv asks `keepSpaces` about every byte through a
    /// pointer: a third of its time on the 1M-account CSV. Most lines of an export have their spaces inside names.
    static func spacesOnlyInsideFields(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        within(bytes, UInt8(ascii: " ")) && within(bytes, UInt8(ascii: "\t"))
    }

    private static func within(_ bytes: UnsafeBufferPointer<UInt8>, _ space: UInt8) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var from = 0
        while from < bytes.count, let found = memchr(base + from, Int32(space), bytes.count - from) {
            let index = UnsafeRawPointer(base).distance(to: found)
            guard index > 0, index + 1 < bytes.count, isNotFieldEnd(base[index - 1]), isNotFieldEnd(base[index + 1]) else { return false }
            from = index + 1
        }
        return true
    }

    @inline(__always)
    private static func isNotFieldEnd(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: ","), 0x0D, 0x0A: false
        default: true
        }
    }
}

/// A record as the scanner hands it over: views into the scanner's buffers, valid during the call only.
public struct CSVRecordView {
    /// Every record the line completed, one after the other; this one's fields end at `ends`.
    let bytes: UnsafeBufferPointer<UInt8>
    let ends: UnsafeBufferPointer<Int>
    /// Where its first field starts in `bytes`.
    let start: Int
    public let firstLine: Int
    public let lastLine: Int
    /// The byte offset just past the record's last line: a safe place to resume from.
    public let endOffset: Int64

    public var count: Int { ends.count }

    public func fieldBytes(_ index: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[(index == 0 ? start : ends[index - 1])..<ends[index]])
    }

    /// All its fields' bytes, one after the other.
    public var allBytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[start..<(ends.last ?? start)])
    }

    /// The index of the first of the first `count` fields that is not valid UTF-8; nil when they all are. A record
    /// all in ASCII (the common case) is settled in one pass over its bytes.
    public func firstInvalidField(_ count: Int) -> Int? {
        if UTF8Text.isASCII(allBytes) { return nil }
        for index in 0..<min(count, self.count) where !UTF8Text.isASCII(fieldBytes(index)) && !UTF8Text.isValid(fieldBytes(index)) {
            return index
        }
        return nil
    }

    /// Field `index` as text, nil when it is empty (for fields `firstInvalidField` found valid).
    public func text(_ index: Int) -> String? {
        let field = fieldBytes(index)
        return field.isEmpty ? nil : String(decoding: field, as: UTF8.self)
    }

    /// A copy that owns its bytes.
    public func record() -> CSVRecord {
        CSVRecord(bytes: Array(allBytes), fieldEnds: ends.map { $0 - start }, firstLine: firstLine, lastLine: lastLine, endOffset: endOffset)
    }
}

public enum CSVItemView {
    case record(CSVRecordView)
    case malformed(CSVMalformedRecord)

    /// A copy that owns its bytes.
    public var item: CSVItem {
        switch self {
        case .record(let view): .record(view.record())
        case .malformed(let bad): .malformed(bad)
        }
    }
}

/// Collects libcsv's callbacks: the fields' bytes one after the other, where each field ends, where each record's
/// fields end. Raw buffers, grown by doubling: the field callback runs 53 times a row of the export.
struct FieldSink {
    var bytes: UnsafeMutablePointer<UInt8> = .allocate(capacity: 4096)
    var byteCount = 0
    var byteCapacity = 4096
    var fieldEnds: UnsafeMutablePointer<Int> = .allocate(capacity: 256)
    var fieldCount = 0
    var fieldCapacity = 256
    /// After each record of the line: how many fields so far.
    var recordFieldEnds: [Int] = []
    var recordEnds: Int { recordFieldEnds.count }

    mutating func reset() {
        byteCount = 0
        fieldCount = 0
        recordFieldEnds.removeAll(keepingCapacity: true)
    }

    /// Drops the records handed over, keeping the fields completed since the last of them (a line that ends a record
    /// with a lone CR can go on to complete fields of the next record).
    mutating func dropRecords() {
        let keptField = recordFieldEnds.last ?? 0
        let keptByte = keptField == 0 ? 0 : fieldEnds[keptField - 1]
        if keptField < fieldCount {
            bytes.update(from: bytes + keptByte, count: byteCount - keptByte)
            for index in keptField..<fieldCount { fieldEnds[index - keptField] = fieldEnds[index] - keptByte }
        }
        byteCount -= keptByte
        fieldCount -= keptField
        recordFieldEnds.removeAll(keepingCapacity: true)
    }

    mutating func free() {
        bytes.deallocate()
        fieldEnds.deallocate()
    }

    @inline(__always)
    mutating func append(_ data: UnsafeRawPointer, _ length: Int) {
        if byteCount + length > byteCapacity {
            var capacity = byteCapacity * 2
            while byteCount + length > capacity { capacity *= 2 }
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
            grown.update(from: bytes, count: byteCount)
            bytes.deallocate()
            bytes = grown
            byteCapacity = capacity
        }
        (bytes + byteCount).update(from: data.assumingMemoryBound(to: UInt8.self), count: length)
        byteCount += length
    }

    @inline(__always)
    mutating func endField() {
        if fieldCount == fieldCapacity {
            let grown = UnsafeMutablePointer<Int>.allocate(capacity: fieldCapacity * 2)
            grown.update(from: fieldEnds, count: fieldCount)
            fieldEnds.deallocate()
            fieldEnds = grown
            fieldCapacity *= 2
        }
        fieldEnds[fieldCount] = byteCount
        fieldCount += 1
    }
}

/// libcsv trims spaces and tabs around unquoted fields, and takes those after a closing quote, unless told that
/// nothing is a space: keep every byte.
private func keepSpaces(_ byte: UInt8) -> Int32 { 0 }

private func fieldCallback(_ data: UnsafeMutableRawPointer?, _ length: Int, _ context: UnsafeMutableRawPointer?) {
    let sink = context!.assumingMemoryBound(to: FieldSink.self)
    if let data, length > 0 { sink.pointee.append(data, length) }
    sink.pointee.endField()
}

private func recordCallback(_ terminator: Int32, _ context: UnsafeMutableRawPointer?) {
    let sink = context!.assumingMemoryBound(to: FieldSink.self)
    sink.pointee.recordFieldEnds.append(sink.pointee.fieldCount)
}
