import CLibCSV
#if canImport(Glibc)
import Glibc
#endif

/// Streams the records of a CSV file through libcsv in strict mode.
///
/// The file is fed to libcsv one line at a time, so each record knows the lines it spans and the byte
/// offset after it. A quoted field that never closes (an unbalanced quote) is reported as a malformed
/// record covering its first line, and parsing starts again on the next line: one bad row costs one row.
public final class CSVRecordReader {
    public let path: String
    /// A record longer than this is taken to be an unbalanced quote swallowing the rows after it.
    public let maxRecordBytes: Int
    public let maxRecordLines: Int

    private let fd: Int32
    private var parser = csv_parser()
    /// libcsv's callbacks write here. A struct behind a pointer: a class's fields would be checked for exclusive
    /// access on each of the ~53 callbacks per record, which cost more than the append.
    private let sink: UnsafeMutablePointer<FieldSink>
    private var chunk: [UInt8]
    private var chunkStart: Int64 = 0
    private var chunkLength = 0
    private var cursor = 0
    private var atEOF = false
    private var line = 0
    private var recordStartLine = 1
    private var recordStartOffset: Int64 = 0
    private var recordBytes = 0
    private var pending: [CSVItem] = []
    private var pendingIndex = 0
    private var finished = false

    /// Opens `path` and starts at `offset`, which is the start of line `line` (both from an earlier record's end).
    public init(path: String, offset: Int64 = 0, line: Int = 1, chunkSize: Int = 1 << 20, maxRecordBytes: Int = 64 << 10, maxRecordLines: Int = 64) throws {
        self.path = path
        self.maxRecordBytes = maxRecordBytes
        self.maxRecordLines = maxRecordLines
        fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw CSVReadError(path: path, message: "cannot open: \(String(cString: strerror(errno)))") }
        chunk = [UInt8](repeating: 0, count: chunkSize)
        sink = .allocate(capacity: 1)
        sink.initialize(to: FieldSink())
        guard startParser() else {
            close(fd)
            sink.deinitialize(count: 1)
            sink.deallocate()
            throw CSVReadError(path: path, message: "libcsv could not start")
        }
        self.line = line - 1
        restart(at: offset, line: line)
        if offset == 0 { try skipByteOrderMark() }
    }

    deinit {
        csv_free(&parser)
        close(fd)
        sink.deinitialize(count: 1)
        sink.deallocate()
    }

    /// The next record or malformed stretch; nil at the end of the file.
    public func next() throws -> CSVItem? {
        while true {
            if pendingIndex < pending.count {
                defer { pendingIndex += 1 }
                return pending[pendingIndex]
            }
            pending.removeAll(keepingCapacity: true)
            pendingIndex = 0
            if finished { return nil }
            try step()
        }
    }

    // MARK: - Feeding libcsv a line at a time

    private func step() throws {
        if cursor >= chunkLength {
            if atEOF {
                finish()
                return
            }
            try fill()
            return
        }
        let available = chunkLength - cursor
        let lineLength: Int
        let complete: Bool
        let newline = chunk.withUnsafeBytes { memchr($0.baseAddress! + cursor, 0x0A, available) }
        if let newline {
            lineLength = chunk.withUnsafeBytes { newline - UnsafeMutableRawPointer(mutating: $0.baseAddress!) } - cursor + 1
            complete = true
        } else if atEOF {
            lineLength = available
            complete = true
        } else {
            try fill()  // keep the partial line and read more
            return
        }
        let lineStart = chunkStart + Int64(cursor)
        let lineEnd = lineStart + Int64(lineLength)
        if complete { line += 1 }
        let consumed = chunk.withUnsafeBytes { buffer in
            csv_parse(&parser, buffer.baseAddress! + cursor, lineLength, fieldCallback, recordCallback, UnsafeMutableRawPointer(sink))
        }
        cursor += lineLength
        recordBytes += lineLength
        if consumed < lineLength || csv_error(&parser) != 0 {
            malformed(reason: "malformed quoting (a quote inside an unquoted field, or text after a closing quote)", lastLine: line)
            return
        }
        emitRecords(lastLine: line, endOffset: lineEnd)
        if parser.pstate == 0 {  // ROW_NOT_BEGUN: the next line starts a record
            recordStartLine = line + 1
            recordStartOffset = lineEnd
            recordBytes = 0
        } else if recordBytes > maxRecordBytes || line - recordStartLine + 1 > maxRecordLines {
            malformed(reason: "a quoted field is not closed (unbalanced quote)", lastLine: recordStartLine)
        }
    }

    private func emitRecords(lastLine: Int, endOffset: Int64) {
        guard !sink.pointee.records.isEmpty else { return }
        for var record in sink.pointee.records {
            record.firstLine = recordStartLine
            record.lastLine = lastLine
            record.endOffset = endOffset
            pending.append(.record(record))
        }
        sink.pointee.records.removeAll(keepingCapacity: true)
    }

    /// libcsv in strict mode, keeping spaces around unquoted fields (its default trims them).
    private func startParser() -> Bool {
        guard csv_init(&parser, UInt8(CSV_STRICT | CSV_STRICT_FINI)) == 0 else { return false }
        csv_set_space_func(&parser, keepSpaces)
        return true
    }

    /// Reports the record that starts at `recordStartLine` as malformed and parses again from the line after it.
    private func malformed(reason: String, lastLine: Int) {
        let startLine = recordStartLine
        let resumeOffset = offsetOfLine(after: recordStartOffset)
        pending.append(.malformed(CSVMalformedRecord(firstLine: startLine, lastLine: lastLine, reason: reason, endOffset: resumeOffset)))
        csv_free(&parser)
        _ = startParser()
        sink.pointee.reset()
        restart(at: resumeOffset, line: startLine + 1)
    }

    private func finish() {
        finished = true
        let result = csv_fini(&parser, fieldCallback, recordCallback, UnsafeMutableRawPointer(sink))
        let end = chunkStart + Int64(chunkLength)
        if result != 0 {
            finished = false
            malformed(reason: "the file ends inside a quoted field (unbalanced quote)", lastLine: line)
            return
        }
        emitRecords(lastLine: line, endOffset: end)
    }

    // MARK: - Reading the file

    private func restart(at offset: Int64, line: Int) {
        chunkStart = offset
        chunkLength = 0
        cursor = 0
        atEOF = false
        finished = false
        self.line = line - 1
        recordStartLine = line
        recordStartOffset = offset
        recordBytes = 0
    }

    /// Moves the unread bytes to the front and reads more; doubles the buffer for a line longer than it.
    private func fill() throws {
        let keep = chunkLength - cursor
        if keep > 0 && cursor > 0 {
            chunk.withUnsafeMutableBytes { buffer in
                _ = memmove(buffer.baseAddress!, buffer.baseAddress! + cursor, keep)
            }
        }
        chunkStart += Int64(cursor)
        cursor = 0
        chunkLength = keep
        if chunkLength == chunk.count { chunk.append(contentsOf: [UInt8](repeating: 0, count: chunk.count)) }
        let room = chunk.count - chunkLength
        let offset = chunkStart + Int64(chunkLength)
        let count = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + chunkLength, room, off_t(offset)) }
        guard count >= 0 else { throw CSVReadError(path: path, message: "read failed: \(String(cString: strerror(errno)))") }
        if count == 0 { atEOF = true }
        chunkLength += count
    }

    private func skipByteOrderMark() throws {
        try fill()
        if chunkLength >= 3 && chunk[0] == 0xEF && chunk[1] == 0xBB && chunk[2] == 0xBF { cursor = 3 }
    }

    /// The offset of the line after the one starting at `offset` (the end of the file when there is none).
    private func offsetOfLine(after offset: Int64) -> Int64 {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var position = offset
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, off_t(position)) }
            if count <= 0 { return position }
            if let index = buffer[0..<count].firstIndex(of: 0x0A) { return position + Int64(index) + 1 }
            position += Int64(count)
        }
    }
}

/// Collects libcsv's callbacks into records. Passed to C as the context pointer.
struct FieldSink {
    var bytes: [UInt8] = []
    var fieldEnds: [Int] = []
    var records: [CSVRecord] = []

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        fieldEnds.removeAll(keepingCapacity: true)
        records.removeAll(keepingCapacity: true)
    }
}

/// libcsv trims spaces and tabs around unquoted fields unless told that nothing is a space: keep every byte.
private func keepSpaces(_ byte: UInt8) -> Int32 { 0 }

private func fieldCallback(_ data: UnsafeMutableRawPointer?, _ length: Int, _ context: UnsafeMutableRawPointer?) {
    let sink = context!.assumingMemoryBound(to: FieldSink.self)
    if let data, length > 0 {
        sink.pointee.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
    }
    sink.pointee.fieldEnds.append(sink.pointee.bytes.count)
}

private func recordCallback(_ terminator: Int32, _ context: UnsafeMutableRawPointer?) {
    let sink = context!.assumingMemoryBound(to: FieldSink.self)
    // Copies of exactly the record's size. Handing over the sink's own arrays would give every record a buffer as
    // large as the largest record so far, and make the sink allocate a new one of that size for the next.
    sink.pointee.records.append(CSVRecord(bytes: Array(sink.pointee.bytes[...]), fieldEnds: Array(sink.pointee.fieldEnds[...]),
                                          firstLine: 0, lastLine: 0, endOffset: 0))
    sink.pointee.bytes.removeAll(keepingCapacity: true)
    sink.pointee.fieldEnds.removeAll(keepingCapacity: true)
}
