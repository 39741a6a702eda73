import Foundation

/// A display name to fill in, and where it came from.
public struct NameUpdate: Sendable, Equatable {
    public var name: String
    public var source: NameSource
}

public enum NameOutcome: Sendable, Equatable {
    /// The account has a name; it is never overwritten.
    case present
    case fill(NameUpdate)
    /// No configured source could give a name (the reason says why).
    case noSource(String)
}

/// The backfill stage, planning only: which name each nameless account would get.
public enum NameBackfill {
    public static func plan(
        _ account: Account, isRelay: Bool, legacy: LegacyName?, sources: [NameSource]
    ) -> NameOutcome {
        guard account.displayName == nil else { return .present }
        var skippedForConsent = false
        // A source whose name the API would refuse is passed over, and said so when no later source has one.
        var unusable: String?
        func usable(_ raw: String, from source: NameSource) -> String? {
            var repairs = RepairSet()
            switch DisplayNameCleaner.clean(raw, repairs: &repairs) {
            case .success(let value?) where showsRelayAddress(value, of: account, isRelay: isRelay):
                if unusable == nil { unusable = "the \(source) name is a relay address" }
                return nil
            case .success(let value): return value
            case .failure(let reason):
                if unusable == nil { unusable = "the \(source) name \(reason.text)" }
                return nil
            }
        }
        for source in sources {
            switch source {
            case .legacy:
                guard let legacy else { continue }
                if isRelay && !legacy.consent {
                    skippedForConsent = true
                    continue
                }
                let name = usable(NameFormatting.fullName(given: legacy.givenName, family: legacy.familyName), from: source)
                if let name { return .fill(NameUpdate(name: composed(name), source: .legacy)) }
            case .provider(let id):
                guard let link = account.provider(id), let raw = link.displayName, let name = usable(raw, from: source) else { continue }
                // A name from another login links identifying data to an anonymised Apple ID: only with consent.
                if isRelay && id != ProviderID.apple && !(legacy?.consent ?? false) {
                    skippedForConsent = true
                    continue
                }
                return .fill(NameUpdate(name: composed(NameFormatting.providerName(name)), source: source))
            case .emailLocalPart:
                // Never from a relay address, and only from the account's own real address.
                guard let email = account.email, !RelayDetection.isRelayAddress(email), !isRelay,
                      let name = NameFormatting.nameFromEmailLocalPart(email) else { continue }
                return .fill(NameUpdate(name: composed(name), source: .emailLocalPart))
            }
        }
        if skippedForConsent { return .noSource("relay account: no source with consent") }
        return .noSource(unusable ?? noSourceHasAName)
    }

    /// A filled name as a person types it: composed (NFC), so a legacy table's decomposed `Jose\u{301}` is filled as
    /// `José` (equal as Swift strings, not as bytes: the project, the import file and what reads them would keep the
    /// decomposed form). Only a name with a mark (a combining one, or a spacing vowel sign as Bengali's two-part
    /// vowels, of combining class 0) or a conjoining Hangul jamo is composed.
    static func composed(_ name: String) -> String {
        guard name.utf8.contains(where: { $0 >= 0x80 }), name.unicodeScalars.contains(where: { scalar in
            // No mark below U+0300, nor among the Han ideographs and Hangul syllables: most names, with no lookup.
            switch scalar.value {
            case ..<0x300, 0x4E00...0x9FFF, 0xAC00...0xD7A3: return false
            default: break
            }
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .spacingMark, .enclosingMark: return true
            default: return (0x1100...0x11FF).contains(scalar.value)
            }
        }) else { return name }
        return name.precomposedStringWithCanonicalMapping
    }

    /// The ASCII letters and digits of a text, in order, the rest left out; when the text holds a character that NFKC
    /// with case folding changes (fullwidth, circled, math bold, superscript, modifier letters, ligatures, `ſ`, an
    /// upper-case accented letter), folded first. Other names (CJK, lower-case accents, ASCII) are not folded: NFKC on
    /// every name cost a plan a fifth of its time.
    private static func asciiAlphanumerics(_ text: some StringProtocol) -> String {
        let foldFirst = text.utf8.contains { $0 >= 0x80 } && text.unicodeScalars.contains { $0.value >= 0x80 && $0.properties.changesWhenNFKCCaseFolded }
        let source = foldFirst ? folded(String(text)) : String(text)
        return String(decoding: source.utf8.filter(TextScan.isASCIILetterOrDigit), as: UTF8.self)
    }

    /// NFKC, lower case, without white space or invisible characters (`EmailNormalizer.mapped`, joiners dropped too).
    private static func folded(_ text: String) -> String {
        let kept = String(String.UnicodeScalarView(text.unicodeScalars.filter { !$0.properties.isWhitespace && $0 != "\u{200C}" && $0 != "\u{200D}" }))
        return EmailNormalizer.mapped(Substring(kept)) ?? kept
    }

    /// Why a nameless account gets no name when none of its sources has one.
    public static let noSourceHasAName = "no configured source has a name"

    /// Whether a name holds a relay address, or the random local part of the account's own: as a name it would put
    /// the address Apple hid on show (an Apple login's name is sometimes its address).
    static func showsRelayAddress(_ name: String, of account: Account, isRelay: Bool) -> Bool {
        if name.utf8.contains(UInt8(ascii: "@")) && TextScan.containsIgnoringASCIICase(name, RelayDetection.relayDomain) { return true }
        // Written in fullwidth letters, or with an invisible character, the address is no less on show (folded only
        // when the name has an @ of some width: `＠`, `﹫`).
        if name.utf8.contains(where: { $0 >= 0x80 }) && (name.utf8.contains(UInt8(ascii: "@"))
            || TextScan.containsIgnoringASCIICase(name, "＠") || TextScan.containsIgnoringASCIICase(name, "﹫")) {
            let folded = Self.folded(name)
            if folded.contains("@") && folded.contains(RelayDetection.relayDomain) { return true }
        }
        guard isRelay else { return false }
        var shown: String?
        func holdsLocalPart(_ address: String?) -> Bool {
            guard let address, RelayDetection.isRelayAddress(address) else { return false }
            // Letters and digits only: `dq7x-mpkzt2`, `dq7x mpkzt2`, `"dq7xmpkzt2"`, `山田 dq7xmpkzt2` and the local part
            // in fullwidth letters show it all the same. (Apple's local parts are ASCII letters and digits.)
            let local: String
            if let at = address.utf8.firstIndex(of: UInt8(ascii: "@")), address.utf8[..<at].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
                local = Self.asciiAlphanumerics(address[..<at])
            } else {
                let mapped = Self.folded(address)
                guard let at = mapped.lastIndex(of: "@") else { return false }
                local = Self.asciiAlphanumerics(mapped[..<at])
            }
            guard local.utf8.count >= 4 else { return false }
            if shown == nil { shown = Self.asciiAlphanumerics(name) }
            return TextScan.containsIgnoringASCIICase(shown!, local)
        }
        return holdsLocalPart(account.email) || account.providers.contains { holdsLocalPart($0.email) }
    }
}
