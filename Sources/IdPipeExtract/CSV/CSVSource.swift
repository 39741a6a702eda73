import IdPipeCore
import IdPipeCSV

/// Turns one CSV record into an account (or the issue with it). Called concurrently.
protocol CSVRecordDecoder: Sendable {
    func decode(_ record: CSVRecord) -> Result<Account, RecordIssue>
}

/// Streams accounts from a CSV file through libcsv; records are decoded on the worker pool.
public final class CSVSource: AccountSource {
    public let path: String
    public let totalBytes: Int64
    private let reader: CSVRecordReader
    private let decoder: any CSVRecordDecoder
    private var line: Int
    private var offset: Int64
    private var finished = false

    init(path: String, checkpoint: InputCheckpoint, decoder: any CSVRecordDecoder, reader: CSVRecordReader) throws {
        self.path = path
        self.decoder = decoder
        self.reader = reader
        self.line = checkpoint.line
        self.offset = checkpoint.offset
        totalBytes = FileInfo.size(path)
    }

    /// A `firebase auth:export` CSV: no header, 52 columns and a trailing comma.
    public static func authExport(path: String, checkpoint: InputCheckpoint = InputCheckpoint()) throws -> CSVSource {
        let reader = try openReader(path, checkpoint)
        return try CSVSource(path: path, checkpoint: checkpoint, decoder: ExportCSVDecoder(), reader: reader)
    }

    /// A CSV with a header row, read through a column mapping. The header is read again on resume.
    public static func mapped(path: String, mapping: ColumnMapping, timestamps: TimestampFormat, checkpoint: InputCheckpoint = InputCheckpoint()) throws -> CSVSource {
        let headerReader = try openReader(path, InputCheckpoint())
        guard case .record(let header)? = try headerReader.next() else {
            throw InputError(path: path, position: SourcePosition(file: path, line: 1), message: "expected a header row")
        }
        let decoder = try MappedCSVDecoder(header: header, mapping: mapping, timestamps: timestamps, path: path)
        let start = checkpoint.offset > 0 ? checkpoint : InputCheckpoint(offset: header.endOffset, line: header.lastLine + 1)
        return try CSVSource(path: path, checkpoint: start, decoder: decoder, reader: try openReader(path, start))
    }

    private static func openReader(_ path: String, _ checkpoint: InputCheckpoint) throws -> CSVRecordReader {
        do {
            return try CSVRecordReader(path: path, offset: checkpoint.offset, line: checkpoint.line)
        } catch let error as CSVReadError {
            throw InputError(path: path, message: error.message)
        }
    }

    public func nextBatch(records: Int, parts: Int) throws -> (any RawBatch)? {
        guard !finished else { return nil }
        var items: [CSVItem] = []
        items.reserveCapacity(records)
        do {
            while items.count < records, let item = try reader.next() {
                items.append(item)
            }
        } catch let error as CSVReadError {
            throw InputError(path: path, message: error.message)
        }
        if items.count < records { finished = true }
        guard let last = items.last else { return nil }
        switch last {
        case .record(let record):
            offset = record.endOffset
            line = record.lastLine + 1
        case .malformed(let bad):
            offset = bad.endOffset
            line = bad.firstLine + 1
        }
        return CSVBatch(path: path, items: items, decoder: decoder, parts: parts, checkpoint: InputCheckpoint(offset: offset, line: line))
    }
}

struct CSVBatch: RawBatch {
    let path: String
    let items: [CSVItem]
    let decoder: any CSVRecordDecoder
    let parts: Int
    let checkpoint: InputCheckpoint

    var partCount: Int { max(1, min(parts, items.count)) }

    func decode(part: Int, each: (consuming DecodedRecord) -> Void) {
        for item in items[BatchParts.range(part, of: partCount, count: items.count)] {
            switch item {
            case .malformed(let bad):
                let position = SourcePosition(file: path, line: bad.firstLine, byteOffset: 0)
                // A record over several lines: say where the parser found the fault, which may be far below its start.
                let noticed = bad.lastLine > bad.firstLine ? " (found on line \(bad.lastLine))" : ""
                each(.malformed(QuarantineEntry(position: position, localId: nil, field: "record", reason: bad.reason + noticed)))
            case .record(let record):
                let position = SourcePosition(file: path, line: record.firstLine, byteOffset: record.endOffset)
                switch decoder.decode(record) {
                case .success(let account): each(.account(account, position))
                case .failure(let issue):
                    let uid = record.count > 0 ? record.field(0).flatMap { $0.isEmpty ? nil : $0 } : nil
                    each(.malformed(QuarantineEntry(position: position, localId: uid, field: issue.field, reason: issue.reason)))
                }
            }
        }
    }
}
