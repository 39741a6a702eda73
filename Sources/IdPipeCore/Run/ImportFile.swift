/// What no two accounts of an import file may share, and the check that keeps the file so.
///
/// Identity Toolkit keeps one account per email (unless the project allows more), per phone number and per sign-in with
/// a federated provider, but `accounts:batchCreate` checks none of it unless asked (`sanityCheck`, which then refuses
/// the whole request of up to 1000 accounts for one duplicate among them): an import of a file with two accounts for
/// one address creates both (PROTOCOLS §2). Cleaning can make them: a legacy table with `Ann@x.example` and
/// `ann@x.example`, or a number written two ways. The plan lets the first account into the file and quarantines the
/// later one, naming the field, for the reviewer to merge them in the source.
///
/// Like the duplicate-id check it holds 64-bit hashes (`IdHashSet`, 11 to 21 bytes each): a key per email, phone number
/// and federated link. Unlike it, it holds them all: only a migration's plan makes one. A resumed plan reads back the
/// keys of the accounts already in the file (`PlanStore.forEachImportKeyHashes`).
final class ImportKeys {
    /// What an account shares with one earlier in the file.
    struct Clash: Equatable {
        var field: String
        var reason: String
    }

    private let seen = IdHashSet()

    init() {}

    /// Takes back the keys of accounts already in the file.
    func restore(_ hashes: [UInt64]) {
        for hash in hashes { _ = seen.insert(hash) }
    }

    /// Reads ahead what admitting these keys will read (`IdHashSet.warm`).
    func warm(_ upcoming: [UInt64]) {
        seen.warm(upcoming)
    }

    /// Nil when the account whose keys these are (`append(keysOf:)`) shares none with an account let in before: it is let
    /// in, and its keys are added to the set and to `added` (for the store). Otherwise the first key it shares, and
    /// nothing is added.
    func admit(_ hashes: ArraySlice<UInt64>, kinds: ArraySlice<UInt8>, adding added: inout [UInt64]) -> Clash? {
        for (hash, kind) in zip(hashes, kinds) where seen.contains(hash) {
            return Self.clash(kind)
        }
        for hash in hashes where seen.insert(hash) { added.append(hash) }
        return nil
    }

    /// The kinds of key, the first byte of each key's hash, so that an email never meets a phone number.
    private static let email: UInt8 = 1, phone: UInt8 = 2
    /// A link's kind: `firstLink` + the provider's place in `ProviderID.exported`.
    private static let firstLink: UInt8 = 3

    static let emailReason = "duplicate: an account before it in the import file has the same email (letters compared "
        + "regardless of case, as Firebase does); the import would create both (output.allow_duplicate_emails allows it)"
    static let phoneReason = "duplicate: an account before it in the import file has the same phone number; the import would create both"

    static func clash(_ kind: UInt8) -> Clash {
        switch kind {
        case email: Clash(field: "email", reason: emailReason)
        case phone: Clash(field: "phoneNumber", reason: phoneReason)
        default:
            Clash(field: "providerUserInfo", reason: "duplicate: an account before it in the import file is linked to the same "
                + "\(ProviderID.exported[Int(kind - firstLink)]) user; the import would create both")
        }
    }

    /// Appends the account's keys to `hashes`, and their kinds to `kinds`: its email (with `emails`), phone number and
    /// links to the providers the file keeps. The `password` and `phone` links are left out: their ids are the email and
    /// the phone number. Run by the workers, as the plan's merge, which lets the keys in, runs on one thread.
    static func append(keysOf account: Account, emails: Bool, hashes: inout [UInt64], kinds: inout [UInt8]) {
        func add(_ kind: UInt8, _ text: String) {
            hashes.append(text.withUTF8Bytes { IdHash.finish(IdHash.feed($0, into: IdHash.feed(CollectionOfOne(kind), into: IdHash.start))) })
            kinds.append(kind)
        }
        if emails, let address = account.email, !address.isEmpty {
            // Most are lower case already: those are hashed as they are, with no new string.
            add(email, address.utf8.contains { (0x41...0x5a).contains($0) || $0 >= 0x80 } ? address.lowercased() : address)
        }
        if let number = account.phoneNumber, !number.isEmpty { add(phone, number) }
        for link in account.providers where !link.rawId.isEmpty {
            if let place = ProviderID.exported.firstIndex(of: link.providerId) { add(firstLink + UInt8(place), link.rawId) }
        }
    }
}

/// The import file's user objects, in the `auth:export` JSON layout, two-space indented like `firebase auth:export`:
/// the export's keys, and the links of the ten exported providers (`ProviderID.exported`). Rendered by the plan's workers
/// (`ProcessedPart`), as the merge, which writes them in order, runs on one thread.
public enum ImportJSON {
    /// Appends one user object, from its `{` to its `}`.
    public static func render(_ account: Account, to out: inout [UInt8]) {
        out.put("  {\n    \"localId\": ")
        JSONText.append(account.localId, to: &out)
        member("email", account.email, to: &out)
        out.put(account.emailVerified ? ",\n    \"emailVerified\": true" : ",\n    \"emailVerified\": false")
        member("passwordHash", account.passwordHash, to: &out)
        member("salt", account.salt, to: &out)
        member("displayName", account.displayName, to: &out)
        member("photoUrl", account.photoUrl, to: &out)
        // Times as the export writes them: strings of digits.
        member("lastSignedInAt", account.lastSignedInAt.map { "\($0)" }, to: &out)
        member("createdAt", account.createdAt.map { "\($0)" }, to: &out)
        member("phoneNumber", account.phoneNumber, to: &out)
        out.put(account.disabled ? ",\n    \"disabled\": true" : ",\n    \"disabled\": false")
        member("customAttributes", account.customAttributes, to: &out)
        if let mfa = account.mfaInfoJSON {
            out.put(",\n    \"mfaInfo\": ")
            out.put(mfa)
        }
        out.put(",\n    \"providerUserInfo\": [")
        var links = 0
        for link in account.providers where ProviderID.exported.contains(link.providerId) {
            out.put(links == 0 ? "\n      {\n        \"providerId\": " : ",\n      {\n        \"providerId\": ")
            links += 1
            JSONText.append(link.providerId, to: &out)
            out.put(",\n        \"rawId\": ")
            JSONText.append(link.rawId, to: &out)
            member("email", link.email, link: true, to: &out)
            member("displayName", link.displayName, link: true, to: &out)
            member("photoUrl", link.photoUrl, link: true, to: &out)
            out.put("\n      }")
        }
        out.put(links == 0 ? "]\n  }" : "\n    ]\n  }")
    }

    /// `,` and the member on a line of its own (indented as an account's, or as a link's), when there is a value.
    private static func member(_ key: String, _ value: String?, link: Bool = false, to out: inout [UInt8]) {
        guard let value else { return }
        out.put(link ? ",\n        \"" : ",\n    \"")
        out.put(key)
        out.put("\": ")
        JSONText.append(value, to: &out)
    }
}

extension ImportJSON {
    /// A value Identity Toolkit refuses (PROTOCOLS: `accounts:update` and the import take claims of at most 1000
    /// characters of JSON and photo URLs of at most 2048): the import of the account fails whichever way it goes (the
    /// CLI or the API), so the plan leaves it out of the file and quarantines it, naming the field. `what` counts it.
    static func refusal(_ account: Account) -> (what: String, clash: ImportKeys.Clash)? {
        let refuses = "Identity Toolkit refuses it, and the account's import with it; correct it in the source"
        if let claims = account.customAttributes, !claims.isEmpty {
            if claims.utf16.count > 1000 {
                return ("customAttributes longer than 1000 characters",
                        ImportKeys.Clash(field: "customAttributes", reason: "is longer than 1000 characters: \(refuses)"))
            }
            if !TallyCounter.isJSONObject(claims) {
                return ("customAttributes not a JSON object", ImportKeys.Clash(field: "customAttributes", reason: "is not a JSON object: \(refuses)"))
            }
        }
        if let photo = account.photoUrl, photo.utf16.count > 2048 {
            return ("photoUrl longer than 2048 characters", ImportKeys.Clash(field: "photoUrl", reason: "is longer than 2048 characters: \(refuses)"))
        }
        return nil
    }
}

/// A migration's share of a part's work, done by its worker: each processed account's import keys (`ImportKeys`) and
/// user object (`ImportJSON`), for the merge to let in (or not) and write in order.
struct ImportPart: Sendable {
    /// Whether the keys include the email (`output.allow_duplicate_emails` off).
    let emails: Bool
    /// Account i's keys are at `keyStarts[i]..<keyStarts[i + 1]` of `keyHashes` and `keyKinds`; its object at
    /// `objectStarts[i]..<objectStarts[i + 1]` of `objects`.
    private var keyHashes: [UInt64] = []
    private var keyKinds: [UInt8] = []
    private var keyStarts: [Int] = [0]
    private var objects: [UInt8] = []
    private var objectStarts: [Int] = [0]
    /// Account i's value the API refuses, if any (it has no keys and no object then).
    private var refusals: [(what: String, clash: ImportKeys.Clash)?] = []

    init(emails: Bool) {
        self.emails = emails
    }

    /// Adds the next account as the file would hold it (`PlanRunner.importable`).
    mutating func add(_ account: Account) {
        let refusal = ImportJSON.refusal(account)
        refusals.append(refusal)
        if refusal == nil {
            ImportKeys.append(keysOf: account, emails: emails, hashes: &keyHashes, kinds: &keyKinds)
            ImportJSON.render(account, to: &objects)
        }
        keyStarts.append(keyHashes.count)
        objectStarts.append(objects.count)
    }

    func refusal(_ index: Int) -> (what: String, clash: ImportKeys.Clash)? {
        refusals[index]
    }

    /// Every key, for `ImportKeys.warm`.
    var allKeys: [UInt64] { keyHashes }

    func keys(_ index: Int) -> (hashes: ArraySlice<UInt64>, kinds: ArraySlice<UInt8>) {
        let range = keyStarts[index]..<keyStarts[index + 1]
        return (keyHashes[range], keyKinds[range])
    }

    func object(_ index: Int) -> ArraySlice<UInt8> {
        objects[objectStarts[index]..<objectStarts[index + 1]]
    }
}
