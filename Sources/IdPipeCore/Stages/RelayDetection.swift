import Foundation

/// How an account relates to Apple's private email relay.
public enum RelayClass: Int, CaseIterable, Sendable, Codable {
    /// The top-level email or the `apple.com` provider email is at `privaterelay.appleid.com`.
    case relayAddress
    /// Linked to Apple, with a real email address.
    case appleRealEmail
    /// Linked to Apple, with no email address at all.
    case appleNoEmail
    /// Not linked to Apple and no relay address.
    case notApple

    /// The case's name, the key of its count and its text in the state store (as `"\(relayClass)"` would print it,
    /// without the reflection that costs a plan 2 % of its CPU).
    public var name: String {
        switch self {
        case .relayAddress: "relayAddress"
        case .appleRealEmail: "appleRealEmail"
        case .appleNoEmail: "appleNoEmail"
        case .notApple: "notApple"
        }
    }

    public var label: String {
        switch self {
        case .relayAddress: "relay address"
        case .appleRealEmail: "Apple, real email"
        case .appleNoEmail: "Apple, no email"
        case .notApple: "not Apple"
        }
    }
}

/// What links identifying data to an anonymised (relay) Apple account.
public struct ConsentFlags: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let nonAnonymousLogin = ConsentFlags(rawValue: 1)
    public static let realEmail = ConsentFlags(rawValue: 2)
    public static let phoneNumber = ConsentFlags(rawValue: 4)

    public var labels: [String] {
        var result: [String] = []
        if contains(.nonAnonymousLogin) { result.append("non-anonymous login") }
        if contains(.realEmail) { result.append("real email") }
        if contains(.phoneNumber) { result.append("phone number") }
        return result
    }

    /// The labels joined by ", ", made once for each of the eight sets (the store writes it for every relay account).
    public var text: String { rawValue < 8 ? Self.texts[Int(rawValue)] : labels.joined(separator: ", ") }
    private static let texts = (0..<8).map { ConsentFlags(rawValue: UInt8($0)).labels.joined(separator: ", ") }
}

public struct RelayFinding: Sendable, Equatable {
    public var relayClass: RelayClass
    /// Identifying data linked to a relay account without recorded consent: a reviewer must look.
    public var consentReview: ConsentFlags
}

public enum RelayDetection {
    public static let relayDomain = "privaterelay.appleid.com"

    /// `"@" + relayDomain`, lower-case ASCII.
    static let relaySuffix: StaticString = "@privaterelay.appleid.com"

    /// Whether an address is at Apple's relay domain (ASCII case-insensitive, on bytes: it runs per account).
    /// An address the normalize stage did not see (`normalize: false`) may carry what it would have mapped away or
    /// refused: white space at its end, a control, an invisible or fullwidth character (a fullwidth `＠` too), an empty
    /// label (a dot at the end, two dots). Such an address is judged by its domain as the normalize stage maps it
    /// (`EmailNormalizer.mapped`), its empty labels left out, so that it is no way around the relay rules. Others, all
    /// the normalize stage leaves, are judged on their bytes alone.
    public static func isRelayAddress(_ email: String?) -> Bool {
        guard let email else { return false }
        return email.withUTF8Bytes { bytes in
            if isRelayAddress(bytes) { return true }
            // One pass back to the @: is the domain odd (it runs for every address that is not a relay one)?
            var at = bytes.count - 1, odd = false
            while at > 0 && bytes[at] != UInt8(ascii: "@") {
                let byte = bytes[at]
                odd = odd || byte >= 0x7F || byte <= 0x20
                    || (byte == UInt8(ascii: ".") && (at == bytes.count - 1 || bytes[at + 1] == byte || bytes[at - 1] == UInt8(ascii: "@")))
                at -= 1
            }
            return odd && isRelayAfterMapping(email)
        }
    }

    private static func isRelayAfterMapping(_ email: String) -> Bool {
        // The whole address mapped (a fullwidth ＠ is an @ then), without the controls the normalize stage refuses.
        let kept = String(String.UnicodeScalarView(email.unicodeScalars.filter { $0.properties.generalCategory != .control }))
        guard let mapped = EmailNormalizer.mapped(Substring(kept.trimmingCharacters(in: .whitespacesAndNewlines))),
              let at = mapped.lastIndex(of: "@"), at > mapped.startIndex else { return false }
        return mapped[mapped.index(after: at)...].split(separator: ".").joined(separator: ".") == relayDomain
    }

    /// The same on an address's UTF-8 bytes (the plan's fast path reads them where the decoder found them).
    public static func isRelayAddress(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let suffix = UnsafeBufferPointer(start: relaySuffix.utf8Start, count: relaySuffix.utf8CodeUnitCount)
        guard bytes.count > suffix.count else { return false }
        let start = bytes.count - suffix.count
        for i in 0..<suffix.count where TextScan.lowerASCII(bytes[start + i]) != suffix[i] { return false }
        return true
    }

    /// Whether the account's email or its Apple link's email is a relay address.
    public static func hasRelayAddress(_ account: Account) -> Bool {
        hasRelayAddress(account, apple: appleLink(account))
    }

    /// The same, with the Apple link's index already found. Its email is read in place (a copy of the link would
    /// retain and release each of its strings).
    private static func hasRelayAddress(_ account: Account, apple: Int?) -> Bool {
        isRelayAddress(account.email) || isRelayAddress(apple.flatMap { account.providers[$0].email })
    }

    private static func appleLink(_ account: Account) -> Int? {
        account.providers.firstIndex { $0.providerId == ProviderID.apple }
    }

    public static func classify(_ account: Account, consentRecorded: Bool) -> RelayFinding {
        let apple = appleLink(account)
        guard hasRelayAddress(account, apple: apple) else {
            guard let apple else { return RelayFinding(relayClass: .notApple, consentReview: []) }
            let hasEmail = account.email != nil || account.providers[apple].email != nil
            return RelayFinding(relayClass: hasEmail ? .appleRealEmail : .appleNoEmail, consentReview: [])
        }
        var flags: ConsentFlags = []
        if account.providers.contains(where: { ProviderID.nonAnonymous.contains($0.providerId) }) { flags.insert(.nonAnonymousLogin) }
        if let email = account.email, !isRelayAddress(email) { flags.insert(.realEmail) }
        if account.providers.contains(where: { $0.email != nil && !isRelayAddress($0.email) }) { flags.insert(.realEmail) }
        if account.phoneNumber != nil || account.isLinked(to: ProviderID.phone) { flags.insert(.phoneNumber) }
        return RelayFinding(relayClass: .relayAddress, consentReview: consentRecorded ? [] : flags)
    }
}
