/// Text from outside idpipe (a service's message, an id, a header) made safe to show a person: a character that acts
/// rather than shows is written as its code, `\u{1B}`, as the quarantine writes a control character. That is a control
/// character (an ESC reaches the terminal, and a BS rubs out what came before), an invisible format character
/// (`admin\u{200B}` reads as `admin`), a mark that reorders the text around it (U+202E shows `exe.txt` for `txt.exe`),
/// or a line or paragraph separator.
public enum VisibleText {
    /// `text` with each hidden character (`isHidden`) written as its code, but those in `keeping` (the line ends of a
    /// message written a line at a time).
    public static func shown(_ text: String, keeping: Set<Unicode.Scalar> = []) -> String {
        // Most text is plain ASCII: nothing to look at beyond a control byte.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        for index in scalars.indices {
            let scalar = scalars[index]
            if !keeping.contains(scalar) && isHidden(scalars, index) {
                out.append(contentsOf: code(scalar).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Whether `scalars[index]` is hidden: a control or format character, or a line or paragraph separator. A zero-width
    /// joiner or non-joiner between two characters beyond ASCII is not: it shapes the letters of Persian or the
    /// Indic scripts, or joins an emoji sequence, in names written so; nor are the tags of a region's flag.
    public static func isHidden(_ scalars: [Unicode.Scalar], _ index: Int) -> Bool {
        let scalar = scalars[index]
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator:
            return true
        case .format:
            // The tags that follow a black flag spell a region's flag (England's, Scotland's, Wales's).
            if (0xE0020...0xE007F).contains(scalar.value) {
                var before = index - 1
                while before >= 0, (0xE0020...0xE007F).contains(scalars[before].value) { before -= 1 }
                return !(before >= 0 && scalars[before].value == 0x1F3F4)
            }
            guard scalar.value == 0x200C || scalar.value == 0x200D else { return true }
            return !(index > 0 && !scalars[index - 1].isASCII && index + 1 < scalars.count && !scalars[index + 1].isASCII)
        default:
            return false
        }
    }

    /// `\u{1B}`: the character's code, as Swift writes it.
    public static func code(_ scalar: Unicode.Scalar) -> String {
        "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
    }
}
