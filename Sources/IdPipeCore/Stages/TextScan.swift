extension String {
    /// Calls `body` with the string's UTF-8 bytes: its own storage, or for a short string (up to 15 bytes, kept inside
    /// the value) a copy on the stack. `utf8.withContiguousStorageIfAvailable` alone gives nil for a short string, so
    /// code that checked bytes through it took its slow path for most names and many other values; `withUTF8` alone
    /// works on a copy of the string, a retain and a release for a long one.
    @inlinable
    public func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var text = self
        return try text.withUTF8(body)
    }
}

/// Byte-level text helpers for the hot path: Foundation's trimming costs microseconds a call.
public enum TextScan {
    /// Standard base64 with its padding (the console shows keys and salt separators so).
    public static func isBase64(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        return bytes.count % 4 == 0 && bytes.count - body.count <= 2 && bytes[body.count...].allSatisfy { $0 == UInt8(ascii: "=") }
            && body.allSatisfy { isASCIILetterOrDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
    }

    /// Whether two runs of bytes are the same, eight bytes at a time (a generic `elementsEqual` went byte by byte
    /// through iterators).
    public static func sameBytes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        guard x.count == y.count else { return false }
        var index = 0
        if let left = UnsafeRawPointer(x.baseAddress), let right = UnsafeRawPointer(y.baseAddress) {
            while index + 8 <= x.count {
                if left.loadUnaligned(fromByteOffset: index, as: UInt64.self) != right.loadUnaligned(fromByteOffset: index, as: UInt64.self) {
                    return false
                }
                index += 8
            }
        }
        while index < x.count {
            if x[index] != y[index] { return false }
            index += 1
        }
        return true
    }

    /// Whether `bytes` hold `a` or `b`, eight bytes at a time: a word XORed with a byte repeated has a zero byte where
    /// that byte is, and `(w - 0x01…01) & ~w & 0x80…80` is nonzero exactly when `w` has a zero byte.
    public static func containsEither(_ bytes: UnsafeBufferPointer<UInt8>, _ a: UInt8, _ b: UInt8) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let repeatedA = ones &* UInt64(a), repeatedB = ones &* UInt64(b)
        var index = 0
        if let base = UnsafeRawPointer(bytes.baseAddress) {
            while index + 8 <= bytes.count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let x = word ^ repeatedA, y = word ^ repeatedB
                if (x &- ones) & ~x & highs != 0 || (y &- ones) & ~y & highs != 0 { return true }
                index += 8
            }
        }
        while index < bytes.count {
            if bytes[index] == a || bytes[index] == b { return true }
            index += 1
        }
        return false
    }

    /// Whether `text` is made of exactly these bytes, compared on the string's own storage when it has one.
    public static func sameBytes(_ bytes: UnsafeBufferPointer<UInt8>, _ text: String) -> Bool {
        text.withUTF8Bytes { sameBytes(bytes, $0) }
    }

    @inline(__always)
    public static func isASCIIDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// Whether `text` is one or more ASCII digits (an id that is a number, a fraction's digits).
    public static func isDigits(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isASCIIDigit)
    }

    /// An ASCII letter (either case) or digit.
    @inline(__always)
    public static func isASCIILetterOrDigit(_ byte: UInt8) -> Bool { (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || isASCIIDigit(byte) }

    /// An ASCII upper-case letter made lower case; any other byte as it is.
    @inline(__always)
    public static func lowerASCII(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte + 32 : byte
    }

    /// Whether `text` holds `part` (`part` empty: yes), ASCII letters compared without case. On the UTF-8 bytes:
    /// `String.contains` goes through Foundation, and cost a 100k-account plan 2 % more instructions where names are
    /// checked for relay addresses.
    public static func containsIgnoringASCIICase(_ text: String, _ part: String) -> Bool {
        text.withUTF8Bytes { text in
            part.withUTF8Bytes { part in
                guard !part.isEmpty, part.count <= text.count else { return part.isEmpty }
                start: for start in 0...(text.count - part.count) {
                    for offset in 0..<part.count where lowerASCII(text[start + offset]) != lowerASCII(part[offset]) { continue start }
                    return true
                }
                return false
            }
        }
    }

    /// Whether `text` starts with `prefix`, ASCII letters compared without case (as SQL's `LIKE 'prefix%'`).
    public static func hasPrefixIgnoringASCIICase(_ text: String, _ prefix: String) -> Bool {
        text.withUTF8Bytes { text in
            prefix.withUTF8Bytes { prefix in
                prefix.count <= text.count && prefix.indices.allSatisfy { lowerASCII(text[$0]) == lowerASCII(prefix[$0]) }
            }
        }
    }

    /// Whether a scalar is whitespace for the purposes of names and emails.
    @inline(__always)
    public static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
            true
        default:
            false
        }
    }

    /// Whether the text is empty or starts and ends with an ASCII byte above the space (0x21-0x7F): then it has no
    /// whitespace to trim.
    @inline(__always)
    static func hasPlainEnds(_ utf8: some BidirectionalCollection<UInt8>) -> Bool {
        guard let first = utf8.first, let last = utf8.last else { return true }
        return first > 0x20 && first < 0x80 && last > 0x20 && last < 0x80
    }

    /// Whether a control character is among the UTF-8 bytes: an ASCII one (below the space, or DEL), or a C1 one
    /// (U+0080-U+009F, `C2 80`-`C2 9F`, which a terminal may read as an escape). A NUL in an id ended it wherever a C
    /// string carried it (the state store gave the report `u1` for `u1\0x`, an id of another account).
    @inline(__always)
    static func hasControlByte(_ utf8: some Sequence<UInt8>) -> Bool {
        // Most ids are printable ASCII: one test a byte says so.
        if !utf8.contains(where: { $0 < 0x20 || $0 >= 0x7F }) { return false }
        var afterC2 = false
        for byte in utf8 {
            if byte < 0x20 || byte == 0x7F || (afterC2 && byte <= 0x9F) { return true }
            afterC2 = byte == 0xC2
        }
        return false
    }

    /// How many UTF-8 bytes `text` has once trimmed of whitespace at both ends. Most values have none, which is seen
    /// on the bytes without making a Substring (about 500 instructions a call); the normalizer asks for every id and
    /// every optional field of every account.
    static func trimmedUTF8Count(_ text: String) -> Int {
        if text.withUTF8Bytes(hasPlainEnds) { return text.utf8.count }
        return trimmingWhitespace(Substring(text)).utf8.count
    }

    /// Trims whitespace from both ends; returns the same slice when there is none (the common case).
    static func trimmingWhitespace(_ text: Substring) -> Substring {
        if hasPlainEnds(text.utf8) { return text }
        let scalars = text.unicodeScalars
        guard let start = scalars.firstIndex(where: { !isSpace($0) }) else { return text[text.endIndex...] }
        let end = scalars.lastIndex(where: { !isSpace($0) })!
        return Substring(scalars[start...end])
    }
}

extension Unicode.Scalar {
    /// `U+200B`: how a message names a character it cannot show.
    public var codePoint: String { "U+" + String(value, radix: 16, uppercase: true) }

    /// A control or format character: one that shows nothing where it stands (a NUL, a zero-width space, a bidi mark).
    public var isControlOrFormat: Bool {
        switch properties.generalCategory {
        case .control, .format: true
        default: false
        }
    }
}
