import IdPipeCore
import IdPipeCSV

/// A byte-level JSON reader over a buffer: strict syntax, escapes, `\uXXXX` with surrogates, UTF-8 validation.
/// Raw newlines are only legal between tokens, so counting them in whitespace gives line numbers for free.
struct JSONCursor {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int
    let end: Int
    /// Newlines passed so far.
    var newlines = 0
    /// The key being read and, inside `providerUserInfo`, the entry's index: named only when an error needs it,
    /// because building a `String` for every key costs more than parsing the account.
    var currentKey: UnsafeBufferPointer<UInt8>?
    var providerIndex: Int?

    /// The field being read, for error messages.
    var field: String {
        let name = currentKey.map { String(decoding: $0, as: UTF8.self) }
        if let providerIndex { return "providerUserInfo[\(providerIndex)]" + (name.map { ".\($0)" } ?? "") }
        return name ?? "record"
    }

    mutating func enterRecord() {
        currentKey = nil
        providerIndex = nil
    }

    init(bytes: UnsafeBufferPointer<UInt8>, start: Int, end: Int) {
        self.bytes = bytes
        self.position = start
        self.end = end
    }

    struct SyntaxError: Error {
        var position: Int
        var field: String
        var message: String
        var atEnd: Bool
    }

    func fail(_ message: String) -> SyntaxError {
        SyntaxError(position: position, field: field, message: message, atEnd: position >= end)
    }

    var atEnd: Bool { position >= end }

    @inline(__always)
    mutating func skipWhitespace() {
        while position < end {
            let byte = bytes[position]
            if byte == 0x20 || byte == 0x09 || byte == 0x0D {
                position += 1
            } else if byte == 0x0A {
                newlines += 1
                position += 1
            } else {
                return
            }
        }
    }

    @inline(__always)
    mutating func peek() throws(SyntaxError) -> UInt8 {
        skipWhitespace()
        guard position < end else { throw fail("unexpected end of input") }
        return bytes[position]
    }

    @inline(__always)
    mutating func expect(_ byte: UInt8) throws(SyntaxError) {
        let found = try peek()
        guard found == byte else {
            throw fail("expected '\(Character(Unicode.Scalar(byte)))', found \(describe(found))")
        }
        position += 1
    }

    func describe(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    /// Reads an object key's bytes. A key with an escape is refused (`unsupported character in a key`): no key the
    /// decoders know has one.
    @inline(__always)
    mutating func key() throws(SyntaxError) -> UnsafeBufferPointer<UInt8> {
        guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a key in double quotes, found \(describe(bytes[position]))") }
        position += 1
        let start = position
        var high: UInt64 = 0
        position = Self.plainRun(bytes, from: position, end: end, high: &high)
        guard position < end else { throw fail("unexpected end of input in a key") }
        guard bytes[position] == UInt8(ascii: "\"") else { throw fail("unsupported character in a key") }
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
        // Unknown keys are skipped, so a known one with a broken byte ("dis\xFFabled") would be lost without a word.
        if high & UTF8Text.highBits != 0 && !UTF8Text.isValid(slice) {
            currentKey = nil
            // Not quoted: the stored-tokens reader reads its lines with this cursor, and a token may sit anywhere.
            throw SyntaxError(position: start, field: field, message: "a key of \(slice.count) bytes is not valid UTF-8", atEnd: false)
        }
        position += 1
        return slice
    }

    /// Where the run of plain string bytes from `start` ends: at the first quote, backslash or control character,
    /// or at `end`. Eight bytes at a time, since most of an export is the text inside strings. `high` gets the bits
    /// of the bytes passed, so `high & 0x80…80 != 0` says one of them is not ASCII.
    @inline(__always)
    static func plainRun(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, end: Int, high: inout UInt64) -> Int {
        var index = start
        if let base = UnsafeRawPointer(bytes.baseAddress) {
            while index + 8 <= end {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let stops = stopBytes(word)
                if stops != 0 {
                    // The lowest flagged byte is the first stop in the text (see `stopBytes`); keep the bits before it.
                    let count = stops.trailingZeroBitCount >> 3
                    high |= word & ((1 << UInt64(count * 8)) &- 1)
                    return index + count
                }
                high |= word
                index += 8
            }
        }
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { return index }
            high |= UInt64(byte)
            index += 1
        }
        return index
    }

    /// The high bit of each byte of `word` that is a quote, a backslash or below 0x20. Exact for the lowest flagged
    /// byte: each test, `(x - 0x01…01) & ~x & 0x80…80` for a zero byte and `(w - 0x20…20) & ~w & 0x80…80` for a
    /// control byte, can only flag wrongly above a byte it flags rightly (a borrow starts only at a true match).
    @inline(__always)
    static func stopBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs = UTF8Text.highBits
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let quote = (quotes &- ones) & ~quotes & highs
        let backslash = (backslashes &- ones) & ~backslashes & highs
        let control = (word &- (ones &* 0x20)) & ~word & highs
        return quote | backslash | control
    }

    /// Reads a string value; nil for `null`.
    /// `sameAs`: a string decoded before that this one often repeats (a provider's email is the account's): when
    /// the bytes are the same, that string is returned instead of a copy of it.
    mutating func stringOrNull(sameAs earlier: String? = nil) throws(SyntaxError) -> String? {
        let byte = try peek()
        if byte == UInt8(ascii: "n") {
            try literal("null")
            return nil
        }
        guard byte == UInt8(ascii: "\"") else { throw fail("expected a string, found \(describe(byte))") }
        return try string(sameAs: earlier)
    }

    mutating func string(sameAs earlier: String? = nil) throws(SyntaxError) -> String {
        guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a string, found \(describe(bytes[position]))") }
        position += 1
        let start = position
        // Fast path: no escapes. The scan also notes whether every byte is ASCII, so ASCII text (most values) is
        // not checked a second time before it becomes a String.
        var high: UInt64 = 0
        position = Self.plainRun(bytes, from: position, end: end, high: &high)
        if position < end {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
                position += 1
                if let earlier, TextScan.sameBytes(slice, earlier) { return earlier }
                if high & UTF8Text.highBits == 0 { return String(decoding: slice, as: UTF8.self) }
                if let text = String(validating: slice, as: UTF8.self) { return text }
                throw SyntaxError(position: start, field: field, message: "is not valid UTF-8", atEnd: false)
            }
            if byte < 0x20 {
                throw fail(byte == 0x0A ? "a string is not closed before the end of the line (unbalanced quote)" : "a control character inside a string")
            }
            // A backslash: the escapes are decoded below.
        }
        var buffer = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < end {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                if let text = buffer.withUnsafeBufferPointer(Self.text) { return text }
                throw SyntaxError(position: start, field: field, message: "is not valid UTF-8", atEnd: false)
            }
            if byte < 0x20 {
                throw fail(byte == 0x0A ? "a string is not closed before the end of the line (unbalanced quote)" : "a control character inside a string")
            }
            if byte != UInt8(ascii: "\\") {
                buffer.append(byte)
                position += 1
                continue
            }
            position += 1
            guard position < end else { break }
            let escape = bytes[position]
            position += 1
            if let byte = JSONText.unescaped(escape) {
                buffer.append(byte)
                continue
            }
            switch escape {
            case UInt8(ascii: "u"):
                buffer.append(contentsOf: String(Character(try escapedScalar())).utf8)
            default:
                throw fail("an invalid escape '\\\(Character(Unicode.Scalar(escape)))'")
            }
        }
        throw fail("unexpected end of input inside a string")
    }

    static func text(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        UTF8Text.validated(bytes)
    }

    /// Skips a string, with the checks and errors of `string()`, making nothing of it (`skipValue` passes every value
    /// the decoder does not keep, and the fast path every one it does not need).
    mutating func skipString() throws(SyntaxError) {
        guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a string, found \(describe(bytes[position]))") }
        position += 1
        let start = position
        // `string()` checks the UTF-8 of the whole text once it is read: an escape error found later comes first.
        var validUTF8 = true
        while true {
            var high: UInt64 = 0
            let run = position
            position = Self.plainRun(bytes, from: position, end: end, high: &high)
            if high & UTF8Text.highBits != 0 && !UTF8Text.isValid(UnsafeBufferPointer(rebasing: bytes[run..<position])) { validUTF8 = false }
            guard position < end else { break }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                guard validUTF8 else { throw SyntaxError(position: start, field: field, message: "is not valid UTF-8", atEnd: false) }
                return
            }
            if byte < 0x20 {
                throw fail(byte == 0x0A ? "a string is not closed before the end of the line (unbalanced quote)" : "a control character inside a string")
            }
            position += 1
            guard position < end else { break }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                 UInt8(ascii: "r"), UInt8(ascii: "t"):
                continue
            case UInt8(ascii: "u"): _ = try escapedScalar()
            default: throw fail("an invalid escape '\\\(Character(Unicode.Scalar(escape)))'")
            }
        }
        throw fail("unexpected end of input inside a string")
    }

    /// The scalar of a `\uXXXX` escape whose `u` was just read, with the low surrogate that must follow a high one.
    private mutating func escapedScalar() throws(SyntaxError) -> Unicode.Scalar {
        var scalar = try hex4()
        if scalar >= 0xD800 && scalar < 0xDC00 {
            guard position + 1 < end, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                throw fail("a lone high surrogate in \\u escape")
            }
            position += 2
            let low = try hex4()
            guard low >= 0xDC00 && low < 0xE000 else { throw fail("a high surrogate without its low surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if scalar >= 0xDC00 && scalar < 0xE000 {
            throw fail("a lone low surrogate in \\u escape")
        }
        guard let value = Unicode.Scalar(scalar) else { throw fail("an invalid \\u escape") }
        return value
    }

    /// A string value for the fast path, as its bytes in the buffer (`AccountBytes`).
    enum PlainString {
        case null
        case bytes(UnsafeBufferPointer<UInt8>)
        /// The string has an escape: its text is not its bytes, and the full decoder reads it.
        case escaped
    }

    /// A string or null, checked as `string()` checks it up to its first escape, where it stops (`.escaped`).
    @inline(__always)
    mutating func plainString() throws(SyntaxError) -> PlainString {
        let byte = try peek()
        if byte == UInt8(ascii: "n") {
            try literal("null")
            return .null
        }
        guard byte == UInt8(ascii: "\"") else { throw fail("expected a string, found \(describe(byte))") }
        position += 1
        let start = position
        var high: UInt64 = 0
        position = Self.plainRun(bytes, from: position, end: end, high: &high)
        guard position < end else { throw fail("unexpected end of input inside a string") }
        if bytes[position] == UInt8(ascii: "\\") { return .escaped }
        guard bytes[position] == UInt8(ascii: "\"") else { throw fail("a control character inside a string") }
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
        position += 1
        if high & UTF8Text.highBits != 0 && !UTF8Text.isValid(slice) {
            throw SyntaxError(position: start, field: field, message: "is not valid UTF-8", atEnd: false)
        }
        return .bytes(slice)
    }

    private mutating func hex4() throws(SyntaxError) -> UInt32 {
        guard position + 4 <= end else { throw fail("a short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case 48...57: digit = UInt32(byte - 48)
            case 65...70: digit = UInt32(byte - 55)
            case 97...102: digit = UInt32(byte - 87)
            default: throw fail("a non-hex digit in a \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    @inline(__always)
    mutating func literal(_ word: StaticString) throws(SyntaxError) {
        let count = word.utf8CodeUnitCount
        guard position + count <= end, memcmp(bytes.baseAddress! + position, word.utf8Start, count) == 0 else {
            throw fail("expected \(word)")
        }
        position += count
    }

    @inline(__always)
    mutating func bool() throws(SyntaxError) -> Bool {
        switch try peek() {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        case UInt8(ascii: "n"): try literal("null"); return false
        case let byte: throw fail("expected true or false, found \(describe(byte))")
        }
    }

    /// The value of a string of 1 to 18 ASCII digits (no sign, no escape) at the cursor, read without making a
    /// String; nil leaves the cursor where it was, for the general path. The export writes timestamps this way.
    @inline(__always)
    mutating func quotedDigits() -> Int64? {
        var index = position + 1
        var value: Int64 = 0
        while index < end, index - position <= 18 {
            let byte = bytes[index]
            guard byte >= 48, byte <= 57 else { break }
            value = value * 10 + Int64(byte - 48)
            index += 1
        }
        guard index > position + 1, index < end, bytes[index] == UInt8(ascii: "\"") else { return nil }
        position = index + 1
        return value
    }

    /// A number's text, checked against JSON's grammar.
    mutating func numberText() throws(SyntaxError) -> String {
        skipWhitespace()
        let start = position
        try skipNumber()
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
    }

    /// Passes a number, checked against JSON's grammar.
    mutating func skipNumber() throws(SyntaxError) {
        skipWhitespace()
        if position < end && bytes[position] == UInt8(ascii: "-") { position += 1 }
        var digits = 0
        while position < end, bytes[position] >= 48, bytes[position] <= 57 { position += 1; digits += 1 }
        guard digits > 0 else { throw fail("expected a number") }
        if position < end && bytes[position] == UInt8(ascii: ".") {
            position += 1
            while position < end, bytes[position] >= 48, bytes[position] <= 57 { position += 1 }
        }
        if position < end && (bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")) {
            position += 1
            if position < end && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")) { position += 1 }
            while position < end, bytes[position] >= 48, bytes[position] <= 57 { position += 1 }
        }
    }

    /// Skips any value, checking its syntax; returns its raw text when `capture` is set.
    @discardableResult
    mutating func skipValue(capture: Bool = false, depth: Int = 0) throws(SyntaxError) -> String? {
        guard depth < 64 else { throw fail("nested too deeply") }
        _ = try peek()
        let start = position
        switch bytes[position] {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "{"):
            position += 1
            if try peek() == UInt8(ascii: "}") { position += 1; break }
            while true {
                _ = try key()
                try expect(UInt8(ascii: ":"))
                try skipValue(depth: depth + 1)
                if try peek() == UInt8(ascii: ",") { position += 1; continue }
                try expect(UInt8(ascii: "}"))
                break
            }
        case UInt8(ascii: "["):
            position += 1
            if try peek() == UInt8(ascii: "]") { position += 1; break }
            while true {
                try skipValue(depth: depth + 1)
                if try peek() == UInt8(ascii: ",") { position += 1; continue }
                try expect(UInt8(ascii: "]"))
                break
            }
        default: try skipNumber()
        }
        guard capture else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
    }
}

#if canImport(Glibc)
import Glibc
#endif
