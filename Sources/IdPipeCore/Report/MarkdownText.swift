/// Text from outside idpipe in report.md (an id, an address, a name, a path, a reason quoting a bad value, a service's
/// message), made inert: a reviewer sees it as written, never as a link, an image, HTML, an entity, emphasis or math
/// that the account's owner or a service chose. Checked against GitHub's renderer (cmark-gfm) by `MarkdownTextTests`.
extension MarkdownReport {
    /// As running text. The ASCII punctuation that can start Markdown or HTML inline is escaped with a backslash
    /// (CommonMark takes an escape before any ASCII punctuation), a line end is a space, and a character that acts
    /// rather than shows is written as its code (`VisibleText`). GFM's links made from bare text are broken where they
    /// start (`www\.`, `http\://`); an address (`ann@x.example`, `xmpp:ann@x.example`) is still linked, to itself,
    /// which no escape prevents. An `_` between two letters or digits is left as it is: it cannot emphasize, and ids
    /// and addresses have many. `|` is left to the table cell (`cell`), which escapes it once.
    static func escaped(_ value: String) -> String {
        let scalars = Array(value.unicodeScalars)
        var out = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            switch scalar {
            case "\\", "`", "*", "~", "[", "]", "<", ">", "&", "$":
                out.append("\\")
            case "_":
                if !(isWordScalar(scalars, index - 1) && isWordScalar(scalars, index + 1)) { out.append("\\") }
            case ":":
                if index + 1 < scalars.count && scalars[index + 1] == "/" { out.append("\\") }
            case ".":
                if index >= 3 && scalars[(index - 3)..<index].allSatisfy({ $0 == "w" || $0 == "W" }) { out.append("\\") }
            case "\n", "\r":
                out.append(" ")
                continue
            default:
                if VisibleText.isHidden(scalars, index) {
                    out.append(contentsOf: VisibleText.code(scalar).unicodeScalars)
                    continue
                }
            }
            out.append(scalar)
        }
        return String(out)
    }

    /// As a code span, shown in full as written: its fence is one backtick longer than the longest run of backticks in
    /// it, and a space pads a value that starts or ends with one, or with a space at both ends (CommonMark takes one
    /// off each end of a span that is not all spaces). A line end is a space, and a hidden character its code. Empty
    /// for an empty value (no code span is empty).
    static func code(_ value: String) -> String {
        guard !value.isEmpty else { return "" }
        let scalars = Array(value.unicodeScalars)
        var flat = ""
        var run = 0, longest = 0
        for (index, scalar) in scalars.enumerated() {
            if scalar == "`" { run += 1; longest = max(longest, run) } else { run = 0 }
            if scalar == "\n" || scalar == "\r" {
                flat.unicodeScalars.append(" ")
            } else if VisibleText.isHidden(scalars, index) {
                flat += VisibleText.code(scalar)
            } else {
                flat.unicodeScalars.append(scalar)
            }
        }
        let fence = String(repeating: "`", count: longest + 1)
        let spacedEnds = flat.hasPrefix(" ") && flat.hasSuffix(" ") && flat.unicodeScalars.contains { $0 != " " }
        let pad = flat.hasPrefix("`") || flat.hasSuffix("`") || spacedEnds ? " " : ""
        return fence + pad + flat + pad + fence
    }

    private static func isWordScalar(_ scalars: [Unicode.Scalar], _ index: Int) -> Bool {
        guard scalars.indices.contains(index) else { return false }
        let properties = scalars[index].properties
        return properties.isAlphabetic || properties.numericType != nil
    }
}
