import IdPipeCore
import IdPipeCSV
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Turns one CSV record into an account (or the issue with it). Called concurrently.
protocol CSVRecordDecoder: Sendable {
    func decode(_ record: CSVRecord) -> Result<Account, RecordIssue>
    /// The record's fields as bytes for the plan's fast path (`AccountProcessor.fastPath`); false when it is not read so,
    /// and `decode` decides.
    func scanPlain(_ record: CSVRecordView, into account: inout AccountBytes) -> Bool
    /// The column of the account's id, to name it in the quarantine entry of a row libcsv could not read.
    var idColumn: Int? { get }
    /// How many fields a row has at least: a last row with fewer, without a line end, was cut short.
    var fieldsAtLeast: Int? { get }
}

extension CSVRecordDecoder {
    func scanPlain(_: CSVRecordView, into _: inout AccountBytes) -> Bool { false }
    var fieldsAtLeast: Int? { nil }
}

/// Streams accounts from a CSV file. The file is read in chunks (1 MiB), each cut after its last record into parts
/// that libcsv reads on all cores (`CSVPart`); a part that did not end where the next began (a broken quote near a
/// cut) has the rest of its chunk read again in one go, so every record is read as one pass over the file would.
public final class CSVSource: AccountSource {
    public let path: String
    public let totalBytes: Int64
    public let batchBytes: Int
    private let decoder: any CSVRecordDecoder
    private let fd: Int32
    /// Where the next chunk starts (between records), and its line.
    private var offset: Int64
    private var line: Int
    private var readSize: Int
    public let start: InputCheckpoint

    /// 1 MiB: about as many records as the JSON export's 1.5 MiB batches (`ExportJSONSource.defaultBatchBytes`), a CSV
    /// record being about half as long. With the batches decoded from a queue, three or four are in memory at a time,
    /// and at 1.5 MiB a 1M-row plan peaked at 141-158 MB; at 1 MiB, 134-142 MB, in the same time.
    public static let defaultBatchBytes = 1 << 20

    init(path: String, checkpoint: InputCheckpoint, decoder: any CSVRecordDecoder, batchBytes: Int) throws {
        self.path = path
        self.decoder = decoder
        self.batchBytes = max(batchBytes, 64)
        readSize = self.batchBytes
        line = checkpoint.line
        offset = checkpoint.offset
        start = checkpoint
        fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw InputError(path: path, message: "cannot open: \(String(cString: strerror(errno)))") }
        totalBytes = FileInfo.size(path)
    }

    deinit { close(fd) }

    /// A `firebase auth:export` CSV: no header, 52 columns and a trailing comma.
    public static func authExport(path: String, checkpoint: InputCheckpoint = InputCheckpoint(), batchBytes: Int = defaultBatchBytes) throws -> CSVSource {
        // (A file whose lines end with a CR alone is refused as `forFile` opens it.)
        return try CSVSource(path: path, checkpoint: checkpoint, decoder: ExportCSVDecoder.forFile(path), batchBytes: batchBytes)
    }

    /// A CSV with a header row, read through a column mapping. The header is read again on resume.
    /// `normalize`: how the normalize stage reads the table (nil with it off), for the other problems of a row that
    /// cannot be read.
    /// `zone`: where its times written without one were written (`source.timestamp_zone`).
    /// `nullCells`: the texts its cells hold for NULL (`source.null_values`).
    public static func mapped(path: String, mapping: ColumnMapping, timestamps: TimestampFormat, zone: TimestampZone? = nil,
                              nullCells: [String] = SourceConfig.defaultNullValues, normalize: AccountNormalizer.Options? = nil,
                              checkpoint: InputCheckpoint = InputCheckpoint(), batchBytes: Int = defaultBatchBytes) throws -> CSVSource {
        let headerReader = try readingCSV(path) { try CSVRecordReader(path: path) }
        guard case .record(let header)? = try headerReader.next() else {
            throw InputError(path: path, position: SourcePosition(file: path, line: 1), message: "expected a header row")
        }
        let decoder = try MappedCSVDecoder(header: header, mapping: mapping, timestamps: timestamps, zone: zone, nullCells: nullCells,
                                             normalize: normalize, path: path)
        let start = checkpoint.offset > 0 ? checkpoint : InputCheckpoint(offset: header.endOffset, line: header.lastLine + 1)
        return try CSVSource(path: path, checkpoint: start, decoder: decoder, batchBytes: batchBytes)
    }

    public func nextBatch(records _: Int, parts: Int) throws -> (any RawBatch)? {
        while offset < totalBytes {
            let want = Int(min(Int64(readSize), totalBytes - offset))
            var count = 0
            var failure: Int32 = 0
            let bytes = [UInt8](unsafeUninitializedCapacity: want) { room, initialized in
                while count < want {
                    let read = pread(fd, room.baseAddress! + count, want - count, off_t(offset + Int64(count)))
                    if read < 0 && errno == EINTR { continue }
                    if read <= 0 {
                        failure = read < 0 ? errno : 0
                        break
                    }
                    count += read
                }
                initialized = count
            }
            guard failure == 0 else { throw InputError(path: path, message: "read failed: \(String(cString: strerror(failure)))") }
            guard count == want else { throw InputError.shrank(path, line: line, at: offset + Int64(count), size: totalBytes) }
            let fileEnd = offset + Int64(count) >= totalBytes
            let start = offset == 0 && bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            var cuts = bytes.withUnsafeBufferPointer { CSVPart.cuts($0, from: start, to: count, parts: parts) }
            if fileEnd {
                // The last part ends with the file, whatever its last bytes.
                if cuts == nil { cuts = [start] }
                if cuts!.count > 1 && cuts!.last! < count { cuts!.removeLast() }
                if cuts!.count == 1 || cuts!.last! < count { cuts!.append(count) }
            } else if cuts == nil {
                // No newline after balanced quotes: one part to the last newline, where a broken quote will be found.
                guard let newline = bytes.lastIndex(of: 0x0A), newline >= start else {
                    readSize *= 2  // not even one line: read more
                    continue
                }
                cuts = [start, newline + 1]
            }
            // Each part's first line, and the line after the last part (where the next chunk starts).
            var lines = [line]
            bytes.withUnsafeBytes { raw in
                for index in 1..<cuts!.count { lines.append(lines[index - 1] + Newlines.count(raw, cuts![index - 1]..<cuts![index])) }
            }
            let next = lines.removeLast()
            let batch = CSVBatch(path: path, bytes: bytes, base: offset, cuts: cuts!, lines: lines, fileEnd: fileEnd, decoder: decoder,
                                 end: CSVBatch.EndBox())
            offset += Int64(cuts!.last!)
            line = next
            readSize = batchBytes
            return batch
        }
        return nil
    }

    /// Each chunk's end is guessed from its bytes (`CSVPart.cuts`: the last newline with the quotes balanced), and the
    /// next chunk is read from there while this one is decoded; the plan checks the guess once it is. When the next
    /// chunk waited for the decoding to say where it ended, one core was idle at the end of each chunk.
    public func follows(_ next: any RawBatch, after batch: any RawBatch) -> Bool {
        guard let batch = batch as? CSVBatch, let next = next as? CSVBatch else { return true }
        let end = batch.end
        return end.offset == next.base && end.line == next.lines[0]
    }

    /// A broken quote made the guess wrong: reads on from where the decoding stopped (as one pass would have). A chunk
    /// that ended where it started (a record longer than it) is read again, twice as long.
    public func readAgain(after batch: any RawBatch) {
        guard let batch = batch as? CSVBatch else { return }
        let end = batch.end
        readSize = end.offset == batch.base + Int64(batch.cuts[0]) ? batch.bytes.count * 2 : batchBytes
        offset = end.offset
        line = end.line
    }
}

/// A chunk of a CSV file cut into parts, each read by its own scanner on a worker (`CSVPart`).
final class CSVBatch: RawBatch {
    let path: String
    let bytes: [UInt8]
    /// The file offset of `bytes[0]`.
    let base: Int64
    /// Part `i` is `bytes[cuts[i]..<cuts[i + 1]]`, starting on line `lines[i]`.
    let cuts: [Int]
    let lines: [Int]
    /// The chunk ends with the file.
    let fileEnd: Bool
    let decoder: any CSVRecordDecoder
    /// Where each part's reading stopped, filled as the parts are decoded.
    private let partEnds: Mutex<[CSVPart.End?]>
    /// Where the chunk's reading stopped: set by its last part, or by the rest read in one go (`remainder`), which
    /// shares it.
    final class EndBox: Sendable {
        let value = Mutex<CSVPart.End?>(nil)
    }
    private let endBox: EndBox

    init(path: String, bytes: [UInt8], base: Int64, cuts: [Int], lines: [Int], fileEnd: Bool, decoder: any CSVRecordDecoder, end: EndBox) {
        self.path = path
        self.bytes = bytes
        self.base = base
        self.cuts = cuts
        self.lines = lines
        self.fileEnd = fileEnd
        self.decoder = decoder
        endBox = end
        partEnds = Mutex([CSVPart.End?](repeating: nil, count: cuts.count - 1))
    }

    var partCount: Int { cuts.count - 1 }
    var inputBytes: (bytes: [UInt8], start: Int64)? { (bytes, base) }

    /// Where reading stopped (once decoded): where the next chunk must start (`CSVSource.follows`).
    var end: CSVPart.End {
        endBox.value.withLock { $0 } ?? CSVPart.End(offset: base + Int64(cuts[0]), line: lines[0], betweenRecords: true)
    }

    var checkpoint: InputCheckpoint {
        let end = self.end
        return InputCheckpoint(offset: end.offset, line: end.line)
    }

    func remainder() -> (after: Int, batch: any RawBatch)? {
        let ends = partEnds.withLock { $0 }
        guard let part = ends.dropLast().firstIndex(where: { $0?.betweenRecords == false }), let stop = ends[part] else { return nil }
        let restart = Int(stop.offset - base)
        return (part, CSVBatch(path: path, bytes: bytes, base: base, cuts: [restart, cuts.last!], lines: [stop.line], fileEnd: fileEnd,
                               decoder: decoder, end: endBox))
    }

    func decode(part: Int, each: (consuming DecodedRecord) -> Void) {
        read(part: part, fastPath: FullPathOnly(), each: each, plain: { _ in })
    }

    func decode(part: Int, fastPath: AccountProcessor, each: (consuming DecodedRecord) -> Void, plain: (borrowing PlainRecord) -> Void) {
        read(part: part, fastPath: fastPath, each: each, plain: plain)
    }

    func decodeIds(part: Int, each: (consuming DecodedRecord) -> Void, plain: (borrowing PlainRecord) -> Void) {
        read(part: part, fastPath: IdsOnly(), each: each, plain: plain)
    }

    private func read(part: Int, fastPath: some FastPathCheck, each: (consuming DecodedRecord) -> Void, plain: (borrowing PlainRecord) -> Void) {
        let last = part == partCount - 1
        var scanned = AccountBytes()
        let stop: CSVPart.End
        do {
            stop = try bytes.withUnsafeBufferPointer { buffer throws(CSVReadError) in
                try CSVPart.read(buffer, base: base, start: cuts[part], end: cuts[part + 1], line: lines[part], fileEnd: fileEnd && last,
                                 path: path, last: last) { item in
                    switch item {
                    case .malformed(let bad):
                        let position = SourcePosition(file: path, line: bad.firstLine, byteOffset: 0)
                        // A record over several lines: say where the parser found the fault, which may be far below its start.
                        let noticed = bad.lastLine > bad.firstLine ? " (found on line \(bad.lastLine))" : ""
                        // The id, when it stands plain on the first line: the reviewer sees whose row it was.
                        let uid = decoder.idColumn.flatMap { bad.plainField($0, in: buffer, base: base) }
                        each(.malformed(QuarantineEntry(position: position, localId: uid, field: "record", reason: bad.reason + noticed)))
                    case .record(let view):
                        var normalized = false
                        if type(of: fastPath).enabled {
                            scanned.reset()
                            if decoder.scanPlain(view, into: &scanned) {
                                let verdict = fastPath.verdict(scanned)
                                if case .plain(let account) = verdict {
                                    plain(PlainRecord(account: account, localId: scanned.localId, file: path, line: view.firstLine, byteOffset: view.endOffset))
                                    return
                                }
                                normalized = verdict.skipsNormalize
                            }
                        }
                        let record = view.record()
                        let position = SourcePosition(file: path, line: record.firstLine, byteOffset: record.endOffset)
                        switch decoder.decode(record) {
                        case .success(let account): each(.account(account, position, normalized: normalized))
                        case .failure(let issue):
                            let uid = record.count > 0 ? record.field(0).flatMap { $0.isEmpty ? nil : $0 } : nil
                            // A file cut short ends inside its last row, which then has too few fields: said, as the
                            // JSON export's reader says it.
                            let cut = record.count < decoder.fieldsAtLeast ?? 0 && fileEnd && last
                                && record.endOffset == base + Int64(bytes.count) && bytes.last != 0x0A
                            let reason = issue.reason + (cut ? " (the file ends inside this row, without a line end: cut short?)" : "")
                            each(.malformed(QuarantineEntry(position: position, localId: uid, field: issue.field, reason: reason,
                                                            otherIssues: issue.others)))
                        }
                    }
                }
            }
        } catch {
            each(.fatal(InputError(path: path, message: error.message)))
            return
        }
        partEnds.withLock { $0[part] = stop }
        if last { endBox.value.withLock { $0 = stop } }
    }
}
