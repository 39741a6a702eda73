import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

/// Streams the accounts of a `firebase auth:export` JSON file: `{"users": [` objects `]}`.
///
/// The file is read in chunks of `batchBytes`. Each chunk is cut after its last complete user object and
/// split into parts at object boundaries, so the objects are decoded on all cores. Boundaries come from the
/// export's layout (each user is `JSON.stringify(user, null, 2)`, so it closes with `}` at the start of a line,
/// and nothing nested does; JSON strings cannot hold a raw newline, so that `}` is never inside a string). A file in another layout is split by a full scan, and decoded on one core.
public final class ExportJSONSource: AccountSource {
    public let path: String
    public let totalBytes: Int64
    public let batchBytes: Int

    private let fd: Int32
    private var offset: Int64
    private var line: Int
    private var layout: Layout
    private var carry: [UInt8] = []
    private var emittedLast = false
    /// Where the first object may start (after `{"users": [`); -1 when resuming past it.
    private var prologueEnd: Int64 = -1

    enum Layout: String { case export, generic }

    /// 1.5 MiB a batch keeps a plan of 1M accounts at 143-145 MB; with a batch read ahead while one is merged, 2 MiB
    /// peaked at 148-151 MB, over the 150 MB aim, for about 0.05 s less.
    public static let defaultBatchBytes = 3 << 19

    /// How the normalize stage reads the export (nil with it off), for the other problems of an account that cannot be read.
    let normalize: AccountNormalizer.Options?

    public init(path: String, checkpoint: InputCheckpoint = InputCheckpoint(), batchBytes: Int = defaultBatchBytes,
                normalize: AccountNormalizer.Options? = AccountNormalizer.Options(secondsMayPassForMilliseconds: true)) throws {
        self.path = path
        self.normalize = normalize
        self.batchBytes = batchBytes
        fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw InputError(path: path, message: "cannot open: \(String(cString: strerror(errno)))") }
        var info = stat()
        fstat(fd, &info)
        totalBytes = Int64(info.st_size)
        offset = checkpoint.offset
        line = checkpoint.line
        layout = Layout(rawValue: checkpoint.state ?? "") ?? .export
        if checkpoint.offset == 0 { try readPrologue() }
        // A plan stopped right after its last batch was committed has read everything, the closing ]} included.
        if checkpoint.offset > 0 && checkpoint.offset >= totalBytes { emittedLast = true }
    }

    deinit { close(fd) }

    /// Reads `{"users": [` and notes whether the objects follow in the export's layout.
    private func readPrologue() throws {
        var head = [UInt8](repeating: 0, count: 4096)
        let count = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, 0) }
        guard count > 0 else { throw InputError(path: path, position: SourcePosition(file: path, line: 1), message: "the file is empty (expected {\"users\": [ … ]})") }
        try head.withUnsafeBufferPointer { buffer in
            var cursor = JSONCursor(bytes: buffer, start: 0, end: count)
            if count >= 3 && buffer[0] == 0xEF && buffer[1] == 0xBB && buffer[2] == 0xBF { cursor.position = 3 }
            do throws(JSONCursor.SyntaxError) {
                try cursor.expect(UInt8(ascii: "{"))
                let key = try cursor.key()
                guard String(decoding: key, as: UTF8.self) == "users" else {
                    throw cursor.fail("expected the key \"users\" (an auth:export file starts with {\"users\": [)")
                }
                try cursor.expect(UInt8(ascii: ":"))
                try cursor.expect(UInt8(ascii: "["))
            } catch {
                throw InputError(path: path, position: SourcePosition(file: path, line: 1 + cursor.newlines), message: "not an auth:export JSON file: \(error.message)")
            }
            offset = Int64(cursor.position)
            prologueEnd = offset
            line = 1 + cursor.newlines
            let rest = UnsafeBufferPointer(rebasing: buffer[cursor.position..<count])
            layout = Self.opensInExportLayout(rest) ? .export : .generic
        }
    }

    public func nextBatch(records wanted: Int, parts: Int) throws -> (any RawBatch)? {
        guard !emittedLast else { return nil }
        var buffer = carry
        carry = []
        // Read until the buffer holds at least one complete object (or the file ends).
        var cut = 0
        while true {
            let start = buffer.count
            let readFrom = offset + Int64(start)
            if readFrom < totalBytes {
                let want = max(batchBytes, buffer.count)
                // Read into new room after the bytes carried over (filling the room with zeros first cost as much as
                // counting its lines).
                var count = 0
                var failure: Int32 = 0
                buffer = [UInt8](unsafeUninitializedCapacity: start + want) { room, initialized in
                    if start > 0 { buffer.withUnsafeBufferPointer { old in room.baseAddress!.initialize(from: old.baseAddress!, count: start) } }
                    count = pread(fd, room.baseAddress! + start, want, off_t(readFrom))
                    if count < 0 { failure = errno }
                    initialized = start + max(count, 0)
                }
                guard count >= 0 else { throw InputError(path: path, message: "read failed: \(String(cString: strerror(failure)))") }
                if count == 0 { throw InputError.shrank(path, line: line, at: readFrom, size: totalBytes) }
            }
            if offset + Int64(buffer.count) >= totalBytes {
                cut = buffer.count
                break
            }
            if let found = layout == .export ? Self.lastExportBoundary(buffer) : Self.lastGenericBoundary(buffer) {
                cut = found
                break
            }
        }
        let isLast = offset + Int64(cut) >= totalBytes
        if cut < buffer.count { carry = Array(buffer[cut...]) }
        buffer.removeLast(buffer.count - cut)

        let boundaries = layout == .export ? Self.partBoundaries(buffer, parts: parts) : [0, buffer.count]
        var partLines: [Int] = [line]
        for index in 1..<boundaries.count {
            partLines.append(partLines[index - 1] + Newlines.count(buffer, boundaries[index - 1]..<boundaries[index]))
        }
        let batchOffset = offset
        offset += Int64(cut)
        line = partLines.removeLast()
        emittedLast = isLast
        return ExportJSONBatch(
            path: path, bytes: buffer, boundaries: boundaries, partLines: partLines, baseOffset: batchOffset,
            isLast: isLast, exportLayout: layout == .export, atArrayStart: batchOffset == prologueEnd, normalize: normalize,
            checkpoint: InputCheckpoint(offset: offset, line: line, records: 0, state: layout.rawValue))
    }

    // MARK: - Finding object boundaries

    /// Whether the first object starts as the export writes it: `{` at the start of a line, its first key indented by
    /// two spaces. A line start alone is not enough: in `json.dump(indent=0)` output every `}`, nested ones too,
    /// starts a line, and parts cut there began inside an account (the plan stopped, "cannot find where the next
    /// account starts").
    static func opensInExportLayout(_ rest: UnsafeBufferPointer<UInt8>) -> Bool {
        rest.starts(with: "\n{\n  \"".utf8) || rest.starts(with: "\r\n{\r\n  \"".utf8)
    }

    /// Just past the last `}` that starts a line and is followed by a comma, a newline or the closing bracket.
    static func lastExportBoundary(_ buffer: [UInt8]) -> Int? {
        buffer.withUnsafeBufferPointer { bytes in
            var index = bytes.count - 3
            while index >= 0 {
                if bytes[index] == 0x0A && bytes[index + 1] == UInt8(ascii: "}") {
                    let next = bytes[index + 2]
                    if next == UInt8(ascii: ",") || next == 0x0A || next == 0x0D || next == UInt8(ascii: "]") { return index + 2 }
                }
                index -= 1
            }
            return nil
        }
    }

    /// Cuts a chunk into `parts` pieces at object boundaries near equal sizes.
    static func partBoundaries(_ buffer: [UInt8], parts: Int) -> [Int] {
        var result = [0]
        guard parts > 1 else { return [0, buffer.count] }
        buffer.withUnsafeBufferPointer { bytes in
            for part in 1..<parts {
                var index = max(result.last!, bytes.count * part / parts)
                while index + 2 < bytes.count {
                    if bytes[index] == 0x0A && bytes[index + 1] == UInt8(ascii: "}") && bytes[index + 2] == UInt8(ascii: ",") {
                        result.append(index + 2)
                        break
                    }
                    index += 1
                }
            }
        }
        result.append(buffer.count)
        return result
    }

    /// For other layouts: scans strings and nesting to find the end of the last complete object.
    static func lastGenericBoundary(_ buffer: [UInt8]) -> Int? {
        buffer.withUnsafeBufferPointer { bytes in
            var depth = 0, inString = false, escaped = false
            var last: Int?
            for index in 0..<bytes.count {
                let byte = bytes[index]
                if inString {
                    if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 && byte == UInt8(ascii: "}") { last = index + 1 }
                    if depth < 0 { return last }
                default: break
                }
            }
            return last
        }
    }
}

