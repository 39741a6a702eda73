/// One CSV record: its fields' bytes, and where it sits in the file.
public struct CSVRecord: Sendable {
    /// The fields' bytes, one after the other; `fieldEnds[i]` is where field `i` ends.
    public var bytes: [UInt8]
    public var fieldEnds: [Int]
    public var firstLine: Int
    public var lastLine: Int
    /// The byte offset just past the record's last line: a safe place to resume from.
    public var endOffset: Int64

    public init(bytes: [UInt8], fieldEnds: [Int], firstLine: Int, lastLine: Int, endOffset: Int64) {
        self.bytes = bytes
        self.fieldEnds = fieldEnds
        self.firstLine = firstLine
        self.lastLine = lastLine
        self.endOffset = endOffset
    }

    public var count: Int { fieldEnds.count }

    /// The record as the scanner hands records over (`CSVRecordView`).
    public func withView<T>(_ body: (CSVRecordView) throws -> T) rethrows -> T {
        try bytes.withUnsafeBufferPointer { bytes in
            try fieldEnds.withUnsafeBufferPointer { ends in
                try body(CSVRecordView(bytes: bytes, ends: ends, start: 0, firstLine: firstLine, lastLine: lastLine, endOffset: endOffset))
            }
        }
    }

    public func fieldBytes(_ index: Int) -> ArraySlice<UInt8> {
        bytes[bounds(index)]
    }

    /// Where field `index` lies in `bytes`.
    func bounds(_ index: Int) -> Range<Int> {
        (index == 0 ? 0 : fieldEnds[index - 1])..<fieldEnds[index]
    }

    /// The field as text, or nil when it is not valid UTF-8.
    public func field(_ index: Int) -> String? {
        fieldBytes(index).withUnsafeBufferPointer(UTF8Text.validated)
    }

    /// The index of the first of the first `count` fields that is not valid UTF-8; nil when they all are. A record
    /// all in ASCII (the common case) is settled in one pass over its bytes.
    public func firstInvalidField(_ count: Int) -> Int? {
        withView { $0.firstInvalidField(count) }
    }

    /// Field `index` as text, nil when it is empty. For fields `firstInvalidField` found valid (other bytes would be
    /// replaced with U+FFFD): it reads one column without building the others.
    public func text(_ index: Int) -> String? {
        let range = bounds(index)
        guard !range.isEmpty else { return nil }
        return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }
}

/// Validated UTF-8 text. ASCII (most values) skips the generic validating initializer, which is slow per call.
public enum UTF8Text {
    public static func validated(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        isASCII(bytes) ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }

    /// Whether the bytes are valid UTF-8, by the standard library's own check (`String(validating:)` accepts the
    /// same), without making a String of them.
    public static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        (try? UTF8Span(validating: bytes.span)) != nil
    }

    /// Checked eight bytes at a time: every field of a CSV export goes through here.
    public static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = UnsafeRawPointer(bytes.baseAddress) else { return true }
        var high: UInt64 = 0
        var index = 0
        while index + 8 <= bytes.count {
            high |= base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(bytes[index])
            index += 1
        }
        return high & highBits == 0
    }

    /// The high bit of each byte of a word: set in a byte that is not ASCII.
    public static let highBits: UInt64 = 0x8080_8080_8080_8080
}

/// A stretch of the file that is not a CSV record: the reader skipped it and goes on.
public struct CSVMalformedRecord: Sendable, Equatable {
    public var firstLine: Int
    public var lastLine: Int
    public var reason: String
    public var endOffset: Int64
    /// Where its first line starts.
    public var startOffset: Int64 = 0

    /// Unquoted field `index` of its first line, in `bytes` (whose first byte is at file offset `base`): the id a
    /// quarantine entry names, when the fault lies elsewhere in the row. Nil when it is quoted, empty, or not there.
    public func plainField(_ index: Int, in bytes: UnsafeBufferPointer<UInt8>, base: Int64) -> String? {
        guard startOffset >= base, startOffset - base < Int64(bytes.count) else { return nil }
        var field = 0
        var start = Int(startOffset - base)
        var position = start
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") { return nil }
            if byte == UInt8(ascii: ",") || byte == 0x0A || byte == 0x0D {
                if field == index { break }
                guard byte == UInt8(ascii: ",") else { return nil }
                field += 1
                start = position + 1
            }
            position += 1
        }
        guard field == index, position > start else { return nil }
        return String(validating: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
    }
}

public enum CSVItem: Sendable {
    case record(CSVRecord)
    case malformed(CSVMalformedRecord)
}

public struct CSVReadError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var message: String
    public var description: String { "\(path): \(message)" }
}
