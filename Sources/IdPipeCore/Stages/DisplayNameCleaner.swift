/// Display names: control and bidirectional-override characters removed, whitespace collapsed and trimmed.
public enum DisplayNameCleaner {
    /// Identity Toolkit rejects longer names.
    public static let maxCharacters = 256

    /// Returns the cleaned name (nil when nothing is left), or a reason it cannot be used.
    public static func clean(_ raw: String, repairs: inout RepairSet) -> Result<String?, RecordIssueReason> {
        if raw.withUTF8Bytes(isAlreadyClean) { return checked(raw) }
        return checked(cleanedScalars(raw, repairs: &repairs))
    }

    /// The full path, scalar by scalar: drops controls and bidi marks, collapses and trims whitespace.
    static func cleanedScalars(_ raw: String, repairs: inout RepairSet) -> String {
        var scalars = String.UnicodeScalarView()
        var pendingSpace = false
        var removedControl = false
        var changedSpace = false
        for scalar in raw.unicodeScalars {
            if isControl(scalar) && !TextScan.isSpace(scalar) {
                removedControl = true
                continue
            }
            if TextScan.isSpace(scalar) {
                if scalar != " " || pendingSpace || scalars.isEmpty { changedSpace = true }
                pendingSpace = true
                continue
            }
            if pendingSpace && !scalars.isEmpty { scalars.append(" ") }
            pendingSpace = false
            scalars.append(scalar)
        }
        if pendingSpace { changedSpace = true }
        // A name of characters that show nothing (a joiner, a variation selector, a Hangul filler, a tag) only looks
        // filled: it was kept as the account's name, and no source filled it. Inside a name they stay (scripts and
        // emoji use them).
        if !scalars.isEmpty && scalars.allSatisfy(isInvisible) {
            scalars.removeAll()
            removedControl = true
        }
        if removedControl { repairs.insert(.nameControlCharacters) }
        if changedSpace { repairs.insert(.nameWhitespace) }
        return String(scalars)
    }

    static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        // Letters most names are written in, without asking the Unicode tables (two lookups a name took 3 % of a
        // CSV plan's instructions): Latin, Kana and Han but the Hangul filler, Hangul syllables.
        switch scalar.value {
        case 0x41...0x5A, 0x61...0x7A, 0xC0...0x24F, 0x3041...0x3163, 0x3165...0x9FFF, 0xAC00...0xD7A3: return false
        default: return scalar.properties.isDefaultIgnorableCodePoint || scalar.properties.generalCategory == .format || scalar == " "
        }
    }

    /// The last step of both paths: nothing left is no name; a name longer than the API allows is rejected.
    private static func checked(_ name: String) -> Result<String?, RecordIssueReason> {
        if name.isEmpty { return .success(nil) }
        guard name.utf8.count <= maxCharacters || name.count <= maxCharacters else {
            return .failure("is longer than \(maxCharacters) characters")
        }
        return .success(name)
    }

    /// The common case, checked on the UTF-8 bytes: single inner ASCII spaces, and no byte that may start a control,
    /// a bidi mark or other whitespace (`isControl`, `TextScan.isSpace`). Letters of any script pass; a byte that
    /// might start one of those scalars sends the name down the full path, which decides.
    static func isAlreadyClean(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var previous: UInt8 = 0x20
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x80 {
                if byte < 0x20 || byte == 0x7F || (byte == 0x20 && previous == 0x20) { return false }
            } else if byte >= 0xC0 {
                // The valid UTF-8 of a String: a lead byte is followed by its continuation bytes (which go by, below,
                // without the cases: most bytes of a name in Han or with accents are such).
                let next = index + 1 < bytes.count ? bytes[index + 1] : 0
                switch byte {
                case 0xC2 where next <= 0xA0 || next == 0xAD: return false  // U+0080–U+00A0: C1 controls, NEL, no-break space; the soft hyphen
                case 0xCD where next == 0x8F: return false  // U+034F, the combining grapheme joiner
                case 0xD8 where next == 0x9C: return false  // U+061C, the Arabic letter mark
                case 0xE1 where next == 0x9A || next == 0x85 || next == 0xA0: return false  // U+1680 (Ogham space); Hangul fillers; Mongolian selectors
                case 0xE2 where next == 0x80 || next == 0x81: return false  // U+2000–U+207F: spaces, bidi marks
                case 0xE3 where next == 0x80 || next == 0x85: return false  // U+3000–U+303F: the ideographic space; U+3164, the Hangul filler
                case 0xEF where next == 0xBB || next == 0xB8 || next == 0xBE: return false  // the BOM; variation selectors; U+FFA0
                case 0xF3 where next == 0xA0: return false  // tags, variation selectors 17-256
                default: break
                }
            }
            previous = byte
            index += 1
        }
        guard previous != 0x20 || bytes.isEmpty else { return false }
        // Without a printable ASCII character, a name may be of characters that show nothing only (of which there are
        // more than the bytes above catch): clean when one of its scalars shows.
        // (Asked after the loop, not byte by byte in it: a name that shows starts with what shows, most often.)
        if bytes.isEmpty || bytes.contains(where: { $0 > 0x20 && $0 < 0x7F }) { return true }
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while case .scalarValue(let scalar) = decoder.decode(&iterator) {
            if !isInvisible(scalar) { return true }
        }
        return false
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0xFEFF: true  // bidi marks and overrides, BOM
        case 0x00AD, 0x2061...0x2064: true  // the soft hyphen, invisible operators
        case 0x200B, 0x2060: true  // zero-width space and word joiner: a name of them only looked filled (ZWNJ and ZWJ stay: scripts use them)
        default: false
        }
    }
}
