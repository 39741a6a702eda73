#if canImport(Glibc)
import Glibc
#endif

/// Where a record that outgrew the scanner's limit ends, found by reading on in the file without keeping its bytes.
///
/// A record over the limit is inside a quoted field (a line break outside quotes ends a record). Either the quote is
/// unbalanced and the field swallowed the rows after it, or the field is legal and long. Taking every such record for
/// an unbalanced quote and reading again from its second line read a long field's text as rows: a row written inside
/// a display name became an account, planned for deletion. The two are told apart by reading on: a quote followed by
/// anything but a second quote, a comma or a line end, or the end of the file inside the field, means an unbalanced
/// quote; a quote followed by a comma or a line end closes the field, which was long. From there on the record is
/// known to be one, and it ends at the first line end outside quotes, whatever else is wrong in it (a stray quote in a
/// photo URL made it "unbalanced" again, and its text rows).
///
/// This only finds the end: the record is quarantined whole, none of its fields read. Until the field closes, the scan
/// stops at the first quote that breaks the rules, which for an unbalanced quote is the next quote in the file, so the
/// reads it costs are bounded by the distance to the next quoted field.
public enum CSVRecordEnd {
    static let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ",")

    /// Where the record ends: the offset after its last line, and the number of the line after it.
    public struct End: Equatable, Sendable {
        public var offset: Int64
        public var line: Int
    }

    /// Reads `path` from `offset`, the start of line `line`, inside a quoted field that began on an earlier line, or
    /// (`insideQuotes` false) at the start of a record that libcsv found malformed on a later line than its first. Nil
    /// when no quoted field over line breaks closes before a fault (the quote is unbalanced, or the fault is on the
    /// record's first line, and reading again from its second line is right), or when the file cannot be read.
    public static func find(path: String, from offset: Int64, line: Int, insideQuotes: Bool = true, blockSize: Int = 256 << 10) -> End? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var state = insideQuotes ? State.quoted : .fieldStart
        // Whether the quoted field being read has held a line break, and whether such a field has closed.
        var spans = insideQuotes
        var closed = false
        var position = offset
        var line = line
        let block = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: blockSize)
        defer { block.deallocate() }
        let (quote, comma) = (Self.quote, Self.comma)
        while true {
            let count = pread(fd, block.baseAddress!, blockSize, off_t(position))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                // The end of the file ends the record once the field over lines has closed (the file may end with its quote).
                return count == 0 && (closed || (state == .quoteInQuoted && spans)) ? End(offset: position, line: line + 1) : nil
            }
            for index in 0..<count {
                let byte = block[index]
                if !closed {
                    // libcsv's strict rules, until a field over line breaks closes with a comma or a line end.
                    switch state {
                    case .quoted:
                        if byte == 0x0A { spans = true }
                    case .quoteInQuoted:
                        guard byte == quote || byte == comma || byte == 0x0A || byte == 0x0D else { return nil }  // text after a quote
                        if byte != quote && spans { closed = true }
                    case .fieldStart, .unquoted:
                        if byte == quote && state == .unquoted { return nil }  // a quote inside an unquoted field
                        if byte == quote { spans = false }
                    case .ended:
                        break
                    }
                    // A record of one line ends, or a line break outside quotes, before any field over lines closed.
                    if !closed && (byte == 0x0A || byte == 0x0D) && state != .quoted { return nil }
                }
                state = state.after(byte)
                if state == .ended { return End(offset: position + Int64(index) + 1, line: line + 1) }
                if byte == 0x0A { line += 1 }
            }
            position += Int64(count)
        }
    }

    /// Where the scan stands in a record, read leniently: a quote opens a field only at its start, text after a closing
    /// quote goes on as unquoted text, and the record ends at a line feed outside quotes (after any CRs).
    enum State: Equatable {
        case quoted
        /// A quote inside a quoted field: the field's end, or the first of two quotes that stand for one.
        case quoteInQuoted
        case fieldStart
        case unquoted
        /// The record ended with the byte just read.
        case ended

        func after(_ byte: UInt8) -> State {
            let (quote, comma) = (CSVRecordEnd.quote, CSVRecordEnd.comma)
            switch self {
            case .quoted:
                return byte == quote ? .quoteInQuoted : .quoted
            case .quoteInQuoted:
                if byte == quote { return .quoted }
                return byte == comma ? .fieldStart : byte == 0x0A ? .ended : .unquoted
            case .fieldStart:
                return byte == quote ? .quoted : byte == comma ? .fieldStart : byte == 0x0A ? .ended : .unquoted
            case .unquoted:
                return byte == comma ? .fieldStart : byte == 0x0A ? .ended : .unquoted
            case .ended:
                return .ended
            }
        }
    }
}

/// Files whose lines end with a carriage return alone (classic Mac OS, and Excel's "CSV (Macintosh)"). Every reader
/// here finds lines by their line feeds, so such a file is one line: its line numbers say nothing, a header row ran to
/// the end of the file, and a last line feed made the whole file one malformed row. It is refused with the way out.
public enum CSVLineEnds {
    /// Whether carriage returns not followed by a line feed outnumber line feeds in the file's first `sample` bytes.
    /// A stray CR in a file of LF lines (a row split by one is quarantined) does not make it one. Quotes are not
    /// followed: one stray quote in a first row hid every CR after it.
    public static func endWithCarriageReturns(path: String, sample: Int = 64 << 10) -> Bool {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: sample + 1)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, sample + 1, 0) }
        guard count > 0 else { return false }
        var loneCarriageReturns = 0, lineFeeds = 0
        for index in 0..<min(count, sample) {
            switch bytes[index] {
            case 0x0A: lineFeeds += 1
            case 0x0D where index + 1 >= count || bytes[index + 1] != 0x0A: loneCarriageReturns += 1
            default: break
            }
        }
        return loneCarriageReturns > lineFeeds
    }

    /// The refusal, naming the fix.
    public static let refusal = "its lines end with a carriage return alone (classic Mac line ends), which idpipe does not read: "
        + "convert them to line feeds first (e.g. tr '\\r' '\\n' < old.csv > new.csv)"
}
