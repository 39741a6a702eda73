#if canImport(Glibc)
import Glibc
#endif

/// Where a record that outgrew the scanner's limit ends, found by reading on in the file without keeping its bytes.
///
/// A record over the limit is inside a quoted field (a line break outside quotes ends a record). Either the quote is
/// unbalanced and the field swallowed the rows after it, or the field is legal and long. Taking every such record for
/// an unbalanced quote and reading again from its second line read a long field's text as rows: a row written inside
/// a display name became an account, planned for deletion. The two are told apart by reading on with libcsv's strict
/// rules for quotes: a fault or the end of the file inside the field means an unbalanced quote; a line break after the
/// field and the rest of its record means a long record, which ends there.
///
/// This only finds the end: the record is quarantined whole, none of its fields read. The scan stops at the first
/// quote that breaks the rules, which for an unbalanced quote is the next quote in the file, so the reads it costs
/// are bounded by the distance to the next quoted field.
public enum CSVRecordEnd {
    /// Where the record ends: the offset after its last line, and the number of the line after it.
    public struct End: Equatable, Sendable {
        public var offset: Int64
        public var line: Int
    }

    /// Reads `path` from `offset`, the start of line `line`, inside a quoted field; nil when the quote is unbalanced
    /// (a quote breaks the rules, or the file ends inside the field) or the file cannot be read.
    public static func find(path: String, from offset: Int64, line: Int, blockSize: Int = 256 << 10) -> End? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var state = State.quoted
        var position = offset
        var line = line
        let block = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: blockSize)
        defer { block.deallocate() }
        while true {
            let count = pread(fd, block.baseAddress!, blockSize, off_t(position))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                // The end of the file ends the record, except inside a quoted field.
                return count == 0 && state != .quoted ? End(offset: position, line: line + 1) : nil
            }
            for index in 0..<count {
                let byte = block[index]
                switch state.after(byte) {
                case nil: return nil
                case .ended?:
                    return End(offset: position + Int64(index) + 1, line: line + 1)
                case let next?:
                    if byte == 0x0A { line += 1 }
                    state = next
                }
            }
            position += Int64(count)
        }
    }

    /// Where the scan stands, by libcsv's strict rules.
    enum State: Equatable {
        case quoted
        /// A quote inside a quoted field: the field's end, or the first of two quotes that stand for one.
        case quoteInQuoted
        case fieldStart
        case unquoted
        /// A CR after the record: only a LF may follow (a lone CR inside the line would split the row).
        case carriageReturn
        /// The record ended with the byte just read.
        case ended

        /// The state after `byte`; nil when the byte breaks the rules.
        func after(_ byte: UInt8) -> State? {
            let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ",")
            switch self {
            case .quoted:
                return byte == quote ? .quoteInQuoted : .quoted
            case .quoteInQuoted:
                switch byte {
                case quote: return .quoted
                case comma: return .fieldStart
                case 0x0A: return .ended
                case 0x0D: return .carriageReturn
                default: return nil  // text after a closing quote
                }
            case .fieldStart, .unquoted:
                switch byte {
                case quote: return self == .fieldStart ? .quoted : nil  // a quote inside an unquoted field
                case comma: return .fieldStart
                case 0x0A: return .ended
                case 0x0D: return .carriageReturn
                default: return .unquoted
                }
            case .carriageReturn:
                return byte == 0x0A ? .ended : nil
            case .ended:
                return nil
            }
        }
    }
}

/// Files whose lines end with a carriage return alone (classic Mac OS, and Excel's "CSV (Macintosh)"). Every reader
/// here finds lines by their line feeds, so such a file is one line: its line numbers say nothing, a header row ran to
/// the end of the file, and a last line feed made the whole file one malformed row. It is refused with the way out.
public enum CSVLineEnds {
    /// Whether, outside quotes, carriage returns not followed by a line feed outnumber line feeds in the file's first
    /// `sample` bytes. A stray CR in a file of LF lines (a row split by one is quarantined) does not make it one.
    public static func endWithCarriageReturns(path: String, sample: Int = 64 << 10) -> Bool {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: sample + 1)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, sample + 1, 0) }
        guard count > 0 else { return false }
        var quoted = false
        var loneCarriageReturns = 0, lineFeeds = 0
        for index in 0..<min(count, sample) {
            switch bytes[index] {
            case UInt8(ascii: "\""): quoted.toggle()
            case 0x0A where !quoted: lineFeeds += 1
            case 0x0D where !quoted && (index + 1 >= count || bytes[index + 1] != 0x0A): loneCarriageReturns += 1
            default: break
            }
        }
        return loneCarriageReturns > lineFeeds
    }

    /// The refusal, naming the fix.
    public static let refusal = "its lines end with a carriage return alone (classic Mac line ends), which idpipe does not read: "
        + "convert them to line feeds first (e.g. tr '\\r' '\\n' < old.csv > new.csv)"
}
