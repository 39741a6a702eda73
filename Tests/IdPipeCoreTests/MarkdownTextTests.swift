import Foundation
import IdPipeTestSupport
import Testing

@testable import IdPipeCore

/// report.md shows ids, addresses, names, paths and messages from outside idpipe. Rendered by GitHub's renderer
/// (cmark-gfm, `render_markdown.py`), each must read as written: no link, image, HTML, entity or emphasis of its own.
struct MarkdownTextTests {
    static let hostile = [
        "[approve](https://evil.example/ok)", "![x](https://evil.example/p.png)", "<img src=x onerror=alert(1)>", "<https://evil.example>",
        "www.evil.example/login", "WWW.EVIL.EXAMPLE", "see https://evil.example/x now", "ftp://evil.example", "**Approved** by _security_",
        "*a* ~~struck~~ ~x~", "&#x202E;txt.exe &amp; &lt;", "`code` and ``two``", "a|b|c", #"back\slash \* \|"#, "line1\nline2\r\nline3",
        "$x^2$ and $$y$$", "user_name_1 _lead trail_ __x__ a_ _b", "Mary O'Brien (ü) 山田_太郎", "# not a heading", "[x]: https://evil.example",
        "[ref][x] [y]", "<!-- comment -->", "ends with a backslash\\", "ann@x.example", "a•••@x.example", "+1••••••0123", "> quote",
        "1. item", "- item", "http://", "[]()", "_", "__", "\\",
    ]

    /// The text between `start` and `end` in `html`.
    static func between(_ html: String, _ start: String, _ end: String) -> String? {
        guard let open = html.range(of: start), let close = html.range(of: end, range: open.upperBound..<html.endIndex) else { return nil }
        return String(html[open.upperBound..<close.lowerBound])
    }

    /// The text of rendered HTML that has no tag but links of an address to itself (GFM links every address in text,
    /// whatever is escaped); nil when it has any other tag.
    static func plainText(_ html: String) -> String? {
        let unlinked = html.replacingOccurrences(of: #"<a href="mailto:([^"]*)">\1</a>"#, with: "$1", options: .regularExpression)
        guard !unlinked.contains("<") else { return nil }
        return unescaped(unlinked)
    }

    static func unescaped(_ html: String) -> String {
        html.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }

    static func flat(_ value: String) -> String {
        String(String.UnicodeScalarView(value.unicodeScalars.map { $0 == "\n" || $0 == "\r" ? " " : $0 }))
    }

    @Test func escapedTextReadsAsWrittenInACellAndInASentence() throws {
        let documents = Self.hostile.flatMap { value in
            ["| h |\n|---|\n| \(MarkdownReport.cell(MarkdownReport.escaped(value))) |\n", "Before \(MarkdownReport.escaped(value)) after.\n"]
        }
        let html = try TestPython.renderMarkdown(documents)
        for (index, value) in Self.hostile.enumerated() {
            let expected = Self.flat(value)
            let cell = Self.between(html[2 * index], "<td>", "</td>")
            #expect(cell.flatMap(Self.plainText) == expected.trimmingCharacters(in: .whitespaces), "\(value) in a cell: \(html[2 * index])")
            let sentence = Self.between(html[2 * index + 1], "<p>", "</p>")
            #expect(sentence.flatMap(Self.plainText) == "Before \(expected) after.", "\(value) in a sentence: \(html[2 * index + 1])")
        }
    }

    @Test func aCodeSpanShowsTheValueWhole() throws {
        let values = Self.hostile + ["`", "``x``", " padded ", "` x", "x `", "a`b", "  "]
        let html = try TestPython.renderMarkdown(values.map { "| h |\n|---|\n| \(MarkdownReport.cell(MarkdownReport.code($0))) |\n" })
        for (value, rendered) in zip(values, html) {
            let cell = Self.between(rendered, "<td>", "</td>")
            #expect(cell.map(Self.unescaped) == "<code>\(Self.flat(value))</code>", "\(value): \(rendered)")
        }
        #expect(MarkdownReport.code("") == "")
        #expect(MarkdownReport.code("a\u{1B}[2J\u{202E}b") == #"`a\u{1B}[2J\u{202E}b`"#)
    }

    /// What the escapes look like, for a reviewer reading report.md as text: ids and addresses stay as they are.
    @Test(arguments: [
        ("uid_123", "uid_123"), ("first_last@x.example", "first_last@x.example"), ("_x_", #"\_x\_"#), ("a*b", #"a\*b"#),
        ("[x](y)", #"\[x\](y)"#), ("<b>", #"\<b\>"#), ("www.x.example", #"www\.x.example"#), ("https://x", #"https\://x"#),
        ("a:b", "a:b"), ("a|b", "a|b"), ("l1\r\nl2", "l1  l2"), ("€5 & $5", #"€5 \& \$5"#), ("a\u{1B}[2Jb", #"a\u{1B}\[2Jb"#),
        ("txt\u{202E}exe.scr", #"txt\u{202E}exe.scr"#), ("tab\there", #"tab\u{9}here"#), ("admin\u{200B}", #"admin\u{200B}"#),
    ])
    func escapes(value: String, expected: String) {
        #expect(MarkdownReport.escaped(value) == expected)
    }

    @Test func aCellEndsNoLine() {
        #expect(MarkdownReport.cell("a|b\r\nc\rd\ne") == #"a\|b  c d e"#)
    }
}
