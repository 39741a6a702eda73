/// The sandbox project's accounts by uid, with what `accounts:lookup` finds them by besides: their email (letters
/// compared regardless of case, as Identity Toolkit stores emails), their phone number and their federated links.
/// Kept up to date at every write, so that a lookup by email costs what one by uid does, whatever the project's size.
struct SandboxAccounts {
    private var byUid: [String: SJSON] = [:]
    /// `kind` + the identity (`Self.keys`) → the uids that have it: more than one when the project has duplicates.
    private var byIdentity: [String: Set<String>] = [:]

    subscript(uid: String) -> SJSON? {
        get { byUid[uid] }
        set {
            if let old = byUid[uid] {
                for key in Self.keys(old) {
                    byIdentity[key]?.remove(uid)
                    if byIdentity[key]?.isEmpty == true { byIdentity[key] = nil }
                }
            }
            byUid[uid] = newValue
            if let newValue {
                for key in Self.keys(newValue) { byIdentity[key, default: []].insert(uid) }
            }
        }
    }

    var count: Int { byUid.count }
    var uids: Dictionary<String, SJSON>.Keys { byUid.keys }

    /// The uids of the accounts with this email, phone number or link.
    func uids(email: String) -> Set<String> { byIdentity["e" + email.lowercased()] ?? [] }
    func uids(phoneNumber: String) -> Set<String> { byIdentity["p" + phoneNumber] ?? [] }
    func uids(providerId: String, rawId: String) -> Set<String> { byIdentity["f" + providerId + "\u{0}" + rawId] ?? [] }

    /// An account's identities as index keys. The `password` and `phone` links are the email and the phone number again.
    private static func keys(_ account: SJSON) -> [String] {
        var keys: [String] = []
        if let email = account["email"]?.string, !email.isEmpty { keys.append("e" + email.lowercased()) }
        if let phone = account["phoneNumber"]?.string, !phone.isEmpty { keys.append("p" + phone) }
        for link in account["providerUserInfo"]?.array ?? [] {
            guard let provider = link["providerId"]?.string, provider != "password", provider != "phone",
                  let rawId = link["rawId"]?.string, !rawId.isEmpty else { continue }
            keys.append("f" + provider + "\u{0}" + rawId)
        }
        return keys
    }
}
