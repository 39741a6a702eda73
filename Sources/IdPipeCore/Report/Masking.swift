/// Masks personal data in reports unless the reviewer asked to see it.
public struct Masking: Sendable {
    public let reveal: Bool

    public init(reveal: Bool) {
        self.reveal = reveal
    }

    /// `jane.doe@example.com` → `j•••@example.com`. The domain stays: it tells relay from real addresses.
    public func email(_ value: String?) -> String {
        guard let value else { return "" }
        return reveal ? value : Self.text { email(value, into: &$0) }
    }

    /// `Jane Doe` → `J••• D•••`; `山田太郎` → `山•••`.
    public func name(_ value: String?) -> String {
        guard let value else { return "" }
        return reveal ? value : Self.text { name(value, into: &$0) }
    }

    /// `+14155550100` → `+1•••••••00`.
    public func phone(_ value: String?) -> String {
        guard let value else { return "" }
        return reveal ? value : Self.text { phone(value, into: &$0) }
    }

    /// Appends the masked address's UTF-8 (the value itself when revealed).
    public func email(_ value: String, into out: inout [UInt8]) {
        if reveal { return out.append(contentsOf: value.utf8) }
        // The domain shows only when it is one (letters, digits, dots, hyphens): after the @ of a value that is no
        // address (`jane@example.com (Jane Doe)`, `jane@example.com, +1 415 555 0100`) came the rest of it, in clear.
        if Self.plainASCII(value, into: &out, { bytes, out in
            guard let at = bytes.lastIndex(of: UInt8(ascii: "@")) else { return out.append(contentsOf: Self.dots) }
            out.append(bytes[0])
            out.append(contentsOf: Self.dots)
            let domain = bytes[(at + 1)...]
            if domain.allSatisfy({ $0 == 0x2E || $0 == 0x2D || TextScan.isASCIILetterOrDigit($0) }) {
                out.append(contentsOf: bytes[at...])
            } else {
                out.append(UInt8(ascii: "@"))
                out.append(contentsOf: Self.dots)
            }
        }) { return }
        guard let at = value.lastIndex(of: "@") else { return out.append(contentsOf: Self.dots) }
        let domain = value[value.index(after: at)...]
        let shown = domain.allSatisfy({ $0 == "." || $0 == "-" || $0.isLetter || $0.isNumber }) ? String(value[at...]) : "@•••"
        out.append(contentsOf: (String(value.prefix(1)) + "•••" + shown).utf8)
    }

    /// Appends the masked name's UTF-8: each word's first character and dots. A Han, Hangul or Kana character is
    /// much of a name (often a whole given name: `刘 芳`), so only the first word's shows: `刘••• •••`.
    public func name(_ value: String, into out: inout [UInt8]) {
        if reveal { return out.append(contentsOf: value.utf8) }
        // Printable ASCII (no CR: then every byte is a Character), in one loop: the same as `initials` on its bytes.
        let ascii = value.withUTF8Bytes { bytes -> Bool in
            guard !bytes.isEmpty, !bytes.contains(where: { $0 >= 0x80 || $0 == 0x0D }) else { return false }
            var atWordStart = true
            var firstWord = true
            for byte in bytes {
                if byte == UInt8(ascii: " ") {
                    atWordStart = true
                } else if atWordStart {
                    atWordStart = false
                    if !firstWord { out.append(UInt8(ascii: " ")) }
                    firstWord = false
                    out.append(byte)
                    out.append(contentsOf: Self.dots)
                }
            }
            return true
        }
        if ascii { return }
        var first = true
        Self.initials(value, isSpace: { $0 == " " }, into: &out) { character, out in
            defer { first = false }
            if !first, let scalar = character.unicodeScalars.first, NameFormatting.isEastAsianScalar(scalar.value) { return }
            out.append(contentsOf: character.utf8)
        }
    }

    /// Each word's first element and dots, the words separated by a space. The words are the runs of elements other
    /// than a space (as `split(separator: " ")` makes them); one pass, with nothing built on the way. On bytes for
    /// plain ASCII, on characters otherwise.
    private static func initials<Text: Sequence>(
        _ text: Text, isSpace: (Text.Element) -> Bool, into out: inout [UInt8], append: (Text.Element, inout [UInt8]) -> Void
    ) {
        var atWordStart = true
        var firstWord = true
        for element in text {
            if isSpace(element) {
                atWordStart = true
                continue
            }
            guard atWordStart else { continue }
            atWordStart = false
            if !firstWord { out.append(UInt8(ascii: " ")) }
            firstWord = false
            append(element, &out)
            out.append(contentsOf: dots)
        }
    }

    /// Appends the masked number's UTF-8: the first two and last two characters; `•••` when shorter than five.
    public func phone(_ value: String, into out: inout [UInt8]) {
        if reveal { return out.append(contentsOf: value.utf8) }
        let count = value.count
        guard count >= 5 else { return out.append(contentsOf: Self.dots) }
        out.append(contentsOf: value.prefix(2).utf8)
        for _ in 0..<(count - 4) { out.append(contentsOf: Self.dot) }
        out.append(contentsOf: value.suffix(2).utf8)
    }

    private static let dot = Array("•".utf8)
    private static let dots = Array("•••".utf8)

    private static func text(_ build: (inout [UInt8]) -> Void) -> String {
        var bytes: [UInt8] = []
        build(&bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reports mask hundreds of thousands of values: for printable ASCII (no CR, so every byte is a Character) the
    /// mask is built on bytes, with the same result as the Character-based rules, which handle the rest. False when
    /// the value is not such text (nothing is appended then).
    static func plainASCII(_ value: String, into out: inout [UInt8], _ mask: (UnsafeBufferPointer<UInt8>, inout [UInt8]) -> Void) -> Bool {
        value.withUTF8Bytes { bytes -> Bool in
            guard !bytes.isEmpty, !bytes.contains(where: { $0 >= 0x80 || $0 == 0x0D }) else { return false }
            mask(bytes, &out)
            return true
        }
    }
}

extension Masking {
    /// An account's id as the reports show it: as it is, unless it is an address or a phone number (a legacy table
    /// keyed by email, an import that used them as ids), masked as one.
    public func accountId(_ uid: String) -> String {
        // Scanned a word at a time, in place: `String.UTF8View`'s generic `contains` cost about 1,000 instructions an id,
        // for every account of plan.json and every line of the ledger.
        guard !reveal, uid.withUTF8Bytes({ TextScan.containsEither($0, UInt8(ascii: "@"), UInt8(ascii: "+")) }) else { return uid }
        return quarantinedId(uid) ?? uid
    }

    /// The id a quarantined row seemed to have. In a row cut short or shifted (a CSV row missing a field, a fragment
    /// of a name broken over lines), the id column holds another field: an email, a name, a phone number. Such a value
    /// is masked as what it looks like; an id is shown as it is.
    /// Spaces around an id (itself a reason for the quarantine) are kept: the id is shown as the source has it.
    public func quarantinedId(_ value: String?) -> String? {
        guard !reveal, let value else { return value }
        let core = value.trimmingSpaces
        if core.contains("@") { return email(core) }
        if core.hasPrefix("+") && core.count > 1 && core.dropFirst().allSatisfy(\.isNumber) { return phone(core) }
        if core.contains(where: \.isWhitespace) { return name(core) }
        return value
    }

    /// Quarantine reasons quote the bad value (`'x@@y' has more than one @`); mask it like the field it came from.
    /// One character is shown as it is: it is what a syntax error quotes (`expected a key in double quotes, found ','`
    /// while reading an email), and masking would show a value's first character anyway.
    ///
    /// A value of another field is masked when it has a letter in it: a column mapped wrongly, or a row shifted,
    /// puts a name or an address where a time or a flag belongs (`'Lily Doe' is not a rfc3339 timestamp`). Ids are
    /// masked as `quarantinedId` masks them. A value without letters (but a time's `T` and `Z`) is shown when it has
    /// fewer than five numerals (a flag, a count); otherwise (it may be a phone number or a birth date) they show as `#`.
    /// The value is read as `Quoted.value` writes it: a quote or backslash after a backslash is part of it. Read by
    /// Unicode scalar: as Characters, a combining mark after the opening quote made one character of the two, the
    /// quote was not found, and the value showed in clear.
    public func quotedValues(in reason: String, field: String) -> String {
        guard !reveal else { return reason }
        var out = String.UnicodeScalarView()
        var rest = Substring(reason).unicodeScalars
        var first = true
        // Each quoted value in turn: the first masked like its field, the later ones (the domain a syntax error names)
        // shown when they are a domain or one character, else masked as a name.
        while let open = rest.firstIndex(of: "'") {
            var value = String.UnicodeScalarView()
            var index = rest.index(after: open)
            var close: Substring.UnicodeScalarView.Index?
            while index < rest.endIndex {
                if rest[index] == "'" {
                    close = index
                    break
                }
                if rest[index] == "\\" && rest.index(after: index) < rest.endIndex { index = rest.index(after: index) }
                value.append(rest[index])
                index = rest.index(after: index)
            }
            guard let close else { break }
            let text = String(value)
            let shown: String
            if first {
                shown = self.value(text, ofField: field)
            } else {
                let plain = value.count <= 1 || value.allSatisfy { $0 == "." || $0 == "-" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }
                shown = plain ? String(rest[rest.index(after: open)..<close]) : name(text)
            }
            out.append(contentsOf: rest[..<open])
            out.append(contentsOf: ("'" + shown + "'").unicodeScalars)
            rest = rest[rest.index(after: close)...]
            first = false
        }
        out.append(contentsOf: rest)
        return String(out)
    }

    /// No letter but where a time has one: a `T` before a digit (after one, or first), a `Z` after the last digit (a
    /// space between them allowed), white space around the whole.
    private static func hasTimeLettersOnly(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        func asciiDigit(at index: Int) -> Bool { scalars.indices.contains(index) && ("0"..."9").contains(scalars[index]) }
        for (index, scalar) in scalars.enumerated() where scalar.properties.isAlphabetic {
            let time = (scalar == "T" || scalar == "t") && asciiDigit(at: index + 1) && (index == 0 || asciiDigit(at: index - 1))
            let zone = (scalar == "Z" || scalar == "z") && index == scalars.count - 1
                && (asciiDigit(at: index - 1) || (index >= 2 && scalars[index - 1] == " " && asciiDigit(at: index - 2)))
            guard time || zone else { return false }
        }
        return true
    }

    /// A digit of any script, and any other numeral (`¹`, `①`): what a number can be written with.
    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.numericType != nil }

    /// A bad value of `field` as reports show it (`quotedValues`): one character as it is, an email, phone number or
    /// name masked as such, a value of another field masked when it has a letter, its digits hidden when it has five,
    /// an id as `quarantinedId` shows it.
    public func value(_ value: String, ofField field: String) -> String {
        guard !reveal, value.unicodeScalars.count > 1 else { return value }
        if field.hasSuffix("email") { return email(value) }
        if field.hasSuffix("phoneNumber") { return phone(value) }
        if field.hasSuffix("displayName") { return name(value) }
        if !(field.hasSuffix("localId") || field.hasSuffix("rawId") || field.hasSuffix("providerId")) {
            // Five numerals or more (digits of any script, `¹`, `①`), without a letter, may be a phone number or a birth
            // date in a column mapped wrongly: they are hidden and the shape shows (`####-##-## ##:##:##` tells a time
            // written with a space from one with a `T`, `##########` epoch seconds from milliseconds). A time's `T` and
            // `Z` are no letters of a name: `####-##-##T##:##:##Z`. A short number shows.
            if Self.hasTimeLettersOnly(value) && value.unicodeScalars.lazy.filter(Self.isDigit).count >= 5 {
                return String(String.UnicodeScalarView(value.unicodeScalars.map { Self.isDigit($0) ? "#" : $0 }))
            }
            if value.contains(where: \.isLetter) { return value.contains("@") ? email(value) : name(value) }
        }
        return quarantinedId(value) ?? value
    }
}
