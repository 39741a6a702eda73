/// Provider ids as Identity Platform spells them.
public enum ProviderID {
    public static let apple = "apple.com"
    public static let facebook = "facebook.com"
    public static let google = "google.com"
    public static let password = "password"
    public static let phone = "phone"

    /// The providers `firebase auth:export` writes, in the CSV column order (PROTOCOLS §1).
    public static let exported: [String] = [
        "google.com", "facebook.com", "twitter.com", "github.com", "apple.com",
        "microsoft.com", "gc.apple.com", "playgames.google.com", "linkedin.com", "yahoo.com",
    ]

    /// The links `firebase auth:import` takes from a JSON file (firebase-tools `accountImporter.ts`). It refuses the
    /// whole file at the first account with another one (apple.com among them) or with an `mfaInfo` key.
    public static let importedByFirebaseCLI: [String] = ["google.com", "facebook.com", "twitter.com", "github.com"]

    /// Social logins that identify a person. Linking one of them to a relay account needs the user's consent.
    /// (A list: comparing a few short ids costs less than hashing one for a set, and this is asked per account.)
    public static let nonAnonymous: [String] = [
        "google.com", "facebook.com", "twitter.com", "github.com", "microsoft.com",
        "playgames.google.com", "linkedin.com", "yahoo.com",
    ]

    /// Every provider id the report counts on its own line; anything else counts as "other".
    public static let reported: [String] = exported + [password, phone, "other"]

    /// Whether an id is one Identity Platform can hold: the exported ones, `password`, `phone`, `oidc.*`, `saml.*`.
    public static func isKnown(_ id: String) -> Bool {
        isBuiltIn(id) || id.hasPrefix("oidc.") || id.hasPrefix("saml.")
    }

    /// Whether an id is exactly one of the fixed ones (the exported ones, `password`, `phone`), as they are spelled.
    public static func isBuiltIn(_ id: String) -> Bool {
        exported.contains(id) || id == password || id == phone
    }

    public static func reportIndex(_ id: String) -> Int {
        reported.firstIndex(of: id) ?? (reported.count - 1)
    }

    /// The built-in ids (`isBuiltIn`: every reported id but "other") as bytes, one after the other; id `i` (at its
    /// `reported` index) ends at `builtInEnds[i]`. Flat: an array of arrays retained and released each id it was read.
    static let builtInBytes: [UInt8] = reported.dropLast().flatMap { Array($0.utf8) }
    static let builtInEnds: [Int] = reported.dropLast().reduce(into: []) { ends, id in ends.append((ends.last ?? 0) + id.utf8.count) }

    /// The `reported` index of an id given as bytes when it is built in, spelled exactly; nil otherwise. The plan's
    /// fast path reads a link's id this way, where the decoder found it.
    static func builtInIndex(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        builtInBytes.withUnsafeBufferPointer { ids in
            builtInEnds.withUnsafeBufferPointer { ends in
                var start = 0
                for index in 0..<ends.count {
                    if ends[index] - start == bytes.count && TextScan.sameBytes(UnsafeBufferPointer(rebasing: ids[start..<ends[index]]), bytes) {
                        return index
                    }
                    start = ends[index]
                }
                return nil
            }
        }
    }

    /// A set of reported ids as bits, bit `i` standing for `reported[i]`.
    static func reportedBits(_ ids: [String]) -> UInt16 {
        ids.reduce(0) { $0 | 1 << UInt16(reportIndex($1)) }
    }
}
