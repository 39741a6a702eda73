import Testing
@testable import IdPipeCore

@Suite struct RelayDetectionTests {
    static let relay = "abc@privaterelay.appleid.com"
    static func apple(_ email: String? = nil) -> ProviderLink { ProviderLink(providerId: "apple.com", rawId: "001.x.1", email: email) }

    static let cases: [(Account, RelayClass, ConsentFlags)] = [
        (Account(localId: "1", email: relay, providers: [apple(relay)]), RelayClass.relayAddress, ConsentFlags()),
        (Account(localId: "2", email: "jane@example.com", providers: [apple(relay)]), .relayAddress, [.realEmail]),
        (Account(localId: "3", email: relay, providers: [apple(relay), ProviderLink(providerId: "facebook.com", rawId: "9")]), .relayAddress, [.nonAnonymousLogin]),
        (Account(localId: "4", email: relay, phoneNumber: "+14155550100", providers: [apple(relay)]), .relayAddress, [.phoneNumber]),
        (Account(localId: "5", email: "ABC@PrivateRelay.AppleID.com", providers: []), .relayAddress, []),
        (Account(localId: "6", email: "jane@example.com", providers: [apple("jane@example.com")]), .appleRealEmail, []),
        (Account(localId: "7", providers: [apple()]), .appleNoEmail, []),
        (Account(localId: "8", email: "jane@example.com", providers: [ProviderLink(providerId: "google.com", rawId: "1")]), .notApple, []),
        (Account(localId: "9", email: "x@evil-privaterelay.appleid.com.example", providers: []), .notApple, []),
    ]

    @Test(arguments: cases)
    func classifies(account: Account, expected: RelayClass, flags: ConsentFlags) {
        let finding = RelayDetection.classify(account, consentRecorded: false)
        #expect(finding.relayClass == expected)
        #expect(finding.consentReview == flags)
    }

    /// The byte-level check uses its own copy of the domain: it must be the domain's text.
    @Test func relaySuffixIsTheRelayDomain() {
        #expect("\(RelayDetection.relaySuffix)" == "@" + RelayDetection.relayDomain)
        #expect(RelayDetection.isRelayAddress("a@" + RelayDetection.relayDomain.uppercased()))
        #expect(!RelayDetection.isRelayAddress("@" + RelayDetection.relayDomain))
    }

    /// With `normalize: false` the addresses reach relay detection as the export has them. An invisible or fullwidth
    /// character in the domain, or a space around the address, hid a relay address: the account counted as real, its
    /// name could come from it. Such addresses are judged by the domain the normalize stage would have made.
    @Test(arguments: [
        ("abc@privaterelay.appleid.com\u{200B}", true), ("abc@privaterelay\u{AD}.appleid.com", true),
        ("abc@\u{FEFF}PrivateRelay.AppleID.com", true), (" abc@privaterelay.appleid.com\n", true),
        ("abc@ｐｒｉｖａｔｅｒｅｌａｙ．appleid.com", true), ("abc@privaterelay。appleid.com", true),
        ("abc@privaterelay.appleid.com.\u{200B}example", false), ("\u{200B}@privaterelay.appleid.com", true),
        ("abc@privaterelay.apple\u{200D}id.com", false),
        ("jané@example.com", false),
        // Empty labels and a fullwidth @, which the normalize stage would have refused, do not hide one either.
        ("abc@privaterelay.appleid.com.", true), ("abc@privaterelay.appleid.com。", true), ("abc@privaterelay..appleid.com", true),
        ("abc@.privaterelay.appleid.com", true), ("abc＠privaterelay.appleid.com", true), ("abc@example.com.", false),
        ("@privaterelay.appleid.com.", false), ("abc@privaterelay.appleid.co.", false),
        // Controls, which the normalize stage refuses.
        ("abc@privaterelay.appleid.com\u{0}", true), ("abc@privaterelay.appleid.com\u{1F}", true), ("abc@privaterelay.appleid.com\u{7F}", true),
        ("abc@privaterelay.appleid.com\u{80}", true), ("abc@example.com\u{7F}", false),
    ])
    func relayAddressesAreFoundBehindWhatNormalizingRemoves(email: String, isRelay: Bool) {
        #expect(RelayDetection.isRelayAddress(email) == isRelay)
        let account = Account(localId: "1", email: email, providers: [Self.apple()])
        #expect(RelayDetection.classify(account, consentRecorded: false).relayClass == (isRelay ? .relayAddress : .appleRealEmail))
    }

    /// Stores written before `name` existed hold the interpolated case name: the two must stay the same text.
    @Test(arguments: RelayClass.allCases) func nameIsTheCaseName(_ relayClass: RelayClass) {
        #expect(relayClass.name == "\(relayClass)")
    }

    /// The joined labels are made once per set; they must read as joining the labels each time would.
    @Test(arguments: UInt8(0)...UInt8(9)) func flagTextsJoinTheLabels(_ raw: UInt8) {
        #expect(ConsentFlags(rawValue: raw).text == ConsentFlags(rawValue: raw).labels.joined(separator: ", "))
        #expect(SelectionReasons(rawValue: raw).text == SelectionReasons(rawValue: raw).labels.joined(separator: ", "))
    }

    @Test func recordedConsentClearsTheReview() {
        let account = Account(localId: "1", email: "jane@example.com", providers: [Self.apple(Self.relay)])
        #expect(RelayDetection.classify(account, consentRecorded: true).consentReview.isEmpty)
    }
}

@Suite struct NameFormattingTests {
    @Test(arguments: [
        ("太郎", "山田", "山田太郎"),
        ("민준", "김", "김민준"),
        ("伟", "王", "王伟"),
        ("さくら", "佐藤", "佐藤さくら"),
        ("タロウ", "ヤマダ", "ヤマダタロウ"),
        ("지우", "이", "이지우"),
        ("Jane", "Doe", "Jane Doe"),
        ("José", "Müller", "José Müller"),
        ("Taro", "山田", "Taro 山田"),
        ("", "Doe", "Doe"),
        (" Jane ", "", "Jane"),
        // Ideographs beyond the first planes, compatibility ideographs, halfwidth and extended Hangul (they kept a space).
        ("太郎", "\u{30EDE}田", "\u{30EDE}田太郎"), ("太郎", "\u{2F800}", "\u{2F800}太郎"), ("김", "\u{FFA1}\u{FFA2}", "\u{FFA1}\u{FFA2}김"),
        ("\u{A960}", "민준", "민준\u{A960}"),
    ])
    func fullName(given: String, family: String, expected: String) {
        #expect(NameFormatting.fullName(given: given, family: family) == expected)
    }

    @Test(arguments: [
        ("jane.doe@example.com", "Jane Doe" as String?),
        ("JANE_DOE@example.com", "Jane Doe"),
        ("jdoe42@example.com", nil),
        ("jane@example.com", nil),
        // East Asian words are joined without a space, as written; a mix of scripts keeps its spaces.
        ("山田.太郎@example.jp", "山田太郎"),
        ("김.지우@example.kr", nil),
        ("지우.김민@example.kr", "지우김민"),
        ("やまだ_たろう@example.jp", "やまだたろう"),
        ("山田.taro@example.jp", "山田 Taro"),
    ])
    func fromEmail(email: String, expected: String?) {
        #expect(NameFormatting.nameFromEmailLocalPart(email) == expected)
    }

    /// A login's name comes whole: East Asian words lose their space, in the login's order; others stay as they are.
    @Test(arguments: [("刘 芳", "刘芳"), ("山田 太郎", "山田太郎"), ("김 민준", "김민준"), ("Jane Doe", "Jane Doe"), ("山田 Taro", "山田 Taro"), ("刘芳", "刘芳")])
    func providerName(name: String, expected: String) {
        #expect(NameFormatting.providerName(name) == expected)
    }
}

@Suite struct NameBackfillTests {
    let relay = RelayDetectionTests.relay
    let sources: [NameSource] = [.legacy, .provider("facebook.com"), .emailLocalPart]

    @Test func neverOverwritesAName() {
        let account = Account(localId: "1", displayName: "Kept")
        #expect(NameBackfill.plan(account, isRelay: false, legacy: LegacyName(givenName: "A", familyName: "B", consent: true), sources: sources) == .present)
    }

    @Test func takesTheFirstSourceWithAName() {
        let account = Account(localId: "1", email: "jane.doe@example.com", providers: [ProviderLink(providerId: "facebook.com", rawId: "9", displayName: "Jane F")])
        #expect(NameBackfill.plan(account, isRelay: false, legacy: nil, sources: sources) == .fill(NameUpdate(name: "Jane F", source: .provider("facebook.com"))))
        #expect(NameBackfill.plan(account, isRelay: false, legacy: LegacyName(givenName: "太郎", familyName: "山田", consent: false), sources: sources)
            == .fill(NameUpdate(name: "山田太郎", source: .legacy)))
    }

    /// Compared as bytes: Swift's `==` holds the decomposed and composed forms equal.
    @Test(arguments: [
        (LegacyName?(LegacyName(givenName: "Jose\u{301}", familyName: "Garci\u{301}a", consent: true)), String?.none, "Jos\u{E9} Garc\u{ED}a"),
        (LegacyName(givenName: "\u{1106}\u{1175}\u{11AB}\u{110C}\u{116E}\u{11AB}", familyName: "\u{1100}\u{1175}\u{11B7}", consent: true), nil,
         "\u{AE40}\u{BBFC}\u{C900}"),
        (nil, "Zoe\u{308} Li", "Zo\u{EB} Li"),
        // Bengali's two-part vowel: both signs are of combining class 0.
        (nil, "\u{0995}\u{09C7}\u{09BE}\u{09B2}", "\u{0995}\u{09CB}\u{09B2}"),
        (LegacyName(givenName: "Ana", familyName: "Lima", consent: true), nil, "Ana Lima"),
    ])
    func filledNamesAreComposed(legacy: LegacyName?, facebook: String?, expected: String) {
        let account = Account(localId: "1", providers: facebook.map { [ProviderLink(providerId: "facebook.com", rawId: "9", displayName: $0)] } ?? [])
        guard case .fill(let update) = NameBackfill.plan(account, isRelay: false, legacy: legacy, sources: sources) else {
            Issue.record("no name filled")
            return
        }
        #expect(Array(update.name.utf8) == Array(expected.utf8), "\(update.name.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    @Test func relayAccountsTakeOnlyConsentedNames() {
        let account = Account(localId: "1", email: relay, providers: [ProviderLink(providerId: "facebook.com", rawId: "9", displayName: "Jane F")])
        #expect(NameBackfill.plan(account, isRelay: true, legacy: LegacyName(givenName: "Jane", familyName: "Doe", consent: false), sources: sources)
            == .noSource("relay account: no source with consent"))
        #expect(NameBackfill.plan(account, isRelay: true, legacy: LegacyName(givenName: "Jane", familyName: "Doe", consent: true), sources: sources)
            == .fill(NameUpdate(name: "Jane Doe", source: .legacy)))
    }

    @Test func neverFromARelayAddress() {
        let account = Account(localId: "1", email: "jane.doe@privaterelay.appleid.com")
        #expect(NameBackfill.plan(account, isRelay: true, legacy: nil, sources: [.emailLocalPart]) == .noSource("no configured source has a name"))
    }

    /// A name that holds a relay address, or the account's own relay local part, is never filled: before, an Apple
    /// login whose name was its relay address got that address for a name.
    @Test func aNameThatShowsARelayAddressIsNotFilled() {
        let apple = ProviderLink(providerId: "apple.com", rawId: "001.a", email: "xyzdefgh12@privaterelay.appleid.com",
                                 displayName: "xyzdefgh12@privaterelay.appleid.com")
        let relayAccount = Account(localId: "1", email: "xyzdefgh12@privaterelay.appleid.com", providers: [apple])
        let appleFirst: [NameSource] = [.provider("apple.com"), .legacy]
        #expect(NameBackfill.plan(relayAccount, isRelay: true, legacy: nil, sources: appleFirst) == .noSource("the provider:apple.com name is a relay address"))
        let localPart = LegacyName(givenName: "XyzDefgh12", familyName: "", consent: true)
        #expect(NameBackfill.plan(relayAccount, isRelay: true, legacy: localPart, sources: appleFirst) == .noSource("the provider:apple.com name is a relay address"))
        // Another account's relay address is no name either, even on an account with a real email.
        let real = Account(localId: "2", email: "jane@example.com")
        let someAddress = LegacyName(givenName: "jlr6gznpih@PrivateRelay.AppleID.com", familyName: "", consent: true)
        #expect(NameBackfill.plan(real, isRelay: false, legacy: someAddress, sources: sources) == .noSource("the legacy name is a relay address"))
        for written in ["xyz＠privaterelay.appleid.com", "xyz@ｐｒｉｖａｔｅｒｅｌａｙ.appleid.com", "xyz@privaterelay\u{AD}.appleid.com"] {
            #expect(NameBackfill.plan(real, isRelay: false, legacy: LegacyName(givenName: written, familyName: "", consent: true), sources: sources)
                == .noSource("the legacy name is a relay address"), "\(written)")
        }
        // With `normalize: false` the address may have a space or an invisible character in it: the name that is its
        // local part is refused all the same (a leading space let it through).
        for padded in [" k7x2m9ab@privaterelay.appleid.com", "\u{A0}k7x2m9ab@privaterelay.appleid.com", "\tk7x2m9ab@privaterelay.appleid.com",
                       "k7x2\u{200B}m9ab@privaterelay.appleid.com", "k7x2m9ab@privaterelay.appleid.com\u{FEFF}"] {
            let link = ProviderLink(providerId: "apple.com", rawId: "001.b", email: padded, displayName: "k7x2m9ab")
            let account = Account(localId: "3", email: padded, providers: [link])
            #expect(RelayDetection.isRelayAddress(padded), "\(padded.debugDescription)")
            #expect(NameBackfill.plan(account, isRelay: true, legacy: nil, sources: appleFirst) == .noSource("the provider:apple.com name is a relay address"),
                    "\(padded.debugDescription)")
        }
        // Nor does it when the name or the local part is written in fullwidth letters, or the name has a space inside;
        // a real name that happens to share no run of the local part is filled.
        for (address, shown) in [("dq7xmpkzt@privaterelay.appleid.com", "ＤＱ７ＸＭＰＫＺＴ"), ("ｄｑ７ｘｍｐｋｚｔ@privaterelay.appleid.com", "dq7xmpkzt"),
                                  ("dq7xmpkzt@privaterelay.appleid.com", "dq7x mpkzt"), ("dq7xmpkzt＠privaterelay.appleid.com", "dq7xmpkzt"),
                                  ("dq7xmpkzt@privaterelay.appleid.com", "山田 dq7xmpkzt"), ("dq7xmpkzt@privaterelay.appleid.com", "dq7x-mpkzt"),
                                  ("dq7xmpkzt@privaterelay.appleid.com", "dq7x.mpkzt"), ("dq7xmpkzt@privaterelay.appleid.com", "dq7x·mpkzt"),
                                  ("\"dq7xmpkzt\"@privaterelay.appleid.com", "dq7xmpkzt"), ("dq7xmpkzt@privaterelay.appleid.com", "x＠privaterelay.appleid.com"),
                                  // Whatever NFKC folds onto ASCII: superscripts, modifier letters, ligatures, long s.
                                  ("dq7xmpkzt2@privaterelay.appleid.com", "dq7xmpkzt²"), ("dq7xmpkzt2@privaterelay.appleid.com", "ᵈq7ˣᵐᵖᵏᶻᵗ2"),
                                  ("qfi7zk2mxa@privaterelay.appleid.com", "qﬁ7zk2mxa"), ("qs7zk2mxa@privaterelay.appleid.com", "qſ7zk2mxa")] {
            let link = ProviderLink(providerId: "apple.com", rawId: "001.c", email: address, displayName: shown)
            let account = Account(localId: "4", email: address, providers: [link])
            #expect(NameBackfill.plan(account, isRelay: true, legacy: nil, sources: appleFirst) == .noSource("the provider:apple.com name is a relay address"),
                    "\(address) \(shown)")
        }
        let namedReal = ProviderLink(providerId: "apple.com", rawId: "001.d", email: "dq7xmpkzt@privaterelay.appleid.com", displayName: "Dora Quinn")
        #expect(NameBackfill.plan(Account(localId: "5", email: namedReal.email, providers: [namedReal]), isRelay: true, legacy: nil, sources: appleFirst)
            == .fill(NameUpdate(name: "Dora Quinn", source: .provider("apple.com"))))
        // A real name on a relay account, with consent, is filled.
        #expect(NameBackfill.plan(relayAccount, isRelay: true, legacy: LegacyName(givenName: "Jane", familyName: "Doe", consent: true), sources: [.legacy])
            == .fill(NameUpdate(name: "Jane Doe", source: .legacy)))
    }

    /// A name the API would refuse is passed over for the next source, and named when no source has one.
    @Test func aNameTooLongIsPassedOverAndSaidSo() {
        let long = LegacyName(givenName: String(repeating: "a", count: 250), familyName: "Doe-Smithson", consent: true)
        let withFacebook = Account(localId: "1", providers: [ProviderLink(providerId: "facebook.com", rawId: "9", displayName: "Jane F")])
        #expect(NameBackfill.plan(withFacebook, isRelay: false, legacy: long, sources: sources)
            == .fill(NameUpdate(name: "Jane F", source: .provider("facebook.com"))))
        #expect(NameBackfill.plan(Account(localId: "2"), isRelay: false, legacy: long, sources: sources)
            == .noSource("the legacy name is longer than 256 characters"))
        // 256 characters is still a name.
        let longest = LegacyName(givenName: String(repeating: "a", count: 250), familyName: "Smith", consent: true)
        #expect(NameBackfill.plan(Account(localId: "3"), isRelay: false, legacy: longest, sources: sources)
            == .fill(NameUpdate(name: String(repeating: "a", count: 250) + " Smith", source: .legacy)))
    }
}
