import Testing

@testable import IdPipeCore

/// What a person is shown of text from outside idpipe: characters that act rather than show, as their code.
struct VisibleTextTests {
    @Test(arguments: [
        ("plain ASCII", "plain ASCII"),
        ("clear\u{1B}[2Jscreen", #"clear\u{1B}[2Jscreen"#),
        ("bell\u{7} back\u{8}\u{8}", #"bell\u{7} back\u{8}\u{8}"#),
        ("C1 \u{9B}31m", #"C1 \u{9B}31m"#),
        ("admin\u{200B}", #"admin\u{200B}"#),
        ("\u{FEFF}bom", #"\u{FEFF}bom"#),
        ("txt\u{202E}exe.scr", #"txt\u{202E}exe.scr"#),
        ("soft\u{AD}hyphen", #"soft\u{AD}hyphen"#),
        ("line\u{2028}separator", #"line\u{2028}separator"#),
        ("two\nlines\tand a tab", #"two\u{A}lines\u{9}and a tab"#),
        ("a\u{200D}b", #"a\u{200D}b"#),
        // Joiners that shape letters or an emoji sequence, between characters beyond ASCII, are kept.
        ("می\u{200C}خواهم", "می\u{200C}خواهم"),
        ("👨\u{200D}👩\u{200D}👧", "👨\u{200D}👩\u{200D}👧"),
        // Scotland's flag: a black flag and its tags; tags elsewhere are hidden.
        ("\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}"),
        ("a\u{E0067}", #"a\u{E0067}"#),
        ("Thérèse 山田 ﬁ", "Thérèse 山田 ﬁ"),
    ])
    func charactersThatActAreShownAsTheirCode(_ text: String, _ expected: String) {
        #expect(VisibleText.shown(text) == expected)
    }

    @Test func lineEndsAndTabsMayBeKept() {
        #expect(VisibleText.shown("a\n\tb\u{1B}", keeping: ["\n", "\t"]) == "a\n\tb\\u{1B}")
    }
}
