/// The normalize stage: repairs what can be repaired, rejects (with the field at fault) what cannot.
public enum AccountNormalizer {
    /// How the stage reads a source's values (for a reader that adds what it finds to a record it cannot read).
    public struct Options: Sendable {
        public var secondsMayPassForMilliseconds: Bool
        public var phones: PhoneDefault?

        public init(secondsMayPassForMilliseconds: Bool, phones: PhoneDefault? = nil) {
            self.secondsMayPassForMilliseconds = secondsMayPassForMilliseconds
            self.phones = phones
        }

        /// How the stage reads `source`: an export's times may be in seconds (none of its accounts is from before 1973),
        /// a table's are in the unit its pipeline gives (`timestamp_format`); a table's phones may have a country.
        public init(source: SourceConfig) {
            self.init(secondsMayPassForMilliseconds: source.format != .mappedCSV, phones: source.phoneDefault)
        }
    }

    /// Epoch-ms values below this (March 1973) are taken to be seconds.
    public static let secondsThreshold: Int64 = 100_000_000_000

    public static func normalize(_ input: consuming Account, secondsMayPassForMilliseconds: Bool = true) -> Result<(Account, RepairSet), RecordIssue> {
        var account = input
        var repairs = RepairSet()
        if let issue = normalize(&account, repairs: &repairs, secondsMayPassForMilliseconds: secondsMayPassForMilliseconds) { return .failure(issue) }
        return .success((account, repairs))
    }

    /// Normalizes `account` in place (no copy of it is made), noting repairs; returns the issue that rejects it, carrying
    /// the account's other problems (each field is checked whatever the others gave, so a row is fixed in one go).
    /// `secondsMayPassForMilliseconds`: a time before March 1973 is taken for seconds, as an export's times are in
    /// milliseconds and no account of it is that old. False for a table whose pipeline says the unit
    /// (`timestamp_format`): a legacy account created in 1972 was moved to the year 4384.
    /// `phones`: the country of the phone numbers written without a country code (a mapped table's), if any.
    public static func normalize(_ account: inout Account, repairs: inout RepairSet, secondsMayPassForMilliseconds: Bool = true,
                                 phones: PhoneDefault? = nil) -> RecordIssue? {
        var issues: [RecordIssue] = []
        let uidLength = TextScan.trimmedUTF8Count(account.localId)
        if uidLength == 0 {
            issues.append(RecordIssue(field: "localId", reason: "is missing or empty"))
        } else if uidLength > 128 {
            issues.append(RecordIssue(field: "localId", reason: "is longer than 128 bytes"))
        } else if uidLength != account.localId.utf8.count {
            issues.append(RecordIssue(field: "localId", reason: "has surrounding whitespace"))
        } else if TextScan.hasControlByte(account.localId.utf8) {
            issues.append(RecordIssue(field: "localId", reason: "contains a control character"))
        }

        let rawEmail = account.email
        switch optional(account.email, field: "email", repairs: &repairs, EmailNormalizer.normalize) {
        case .success(let value): account.email = value
        case .failure(let issue): issues.append(issue)
        }
        switch optional(account.phoneNumber, field: "phoneNumber", repairs: &repairs, { PhoneNormalizer.normalize($0, repairs: &$1, national: phones) }) {
        case .success(let value): account.phoneNumber = value
        case .failure(let issue): issues.append(issue)
        }
        if let name = account.displayName {
            switch DisplayNameCleaner.clean(name, repairs: &repairs) {
            case .success(let value): account.displayName = value
            case .failure(let reason): issues.append(RecordIssue(field: "displayName", reason: "\(reason)"))
            }
        }
        if secondsMayPassForMilliseconds {
            account.createdAt = normalizeTimestamp(account.createdAt, repairs: &repairs)
            account.lastSignedInAt = normalizeTimestamp(account.lastSignedInAt, repairs: &repairs)
        }
        if let created = account.createdAt, created < 0 { issues.append(beforeEpoch("createdAt", created)) }
        if let last = account.lastSignedInAt, last < 0 { issues.append(beforeEpoch("lastSignedInAt", last)) }

        for index in account.providers.indices {
            if let issue = normalizeProvider(&account.providers[index], at: index, accountEmail: (rawEmail, account.email), repairs: &repairs) {
                issues.append(issue)
            }
            // An account links a handful of providers: a scan of the earlier ones beats hashing into a set.
            let id = account.providers[index].providerId
            if account.providers[..<index].contains(where: { $0.providerId == id }) {
                issues.append(RecordIssue(field: "providerUserInfo[\(index)].providerId", reason: "\(Quoted.value(id)) is linked twice"))
            }
        }
        return RecordIssue(issues)
    }

    /// The issue of a record whose decoder found `decoded` (its values that could not be read left unset), carrying the
    /// problems the normalize stage finds in the values that could, on fields the decoder did not already name. With
    /// the stage off (`options` nil), the decoder's alone.
    public static func issue(decoded: RecordIssue, in account: consuming Account, options: Options?) -> RecordIssue {
        guard let options else { return decoded }
        var copy = account
        var repairs = RepairSet()
        guard let found = normalize(&copy, repairs: &repairs, secondsMayPassForMilliseconds: options.secondsMayPassForMilliseconds,
                                    phones: options.phones) else {
            return decoded
        }
        let named = Set(decoded.all.map(\.field))
        return RecordIssue(decoded.all + found.all.filter { !named.contains($0.field) }) ?? decoded
    }

    /// A time before 1970, which an epoch time in milliseconds (as Firebase keeps them) would write negative.
    private static func beforeEpoch(_ field: String, _ time: Int64) -> RecordIssue {
        RecordIssue(field: field, reason: "is \(Timestamp.formatRFC3339(time)), before 1970: an account's times are after 1970-01-01")
    }

    /// An optional text field: blank becomes nil; the rest is normalized, or rejected naming `field` and the value.
    private static func optional(
        _ value: String?, field: @autoclosure () -> String, repairs: inout RepairSet,
        _ normalize: (String, inout RepairSet) -> Result<String, RecordIssueReason>
    ) -> Result<String?, RecordIssue> {
        guard let value, TextScan.trimmedUTF8Count(value) > 0 else { return .success(nil) }
        switch normalize(value, &repairs) {
        case .success(let normalized): return .success(normalized)
        case .failure(let reason): return .failure(RecordIssue(field: field(), reason: "\(Quoted.value(value)) \(reason)"))
        }
    }

    private static func normalizeTimestamp(_ value: Int64?, repairs: inout RepairSet) -> Int64? {
        guard let value, value > 0, value < secondsThreshold else { return value }
        repairs.insert(.timestampInSeconds)
        return value * 1000
    }

    /// `accountEmail`: the account's email as it came and as normalized. A provider's email is most often the same
    /// text, which normalizes the same way with the same repairs (already noted): it takes the result as it is.
    private static func normalizeProvider(
        _ link: inout ProviderLink, at index: Int, accountEmail: (raw: String?, normalized: String?), repairs: inout RepairSet
    ) -> RecordIssue? {
        // Built only when it is needed: most providers are fine, and the text would cost more than the checks.
        var field: String { "providerUserInfo[\(index)]" }
        // The ids the exports write are trimmed, lower-case and known already; other text is checked and repaired.
        if !ProviderID.isBuiltIn(link.providerId) {
            let id = link.providerId.trimmingSpaces
            let lowered = id.utf8.contains(where: { $0 >= 65 && $0 <= 90 }) ? id.lowercased() : id
            if lowered != link.providerId {
                repairs.insert(.providerIdCase)
                link.providerId = lowered
            }
            guard !lowered.isEmpty else { return RecordIssue(field: "\(field).providerId", reason: "is empty") }
            guard ProviderID.isKnown(lowered) else {
                return RecordIssue(field: "\(field).providerId", reason: "\(Quoted.value(lowered)) is not a provider Identity Platform knows")
            }
        }
        let rawIdLength = TextScan.trimmedUTF8Count(link.rawId)
        guard rawIdLength > 0 else {
            return RecordIssue(field: "\(field).rawId", reason: "is empty")
        }
        // As for the account's id: trimmed, it might name another user at the provider, and as it is, a revocation sent
        // with it fails. (The fast path sends such an id here.)
        if rawIdLength != link.rawId.utf8.count { return RecordIssue(field: "\(field).rawId", reason: "has surrounding whitespace") }
        // Compared byte for byte: `==` on strings also matches other spellings of the same characters (é as one scalar
        // or as e and an accent), which normalize to different bytes.
        // On the strings' storage: through the UTF-8 views it cost more than normalizing the address again.
        if var email = link.email, let raw = accountEmail.raw, email.withUTF8({ TextScan.sameBytes($0, raw) }) {
            link.email = accountEmail.normalized
        } else {
            switch optional(link.email, field: "\(field).email", repairs: &repairs, EmailNormalizer.normalize) {
            case .success(let value): link.email = value
            case .failure(let issue): return issue
            }
        }
        if let name = link.displayName {
            switch DisplayNameCleaner.clean(name, repairs: &repairs) {
            case .success(let value): link.displayName = value
            case .failure(let reason): return RecordIssue(field: "\(field).displayName", reason: "\(reason)")
            }
        }
        return nil
    }
}
