/// Puts a given and a family name together the way the name's script writes it.
public enum NameFormatting {
    /// Han, Hangul and Kana names are written family name first, without a space: 山田太郎, 김민준.
    public static func fullName(given: String, family: String) -> String {
        let given = given.trimmingSpaces, family = family.trimmingSpaces
        if given.isEmpty { return family }
        if family.isEmpty { return given }
        if isEastAsian(given) && isEastAsian(family) { return family + given }
        return given + " " + family
    }

    /// Whether every letter of a name is Han, Hangul, Hiragana or Katakana.
    public static func isEastAsian(_ text: String) -> Bool {
        var sawLetter = false
        for scalar in text.unicodeScalars {
            if isEastAsianScalar(scalar.value) {
                sawLetter = true
            } else if scalar.properties.isAlphabetic {
                return false
            }
        }
        return sawLetter
    }

    static func isEastAsianScalar(_ value: UInt32) -> Bool {
        switch value {
        // Han: the unified ideographs, their extensions (planes 2 and 3 hold nothing else), compatibility ideographs.
        case 0x4E00...0x9FFF, 0x3400...0x4DBF, 0x20000...0x323AF, 0xF900...0xFAFF, 0x3005, 0x3007:
            true
        case 0x3040...0x309F, 0x30A0...0x30FF, 0x31F0...0x31FF, 0xFF66...0xFF9F, 0x1B000...0x1B16F:  // Kana, small and historic kana
            true
        case 0xAC00...0xD7FF, 0x1100...0x11FF, 0x3130...0x318F, 0xA960...0xA97F, 0xFFA0...0xFFDC:  // Hangul, its jamo, halfwidth forms
            true
        default:
            false
        }
    }

    /// A name taken whole from a login (`刘 芳`): words all of Han, Hangul or Kana are joined without a space, in the
    /// order the login gives them (which of them is the family name it does not say); other names as they are.
    public static func providerName(_ name: String) -> String {
        guard name.contains(" ") else { return name }
        let words = name.split(separator: " ")
        return words.count > 1 && words.allSatisfy({ isEastAsian(String($0)) }) ? words.joined() : name
    }

    /// `jane.doe` → `Jane Doe`; nil unless the local part is two or more alphabetic words. Han, Hangul and Kana words
    /// are joined without a space, in the order written (`山田.太郎` → `山田太郎`), as `fullName` writes such names.
    public static func nameFromEmailLocalPart(_ email: String) -> String? {
        guard let at = email.lastIndex(of: "@") else { return nil }
        let words = email[..<at].split(whereSeparator: { $0 == "." || $0 == "_" || $0 == "-" })
        guard words.count >= 2, words.allSatisfy({ $0.count >= 2 && $0.allSatisfy(\.isLetter) }) else { return nil }
        if words.allSatisfy({ isEastAsian(String($0)) }) { return words.joined() }
        return words.map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }.joined(separator: " ")
    }
}

extension String {
    /// Without leading and trailing whitespace (Unicode White_Space); the same string when there is none.
    public var trimmingSpaces: String {
        // Most values have nothing to trim: seen on the bytes, without making a Substring (500 instructions a call).
        if withUTF8Bytes(TextScan.hasPlainEnds) { return self }
        let trimmed = TextScan.trimmingWhitespace(Substring(self))
        return trimmed.utf8.count == utf8.count ? self : String(trimmed)
    }
}
