import Testing
import IdPipeTestSupport
@testable import IdPipeCore

@Suite struct EmailNormalizerTests {
    @Test(arguments: [
        ("jane@example.com", "jane@example.com", [Repair]()),
        ("  Jane@Example.COM ", "Jane@example.com", [.emailTrimmed, .emailDomainLowercased]),
        ("anna@bücher.example", "anna@xn--bcher-kva.example", [.emailDomainIDNA]),
        ("taro@例え.jp", "taro@xn--r8jz45g.jp", [.emailDomainIDNA]),
        ("x@münchen.DE", "x@xn--mnchen-3ya.de", [.emailDomainIDNA]),
        ("abc123@privaterelay.appleid.com", "abc123@privaterelay.appleid.com", []),
        ("\u{3000}mei@example.org", "mei@example.org", [.emailTrimmed]),
        // One domain written another way gets the same form: decomposed (u and a combining diaeresis), fullwidth
        // letters, an ideographic full stop for a dot.
        ("anna@bu\u{0308}cher.example", "anna@xn--bcher-kva.example", [.emailDomainIDNA]),
        ("anna@BU\u{0308}CHER.example", "anna@xn--bcher-kva.example", [.emailDomainIDNA]),
        ("boss@ｃｏｒｐ.example", "boss@corp.example", [.emailDomainIDNA]),
        ("taro@例え。jp", "taro@xn--r8jz45g.jp", [.emailDomainIDNA]),
        // Characters UTS #46 ignores are dropped (they made another domain: a protected one no longer matched, a relay
        // address passed for a real one), and Hangul written as jamo is composed.
        ("boss@corp.example\u{00AD}", "boss@corp.example", [.emailDomainIDNA]),
        ("boss@corp\u{200B}.example", "boss@corp.example", [.emailDomainIDNA]),
        ("boss@\u{FEFF}corp.example", "boss@corp.example", [.emailDomainIDNA]),
        ("ab1@privaterelay.appleid.com\u{2060}", "ab1@privaterelay.appleid.com", [.emailDomainIDNA]),
        ("boss@\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}.example", "boss@xn--3e0b707e.example", [.emailDomainIDNA]),
        ("boss@한국.example", "boss@xn--3e0b707e.example", [.emailDomainIDNA]),
        ("ç@example.com", "ç@example.com", []),
    ])
    func repairs(input: String, expected: String, repairs expectedRepairs: [Repair]) {
        var repairs = RepairSet()
        let result = EmailNormalizer.normalize(input, repairs: &repairs)
        #expect(result == .success(expected))
        #expect(repairs.all == expectedRepairs)
    }

    @Test(arguments: [
        ("not-an-email", "has no @"),
        ("a@@b.com", "has more than one @"),
        ("x@", "has no domain"),
        ("@example.com", "has an empty local part"),
        ("jane doe@example.com", "contains whitespace or a control character"),
        ("jane@example", "domain 'example' has no dot"),
        ("jane@exa_mple.com", "domain 'exa_mple.com' contains '_'"),
        ("jane..doe@example.com", "local part has two dots in a row"),
        ("jane@-example.com", "domain label starts or ends with '-'"),
        ("jane@example.123", "domain 'example.123' ends in a numeric label"),
        ("boss@corp\u{200D}.example", "domain contains a zero-width joiner or non-joiner"),
        ("jane\u{00A0}@example.com", "local part contains white space or an invisible character (U+A0)"),
        ("jane\u{3000}x@example.com", "local part contains white space or an invisible character (U+3000)"),
        ("ja\u{202E}ne@example.com", "local part contains white space or an invisible character (U+202E)"),
        ("jane\u{0085}@example.com", "local part contains white space or an invisible character (U+85)"),
        ("jane\u{00AD}@example.com", "local part contains white space or an invisible character (U+AD)"),
    ])
    func rejects(input: String, reason: String) {
        var repairs = RepairSet()
        #expect(EmailNormalizer.normalize(input, repairs: &repairs) == .failure(RecordIssueReason(reason)))
    }
}

extension EmailNormalizerTests {
    /// The one-pass check may only say "already normal" where the full path returns the address unchanged with no
    /// repair; and it must say so for ordinary addresses, or it saves nothing.
    @Test(arguments: [
        ("jane@example.com", true), ("a.b-c+tag@mail.example.co.uk", true), ("x@a1.io", true), ("7@b.c", true),
        ("abc123@privaterelay.appleid.com", true), ("o'brien@example.ie", true), ("a@xn--bcher-kva.example", true),
        (String(repeating: "l", count: 64) + "@example.com", true), ("j@" + String(repeating: "d", count: 63) + ".com", true),
        (String(repeating: "l", count: 65) + "@example.com", false), ("j@" + String(repeating: "d", count: 64) + ".com", false),
        ("Jane@Example.com", false), (" jane@example.com", false), ("jane@example.com ", false), ("jane@example", false),
        ("jane@example.123", false), ("jane@example.c0m", true), ("jane@-example.com", false), ("jane@example-.com", false),
        ("jane@ex-ample.com", true), ("jane@example..com", false), ("jane@.example.com", false), ("jane@example.com.", false),
        (".jane@example.com", false), ("jane.@example.com", false), ("ja..ne@example.com", false), ("a@@b.com", false),
        ("a@b@c.com", false), ("@example.com", false), ("jane@", false), ("ja ne@example.com", false), ("ja(ne@example.com", false),
        ("jane@exa_mple.com", false), ("zoë@example.com", false), ("jane@bücher.example", false), ("jane@example.com\u{7F}", false),
        ("jane@EXAMPLE.COM", false), ("", false), ("plain", false),
    ])
    func fastPathAgreesWithFullPath(input: String, normal: Bool) {
        let fast = Array(input.utf8).withUnsafeBufferPointer(EmailNormalizer.isAlreadyNormal)
        #expect(fast == normal)
        var repairs = RepairSet()
        let full = EmailNormalizer.normalizeFully(input, repairs: &repairs)
        if fast {
            #expect(full == .success(input))
            #expect(repairs.all.isEmpty)
        } else {
            // Whatever the full path makes of it, the entry point gives the same answer.
            var again = RepairSet()
            #expect(EmailNormalizer.normalize(input, repairs: &again) == full)
        }
    }
}

@Suite struct PhoneNormalizerTests {
    @Test(arguments: [
        ("+14155550100", "+14155550100", false),
        ("+1 (415) 555-0100", "+14155550100", true),
        ("0044 20 7946 0958", "+442079460958", true),
        ("+81-3-1234-5678", "+81312345678", true),
        // The trunk prefix in brackets is no digit of the international number (it made +4402079460958).
        ("+44 (0)20 7946 0958", "+442079460958", true),
        ("+44 (0) 7700 900123", "+447700900123", true),
        ("0049 (0)30 1234567", "+49301234567", true),
        // Italy keeps its 0 abroad, and a (0) elsewhere is taken as written.
        ("+39 (0)6 6988 1234", "+390669881234", true),
        ("+44 20 7946 (0)958", "+442079460958", true),
    ])
    func repairs(input: String, expected: String, repaired: Bool) {
        var repairs = RepairSet()
        #expect(PhoneNormalizer.normalize(input, repairs: &repairs) == .success(expected))
        #expect(repairs.contains(.phoneReformatted) == repaired)
    }

    @Test(arguments: ["555-0100", "+12", "+0123456789", "+1 415 555 0100 ext 2", "+1234567890123456", "1+2345678", "(0)20 7946 0958"])
    func rejects(input: String) {
        var repairs = RepairSet()
        guard case .failure = PhoneNormalizer.normalize(input, repairs: &repairs) else {
            Issue.record("\(input) should be rejected")
            return
        }
    }
}

/// A mapped table's numbers without a country code, read with `source.phone_country_code` and `phone_trunk_prefix`.
/// Anything that could be another person's number is refused.
@Suite struct NationalPhoneNumberTests {
    static let uk = PhoneDefault(countryCode: "44", trunkPrefix: "0")
    static let us = PhoneDefault(countryCode: "1", trunkPrefix: "1")
    static let usNoTrunk = PhoneDefault(countryCode: "1", trunkPrefix: "")
    static let italy = PhoneDefault(countryCode: "39", trunkPrefix: "")
    static let australia = PhoneDefault(countryCode: "61", trunkPrefix: "0")

    @Test(arguments: [
        ("07911 123456", uk, "+447911123456", true),
        ("(0)20 7946 0958", uk, "+442079460958", true),
        ("020 7946 0958", uk, "+442079460958", true),
        ("(415) 555-0100", us, "+14155550100", true),
        ("1 415 555 0100", us, "+14155550100", true),
        ("415.555.0100", usNoTrunk, "+14155550100", true),
        // Italy's numbers keep their 0; its mobiles start with 3.
        ("06 6988 1234", italy, "+390669881234", true),
        ("312 345 6789", italy, "+393123456789", true),
        ("04 1234 5678", australia, "+61412345678", true),
        // A number with its country code is read as before: the default is not added.
        ("+44 7911 123456", uk, "+447911123456", false),
        ("0044 7911 123456", uk, "+447911123456", false),
        ("+1 415 555 0100", uk, "+14155550100", false),
    ])
    func addsTheCountryCode(input: String, country: PhoneDefault, expected: String, added: Bool) {
        var repairs = RepairSet()
        #expect(PhoneNormalizer.normalize(input, repairs: &repairs, national: country) == .success(expected))
        #expect(repairs.contains(.phoneCountryCodeAdded) == added)
        // One repair for one change: a number given its code is rewritten in E.164 as part of it.
        #expect(!(repairs.contains(.phoneCountryCodeAdded) && repairs.contains(.phoneReformatted)))
    }

    @Test(arguments: [
        // Without the trunk prefix, a number could be another country's written without its '+'.
        ("447911123456", uk, "has neither a country code nor the trunk prefix 0"),
        ("33 6 12 34 56 78", uk, "has neither a country code nor the trunk prefix 0"),
        ("7911 123456", uk, "has neither a country code nor the trunk prefix 0"),
        // After the trunk prefix: the country's own code, or digits that no national number has.
        ("0447911123456", uk, "starts with the digits of its country code 44"),
        ("393 123 4567", italy, "starts with the digits of its country code 39"),
        ("07911 123456/12", uk, "its 12 digits are not a national number's 7 to 11"),
        ("020 7946 0958 - 123", uk, "its 13 digits are not a national number's 7 to 11"),
        ("0 0123 456789", uk, "starts with 00 and then 1, but is no North American number"),
        ("0", uk, "its 0 digits are not a national number's 7 to 11"),
        // North America: 10 digits, an area code from 2 to 9.
        ("555-0100", us, "is not a North American number of 10 digits"),
        ("0212555124", us, "is not a North American number of 10 digits"),
        ("1 112 555 1244", us, "is not a North American number of 10 digits"),
        ("1 415 555 0100", usNoTrunk, "is not a North American number of 10 digits"),
        // 0011 is Australia's international prefix: read as 00, it made +11447911123456.
        ("0011 44 7911 123456", australia, "starts with 00 and then 1, but is no North American number"),
    ])
    func refusesWhatItCannotTell(input: String, country: PhoneDefault, reason: String) {
        var repairs = RepairSet()
        guard case .failure(let why) = PhoneNormalizer.normalize(input, repairs: &repairs, national: country) else {
            Issue.record("\(input) should be refused")
            return
        }
        #expect("\(why)".contains(reason), "\(why)")
        #expect("\(why)".contains("write it in E.164 at the source"), "\(why)")
        #expect(repairs.isEmpty)
    }
}

@Suite struct DisplayNameCleanerTests {
    @Test(arguments: [
        ("Jane Doe", "Jane Doe" as String?, [Repair]()),
        ("  Jane   Doe ", "Jane Doe", [.nameWhitespace]),
        ("Jane\tDoe", "Jane Doe", [.nameWhitespace]),
        ("Line\nBreak", "Line Break", [.nameWhitespace]),
        ("Evil\u{202E}Name", "EvilName", [.nameControlCharacters]),
        ("Bell\u{07}", "Bell", [.nameControlCharacters]),
        ("山田\u{3000}太郎", "山田 太郎", [.nameWhitespace]),
        ("Zoë Ångström", "Zoë Ångström", []),
        ("   ", nil, [.nameWhitespace]),
        ("", nil, []),
        // Zero-width spaces only are no name; joiners inside a script's word stay.
        ("\u{200B} \u{200B}", nil, [.nameWhitespace, .nameControlCharacters]),
        ("Jo\u{2060}hn", "John", [.nameControlCharacters]),
        ("\u{0645}\u{06CC}\u{200C}\u{0634}\u{0648}\u{062F}", "\u{0645}\u{06CC}\u{200C}\u{0634}\u{0648}\u{062F}", []),
        // A name of characters that show nothing only looked filled: kept, it was never filled from a source.
        ("\u{061C}", nil, [.nameControlCharacters]), ("\u{00AD}", nil, [.nameControlCharacters]),
        ("\u{2063}", nil, [.nameControlCharacters]), ("\u{180E}", nil, [.nameControlCharacters]),
        ("\u{034F}", nil, [.nameControlCharacters]), ("\u{FE0F}", nil, [.nameControlCharacters]),
        ("\u{E0041}", nil, [.nameControlCharacters]), ("\u{200D}", nil, [.nameControlCharacters]),
        ("\u{3164}", nil, [.nameControlCharacters]), ("\u{3164} \u{200D}", nil, [.nameControlCharacters]),
        ("\u{17B4}\u{17B5}", nil, [.nameControlCharacters]), ("\u{1BCA0}", nil, [.nameControlCharacters]),
        ("\u{1D173}", nil, [.nameControlCharacters]), ("\u{FFF9}", nil, [.nameControlCharacters]), ("\u{13430}", nil, [.nameControlCharacters]),
        // Inside a name they stay (an emoji's selector, a joiner), and the bidi letter mark goes.
        ("Ann \u{2764}\u{FE0F}", "Ann \u{2764}\u{FE0F}", []), ("\u{0633}\u{061C}\u{0627}", "\u{0633}\u{0627}", [.nameControlCharacters]),
    ])
    func cleans(input: String, expected: String?, repairs expectedRepairs: [Repair]) {
        var repairs = RepairSet()
        #expect(DisplayNameCleaner.clean(input, repairs: &repairs) == .success(expected))
        #expect(repairs.all == expectedRepairs)
    }

    /// The byte-level check that lets a name through unchanged must agree with the scalar-by-scalar path, on names
    /// mixing letters of several scripts with every space and control it treats specially and their neighbours.
    @Test func theQuickCheckAgreesWithTheFullPath() {
        let alphabet: [Unicode.Scalar] = [
            "a", "Z", " ", "\t", "\n", "\u{7F}", "\u{80}", "\u{85}", "\u{9F}", "\u{A0}", "\u{A1}", "é", "ß", "Ω", "\u{1680}", "\u{1681}",
            "\u{2000}", "\u{200A}", "\u{200B}", "\u{200E}", "\u{2010}", "\u{2028}", "\u{202E}", "\u{202F}", "\u{205F}", "\u{2066}",
            "\u{2070}", "\u{3000}", "\u{3001}", "カ", "山", "한", "\u{FEFF}", "\u{FEFE}", "\u{FF21}", "😀",
            "\u{AD}", "\u{34F}", "\u{61C}", "\u{115F}", "\u{180E}", "\u{200D}", "\u{3164}", "\u{FE0F}", "\u{FFA0}", "\u{E0041}",
            "\u{17B4}", "\u{1BCA0}", "\u{1D173}", "\u{FFF9}", "\u{13430}",
        ]
        var random = SeededGenerator(seed: 7)
        for _ in 0..<20000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...6, using: &random) { scalars.append(alphabet.randomElement(using: &random)!) }
            let name = String(scalars)
            var quick = RepairSet(), full = RepairSet()
            let cleaned = DisplayNameCleaner.cleanedScalars(name, repairs: &full)
            #expect(DisplayNameCleaner.clean(name, repairs: &quick) == .success(cleaned.isEmpty ? nil : cleaned),
                    "\(name.unicodeScalars.map { String($0.value, radix: 16) })")
            #expect(quick == full)
            if name.utf8.withContiguousStorageIfAvailable(DisplayNameCleaner.isAlreadyClean) == true { #expect(cleaned == name) }
        }
    }

    /// `trimmingSpaces`, which answers on the bytes when both ends are plain ASCII, removes exactly the Unicode
    /// White_Space scalars at either end, on text mixing them with their neighbours.
    @Test func trimmingRemovesWhiteSpaceAtTheEndsOnly() {
        let alphabet: [Unicode.Scalar] = ["a", "Z", "!", "~", " ", "\t", "\n", "\r", "\u{7F}", "\u{85}", "\u{A0}", "é", "\u{301}", "\u{1680}",
                                          "\u{2000}", "\u{200B}", "\u{2028}", "\u{202F}", "\u{3000}", "山", "😀"]
        var random = SeededGenerator(seed: 11)
        for _ in 0..<20000 {
            var scalars: [Unicode.Scalar] = []
            for _ in 0..<Int.random(in: 0...24, using: &random) { scalars.append(alphabet.randomElement(using: &random)!) }
            let text = String(String.UnicodeScalarView(scalars))
            while let first = scalars.first, first.properties.isWhitespace { scalars.removeFirst() }
            while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
            #expect(Array(text.trimmingSpaces.unicodeScalars) == scalars, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test func rejectsNamesLongerThanTheAPIAllows() {
        var repairs = RepairSet()
        let long = String(repeating: "a", count: 257)
        guard case .failure = DisplayNameCleaner.clean(long, repairs: &repairs) else {
            Issue.record("a 257-character name must be rejected")
            return
        }
    }
}

@Suite struct AccountNormalizerTests {
    @Test func rejectsTheFieldAtFault() {
        let cases: [(Account, String)] = [
            (Account(localId: ""), "localId"),
            (Account(localId: "u1", email: "bad"), "email"),
            (Account(localId: "u1", phoneNumber: "555"), "phoneNumber"),
            (Account(localId: "u1", providers: [ProviderLink(providerId: "apple.com", rawId: "")]), "providerUserInfo[0].rawId"),
            (Account(localId: "u1", providers: [ProviderLink(providerId: "myspace.com", rawId: "1")]), "providerUserInfo[0].providerId"),
            (Account(localId: "u1", providers: [ProviderLink(providerId: "apple.com", rawId: "1"), ProviderLink(providerId: "apple.com", rawId: "2")]),
             "providerUserInfo[1].providerId"),
            (Account(localId: "u1", providers: [ProviderLink(providerId: "google.com", rawId: "1", email: "x@@y")]), "providerUserInfo[0].email"),
        ]
        for (account, field) in cases {
            guard case .failure(let issue) = AccountNormalizer.normalize(account) else {
                Issue.record("\(account) should be rejected")
                continue
            }
            #expect(issue.field == field)
        }
    }

    /// Every field is checked whatever the others gave: the issue names the first fault and carries the rest, in the
    /// order of the checks; an account with one fault carries none.
    @Test func namesEveryFaultOfTheAccount() {
        let account = Account(localId: " u1", email: "bad", displayName: "\u{200B}", createdAt: -5_000_000_000_000, phoneNumber: "555",
                              providers: [ProviderLink(providerId: "apple.com", rawId: ""), ProviderLink(providerId: "myspace.com", rawId: "1"),
                                          ProviderLink(providerId: "apple.com", rawId: "2")])
        guard case .failure(let issue) = AccountNormalizer.normalize(account) else {
            Issue.record("\(account) should be rejected")
            return
        }
        #expect(issue.all.map(\.field) == ["localId", "email", "phoneNumber", "createdAt", "providerUserInfo[0].rawId",
                                            "providerUserInfo[1].providerId", "providerUserInfo[2].providerId"], "\(issue)")
        #expect(issue.others.allSatisfy { (other: RecordIssue) in other.others.isEmpty })
        guard case .failure(let single) = AccountNormalizer.normalize(Account(localId: "u1", email: "bad")) else {
            Issue.record("a bad address should be rejected")
            return
        }
        #expect(single.others.isEmpty)
        // A decoder's issues come first; normalization adds those of the other fields only.
        let decoded = RecordIssue([RecordIssue(field: "createdAt", reason: "is not a time"), RecordIssue(field: "email", reason: "is given twice")])!
        let export = AccountNormalizer.Options(secondsMayPassForMilliseconds: true)
        let bad = Account(localId: "u1", email: "bad", phoneNumber: "555")
        let combined = AccountNormalizer.issue(decoded: decoded, in: bad, options: export)
        #expect(combined.all.map { (issue: RecordIssue) in issue.field } == ["createdAt", "email", "phoneNumber"])
        #expect(combined.all[1].reason == "is given twice")
        #expect(AccountNormalizer.issue(decoded: decoded, in: Account(localId: "u1"), options: export) == decoded)
        // With the normalize stage off, only what the decoder found: the stage would not have refused the rest.
        #expect(AccountNormalizer.issue(decoded: decoded, in: bad, options: nil) == decoded)
        // A table's national number, completed by its country, is no problem.
        let uk = AccountNormalizer.Options(secondsMayPassForMilliseconds: false, phones: PhoneDefault(countryCode: "44", trunkPrefix: "0"))
        let national = AccountNormalizer.issue(decoded: decoded, in: Account(localId: "u1", phoneNumber: "07911 123456"), options: uk)
        #expect(national == decoded)
    }

    /// Whitespace around ids and in blank fields, on the bytes' fast path (plain ASCII ends) and off it (other
    /// Unicode white space at an end).
    @Test(arguments: [
        (" u1", "localId: has surrounding whitespace"),
        ("u1\u{3000}", "localId: has surrounding whitespace"),
        ("\u{2003} \t", "localId: is missing or empty"),
        (String(repeating: "u", count: 129), "localId: is longer than 128 bytes"),
        (" " + String(repeating: "u", count: 128), "localId: has surrounding whitespace"),
        // A NUL ended the id where a C string carried it: the report named the account `u1`.
        ("u1\u{0}x", "localId: contains a control character"),
        ("u\u{7F}", "localId: contains a control character"),
        ("c2\u{9B}31mRED", "localId: contains a control character"), ("c1\u{85}x", "localId: contains a control character"),
    ])
    func idsWithWhitespaceAreRejected(localId: String, expected: String) {
        guard case .failure(let issue) = AccountNormalizer.normalize(Account(localId: localId)) else {
            Issue.record("'\(localId)' should be rejected")
            return
        }
        #expect("\(issue.field): \(issue.reason)" == expected)
    }

    @Test func blankFieldsAndRawIdsAreSeenOnEitherPath() throws {
        let blank = try AccountNormalizer.normalize(Account(localId: "u1", email: "  ", phoneNumber: "\u{2003}")).get().0
        #expect(blank.email == nil && blank.phoneNumber == nil)
        for rawId in [" \t", "\u{3000}"] {
            guard case .failure(let issue) = AccountNormalizer.normalize(Account(localId: "u1", providers: [ProviderLink(providerId: "apple.com", rawId: rawId)])) else {
                Issue.record("rawId '\(rawId)' should be rejected")
                continue
            }
            #expect(issue.field == "providerUserInfo[0].rawId" && issue.reason == "is empty")
        }
        // An id with spaces around it, as the account's own id, is taken as written or refused: never trimmed.
        for rawId in [" 456 ", "001.a.1\t", "\u{3000}x"] {
            let account = Account(localId: "u1", providers: [ProviderLink(providerId: "facebook.com", rawId: "1"), ProviderLink(providerId: "apple.com", rawId: rawId)])
            guard case .failure(let issue) = AccountNormalizer.normalize(account) else {
                Issue.record("rawId '\(rawId)' should be rejected")
                continue
            }
            #expect(issue.field == "providerUserInfo[1].rawId" && issue.reason == "has surrounding whitespace", "\(issue)")
        }
    }

    @Test func repairsTimestampsInSecondsAndProviderIdCase() throws {
        let account = Account(localId: "u1", createdAt: 1_600_000_000, providers: [ProviderLink(providerId: " Apple.com", rawId: "s")])
        guard case .success(let (normalized, repairs)) = AccountNormalizer.normalize(account) else {
            Issue.record("should normalize")
            return
        }
        #expect(normalized.createdAt == 1_600_000_000_000)
        #expect(normalized.providers[0].providerId == "apple.com")
        #expect(repairs.contains(.timestampInSeconds) && repairs.contains(.providerIdCase))
    }

    /// Ids spelled as the exports spell them need no repair; anything else is trimmed, lower-cased and checked.
    @Test(arguments: [
        ("apple.com", "apple.com", false), ("password", "password", false), ("phone", "phone", false),
        ("Apple.com", "apple.com", true), ("apple.com ", "apple.com", true), ("oidc.Corp", "oidc.corp", true),
        ("oidc.corp", "oidc.corp", false), ("saml.x", "saml.x", false), ("PHONE", "phone", true),
    ])
    func providerIdsAreRepairedOnlyWhenNeeded(_ id: String, _ expected: String, _ repaired: Bool) throws {
        let account = Account(localId: "u1", providers: [ProviderLink(providerId: id, rawId: "1")])
        guard case .success(let (normalized, repairs)) = AccountNormalizer.normalize(account) else {
            Issue.record("\(id) should normalize")
            return
        }
        #expect(normalized.providers[0].providerId == expected)
        #expect(repairs.contains(.providerIdCase) == repaired)
    }

    /// A provider email that is the account's own text normalizes as the account's did (it takes that result); a
    /// different one is normalized on its own, its repairs noted too.
    @Test func providerEmailsNormalizeWhetherOrNotTheyRepeatTheAccounts() throws {
        let account = Account(localId: "u1", email: " Jane@Example.COM", providers: [
            ProviderLink(providerId: "apple.com", rawId: "1", email: " Jane@Example.COM"),
            ProviderLink(providerId: "google.com", rawId: "2", email: "jane@bücher.example"),
            ProviderLink(providerId: "facebook.com", rawId: "3", email: "jane@example.com"),
        ])
        guard case .success(let (normalized, repairs)) = AccountNormalizer.normalize(account) else {
            Issue.record("should normalize")
            return
        }
        #expect(normalized.email == "Jane@example.com")
        #expect(normalized.providers.map(\.email) == ["Jane@example.com", "jane@xn--bcher-kva.example", "jane@example.com"])
        #expect(repairs.all == [.emailTrimmed, .emailDomainLowercased, .emailDomainIDNA])
        let alone = Account(localId: "u2", providers: [ProviderLink(providerId: "apple.com", rawId: "1", email: " Jane@Example.COM")])
        guard case .success(let (single, singleRepairs)) = AccountNormalizer.normalize(alone) else {
            Issue.record("should normalize")
            return
        }
        #expect(single.providers[0].email == "Jane@example.com")
        #expect(singleRepairs.all == [.emailTrimmed, .emailDomainLowercased])
        // The same characters spelled with other bytes (é precomposed, then as e and a combining accent) are equal
        // strings to Swift, but each address keeps its own bytes.
        let spelled = Account(localId: "u3", email: "jos\u{E9}@example.com",
                              providers: [ProviderLink(providerId: "apple.com", rawId: "1", email: "jose\u{301}@example.com")])
        guard case .success(let (respelled, _)) = AccountNormalizer.normalize(spelled) else {
            Issue.record("should normalize")
            return
        }
        #expect(Array(respelled.email!.utf8) == Array("jos\u{E9}@example.com".utf8))
        #expect(Array(respelled.providers[0].email!.utf8) == Array("jose\u{301}@example.com".utf8))
        // So each is held to the limits on its own bytes: 32 é fit the local part's 64 bytes; as e and an accent, not.
        let long = Account(localId: "u4", email: String(repeating: "\u{E9}", count: 32) + "@example.com",
                           providers: [ProviderLink(providerId: "apple.com", rawId: "1", email: String(repeating: "e\u{301}", count: 32) + "@example.com")])
        guard case .failure(let issue) = AccountNormalizer.normalize(long) else {
            Issue.record("the provider's email is too long")
            return
        }
        #expect(issue.field == "providerUserInfo[0].email")
    }
}

/// Short strings (up to 15 UTF-8 bytes live inside the value) now take the byte-level fast checks too: each fast path
/// gives what its full path gives, for short and long values alike.
@Suite struct ShortTextFastPathTests {
    @Test func stringsAreReadAsTheirBytesWhateverTheirLength() {
        for text in ["", "a", "Ann", "fifteen bytes!!", "sixteen bytes!!!", "山田太郎", String(repeating: "é", count: 40), String("  x  ".dropFirst())] {
            #expect(text.withUTF8Bytes { Array($0) } == Array(text.utf8), "\(text)")
        }
    }

    @Test(arguments: ["a@b.co", "x@y.example", "Ab@b.co", "a@B.co", " a@b.co", "a@b.co ", "a..b@c.de", ".a@b.cd", "a@b", "a@1.23", "a@-b.co",
                      "a@b-.co", "a(b@c.de", "a@bü.de", "jane.doe@example.com", "JANE.DOE@EXAMPLE.COM", "a@b.c-d.co"])
    func emailsGetWhatTheFullPathGives(_ email: String) {
        var fast = RepairSet(), full = RepairSet()
        let quick = EmailNormalizer.normalize(email, repairs: &fast)
        let reference = EmailNormalizer.normalizeFully(email, repairs: &full)
        #expect("\(quick)" == "\(reference)" && fast == full, "\(email)")
    }

    @Test(arguments: ["Ann", "Ann Lee", " Ann", "Ann ", "Ann  Lee", "A\u{202E}nn", "Zoë", "山田 太郎", "a\tb", "", "Jean-Luc Picard",
                      "A very long name of more than fifteen bytes", "  padded long name of many bytes  "])
    func namesGetWhatTheFullPathGives(_ name: String) {
        var fast = RepairSet(), full = RepairSet()
        let quick = DisplayNameCleaner.clean(name, repairs: &fast)
        let cleaned = DisplayNameCleaner.cleanedScalars(name, repairs: &full)
        var unused = RepairSet()
        let reference = DisplayNameCleaner.clean(cleaned, repairs: &unused)
        #expect("\(quick)" == "\(reference)" && fast == full, "\(name)")
    }
}

@Suite struct QuarantineEntryTests {
    /// A value a reason quotes, and the id, keep their control characters as escapes: a NUL cut the text short in the
    /// state store, and the masked report showed the start of the value in clear.
    @Test func controlCharactersAreWrittenAsEscapes() {
        let entry = QuarantineEntry(position: SourcePosition(file: "a.json", line: 1), localId: "a2\u{0}zz", field: "email",
                                    reason: "domain 'exa\u{0}mple.com' contains '\u{1B}'")
        #expect(entry.localId == "a2\\u{0}zz")
        #expect(entry.reason == "domain 'exa\\u{0}mple.com' contains '\\u{1B}'")
        #expect(QuarantineEntry(position: entry.position, localId: "u1", field: "email", reason: "has no @").reason == "has no @")
        // An invisible format character is kept as it is: the id may be an account's, which the duplicate check and
        // the guards match as it is (quarantine.csv and report.md write it as a code).
        let invisible = QuarantineEntry(position: entry.position, localId: "admin\u{200B}", field: "email", reason: "'ann\u{200B}@x.example' is not an address")
        #expect(invisible.localId == "admin\u{200B}" && invisible.reason == "'ann\u{200B}@x.example' is not an address")
    }
}

@Suite struct TextScanTests {
    /// The word-at-a-time scan against a byte-by-byte one: every position of each byte in words and tails of every
    /// length, bytes one away from those asked for (which a wrong borrow in the zero-byte test would take), and 0x80
    /// and above.
    @Test func containsEitherFindsEveryPosition() {
        let filler: [UInt8] = [0x3F, 0x41, 0x2A, 0x2C, 0xC0, 0x80, 0xFF, 0x00, 0x01]
        for length in 0...20 {
            for fill in filler {
                for (position, byte) in [(nil, UInt8(0))] + (0..<length).flatMap({ [($0, UInt8(ascii: "@")), ($0, UInt8(ascii: "+"))] }) as [(Int?, UInt8)] {
                    var bytes = [UInt8](repeating: fill, count: length)
                    if let position { bytes[position] = byte }
                    let expected = bytes.contains { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "+") }
                    #expect(bytes.withUnsafeBufferPointer { TextScan.containsEither($0, UInt8(ascii: "@"), UInt8(ascii: "+")) } == expected,
                            "\(bytes)")
                }
            }
        }
    }
}
