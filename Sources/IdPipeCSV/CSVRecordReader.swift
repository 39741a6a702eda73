#if canImport(Glibc)
import Glibc
#endif

/// Streams the records of a CSV file through the scanner (`CSVScanner`), a line at a time: the side inputs, and the
/// header of a mapped CSV. (The export is read in chunks, each cut in parts read at once: `CSVPart`.)
public final class CSVRecordReader {
    public let path: String
    private let fd: Int32
    private let scanner: CSVScanner
    private var chunk: [UInt8]
    private var chunkStart: Int64 = 0
    private var chunkLength = 0
    private var cursor = 0
    private var atEOF = false
    private var pending: [CSVItem] = []
    private var pendingIndex = 0
    private var finished = false

    /// Opens `path` and starts at `offset`, which is the start of line `line` (both from an earlier record's end).
    public init(path: String, offset: Int64 = 0, line: Int = 1, chunkSize: Int = 1 << 20, maxRecordBytes: Int = 64 << 10) throws {
        self.path = path
        fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw CSVReadError(path: path, message: "cannot open: \(String(cString: strerror(errno)))") }
        if offset == 0 && CSVLineEnds.endWithCarriageReturns(path: path) {
            close(fd)
            throw CSVReadError(path: path, message: CSVLineEnds.refusal)
        }
        chunk = [UInt8](repeating: 0, count: chunkSize)
        do {
            scanner = try CSVScanner(offset: offset, line: line, maxRecordBytes: maxRecordBytes, path: path)
        } catch {
            close(fd)
            throw CSVReadError(path: path, message: error.message)
        }
        restart(at: offset)
        if offset == 0 { try skipByteOrderMark() }
    }

    deinit { close(fd) }

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

    /// Hands each item to `body` as the scanner gives it (a record as a view into its buffers, valid during the call:
    /// no copy of it is made), to the end of the file or the first error `body` throws.
    public func forEach(_ body: (CSVItemView) throws -> Void) throws {
        // First what `next` has read and not handed over yet.
        while pendingIndex < pending.count {
            defer { pendingIndex += 1 }
            switch pending[pendingIndex] {
            case .record(let record): try record.withView { try body(.record($0)) }
            case .malformed(let bad): try body(.malformed(bad))
            }
        }
        pending.removeAll(keepingCapacity: true)
        pendingIndex = 0
        var failure: (any Error)?
        while !finished && failure == nil {
            try step { item in
                guard failure == nil else { return }
                do { try body(item) } catch { failure = error }
            }
        }
        if let failure { throw failure }
    }

    /// Feeds the scanner the next whole line (or finishes at the end of the file).
    private func step() throws {
        try step { self.pending.append($0.item) }
    }

    private func step(_ collect: (CSVItemView) -> Void) throws {
        if cursor >= chunkLength {
            if atEOF {
                finished = true
                if case .restart(let offset, _)? = scanner.finish(at: chunkStart + Int64(chunkLength), collect) {
                    finished = false
                    restart(at: offset)
                }
                return
            }
            return try fill()
        }
        let available = chunkLength - cursor
        let newline = chunk.withUnsafeBytes { memchr($0.baseAddress! + cursor, 0x0A, available) }
        let lineLength: Int
        if let newline {
            lineLength = chunk.withUnsafeBytes { newline - UnsafeMutableRawPointer(mutating: $0.baseAddress!) } - cursor + 1
        } else if atEOF {
            lineLength = available
        } else {
            return try fill()  // keep the partial line and read more
        }
        let next = chunk.withUnsafeBufferPointer { buffer in
            scanner.feed(UnsafeBufferPointer(rebasing: buffer[cursor..<cursor + lineLength]), at: chunkStart + Int64(cursor), collect)
        }
        cursor += lineLength
        if case .restart(let offset, _) = next { restart(at: offset) }
    }

    /// Reads from `offset` again (the scanner has been told where it stands).
    private func restart(at offset: Int64) {
        chunkStart = offset
        chunkLength = 0
        cursor = 0
        atEOF = false
        finished = false
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
}

/// A part of a chunk of a CSV file held in memory, read at once by its own scanner: the chunk is cut in parts at
/// newlines where the quotes before are balanced, which for well-formed CSV are record boundaries, and the parts are
/// read on all cores. Whether a cut was one shows at the part's end (`End.betweenRecords`); where it was not (a broken
/// quote near it), the caller reads the rest of the chunk in one go from the part's last record boundary.
public enum CSVPart {
    /// Where a part's reading stopped.
    public struct End: Sendable, Equatable {
        /// The last place between records: the part's end when `betweenRecords`, else where its unfinished record starts.
        public var offset: Int64
        /// The line that starts there.
        public var line: Int
        /// Whether the part ended between records (its end was a record boundary).
        public var betweenRecords: Bool

        public init(offset: Int64, line: Int, betweenRecords: Bool) {
            self.offset = offset
            self.line = line
            self.betweenRecords = betweenRecords
        }
    }

    /// Reads `bytes[start..<end]` (`bytes[0]` is at file offset `base`), `start` being the start of line `line` between
    /// records, and `end` a line's end or, with `fileEnd`, the end of the file. Each item goes to `emit`, in order.
    /// `path` is the file the bytes are from, where a record longer than the scanner keeps is followed to its end
    /// (`CSVRecordEnd`): past `end` only when `last`, the chunk's last part, whose reading may stop past the chunk.
    ///
    /// A line can complete a record and start another (a lone CR ends a record): such records are held back until the
    /// next place between records, or a malformed row, and dropped if the part stops first, since reading again from
    /// where the unfinished record's line starts gives them again.
    public static func read(_ bytes: UnsafeBufferPointer<UInt8>, base: Int64, start: Int, end: Int, line: Int, fileEnd: Bool,
                            path: String? = nil, last: Bool = true, _ emit: (CSVItemView) -> Void) throws(CSVReadError) -> End {
        let scanner = try CSVScanner(offset: base + Int64(start), line: line, path: path, skipLimit: last ? .max : base + Int64(end))
        var held: [CSVItem] = []
        func release() {
            for item in held {
                switch item {
                case .record(let record): record.withView { emit(.record($0)) }
                case .malformed(let bad): emit(.malformed(bad))
                }
            }
            held.removeAll()
        }
        let pass: (CSVItemView) -> Void = { item in
            if case .record = item, !scanner.betweenRecords {
                held.append(item.item)
                return
            }
            if !held.isEmpty { release() }
            emit(item)
        }
        var position = start
        while true {
            while position < end {
                let newline = memchr(bytes.baseAddress! + position, 0x0A, end - position)
                let lineEnd = newline.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - bytes.baseAddress! + 1 } ?? end
                let next = scanner.feed(UnsafeBufferPointer(rebasing: bytes[position..<lineEnd]), at: base + Int64(position), pass)
                position = lineEnd
                if case .restart(let offset, _) = next { position = Int(offset - base) }
                if next == .unfinished { return End(offset: scanner.recordStartOffset, line: scanner.recordStartLine, betweenRecords: false) }
            }
            // A long record ended past the chunk: the next chunk starts after it.
            if position > end {
                release()
                return End(offset: base + Int64(position), line: scanner.line + 1, betweenRecords: true)
            }
            guard fileEnd else { break }
            guard case .restart(let offset, _)? = scanner.finish(at: base + Int64(end), pass) else {
                release()
                return End(offset: base + Int64(end), line: scanner.line + 1, betweenRecords: true)
            }
            position = Int(offset - base)
        }
        if scanner.betweenRecords { return End(offset: base + Int64(end), line: scanner.line + 1, betweenRecords: true) }
        return End(offset: scanner.recordStartOffset, line: scanner.recordStartLine, betweenRecords: false)
    }

    /// Where to cut `bytes[from..<to]` into about `parts` parts, and where the last part ends: after a newline with the
    /// quotes since `from` balanced (an even count), the last such newline for the end. The first boundary is `from`;
    /// nil when no newline qualifies. Quotes and newlines are found eight bytes at a time (this runs on the reading
    /// thread over every byte of the export).
    public static func cuts(_ bytes: UnsafeBufferPointer<UInt8>, from: Int, to: Int, parts: Int) -> [Int]? {
        var quotes = 0
        var position = from
        var cuts = [from]
        for part in 1..<max(parts, 1) {
            let target = from + (to - from) * part / parts
            guard target > position else { continue }
            quotes += ByteCount.count(UInt8(ascii: "\""), in: UnsafeRawBufferPointer(bytes), position..<target)
            position = target
            // On to the next newline where the quotes so far are balanced.
            while position < to {
                let byte = bytes[position]
                position += 1
                if byte == UInt8(ascii: "\"") { quotes += 1 } else if byte == 0x0A && quotes % 2 == 0 { break }
            }
            guard position < to else { break }
            cuts.append(position)
        }
        // The end: the last newline with balanced quotes before it.
        var odd = (quotes + ByteCount.count(UInt8(ascii: "\""), in: UnsafeRawBufferPointer(bytes), position..<to)) % 2 == 1
        var index = to
        while index > cuts.last! {
            let byte = bytes[index - 1]
            if byte == 0x0A && !odd {
                cuts.append(index)
                return cuts
            }
            if byte == UInt8(ascii: "\"") { odd.toggle() }
            index -= 1
        }
        // No newline after the last cut qualifies: the parts before it stand, ending there.
        return cuts.count > 1 ? cuts : nil
    }
}

/// Counting one byte value in a run of bytes, sixteen bytes at a time: over every byte of an export on the reading
/// thread (its newlines for line numbers, a CSV chunk's quotes to cut it), and over each side input to size its table.
public enum ByteCount {
    /// Sixteen bytes a step: each byte of `lanes` counts the matches at its position, for up to 255 steps; then the
    /// lanes are summed. (Eight at a time in a UInt64 took 3.5 times as long: 62 ms for the 509 MB benchmark export.)
    public static func count(_ target: UInt8, in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int {
        var count = 0
        var index = range.lowerBound
        let pattern = SIMD16<UInt8>(repeating: target)
        let one = SIMD16<UInt8>(repeating: 1)
        while index + 16 <= range.upperBound {
            var lanes = SIMD16<UInt8>()
            let stop = min(range.upperBound - 15, index + 255 * 16)
            while index < stop {
                let chunk = bytes.loadUnaligned(fromByteOffset: index, as: SIMD16<UInt8>.self)
                lanes &+= SIMD16<UInt8>().replacing(with: one, where: chunk .== pattern)
                index += 16
            }
            count += Int(SIMD16<UInt16>(truncatingIfNeeded: lanes).wrappedSum())
        }
        while index < range.upperBound {
            if bytes[index] == target { count += 1 }
            index += 1
        }
        return count
    }
}
