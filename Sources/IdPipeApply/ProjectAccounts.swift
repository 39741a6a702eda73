import IdPipeConnect
import IdPipeCore

/// Which accounts of an import request the project has already (`stages.import.existing_accounts: keep`): by uid, kept
/// as the project has them; and by another uid with the same email, phone number or federated link, which the import
/// would make a second account for (`accounts:batchCreate` checks none of it, PROTOCOLS §2).
enum ProjectAccounts {
    /// Why an account is not imported when the project has its uid.
    static let keptMessage = "its uid is in the project already: kept as the project has it (stages.import.existing_accounts: "
        + "overwrite would replace it with the file's)"

    /// Why an account is not imported when another account of the project has what it would bring.
    static func clashMessage(_ what: String) -> String {
        "another account of the project has the same \(what); the import would make a second account for it"
    }

    /// The accounts of `users` (a request's) to leave out, by their place in it, in order. Looked up in two rounds: every
    /// uid, then the emails (with `emails`), phone numbers and links of the accounts whose uid was not found.
    static func leftOut(_ users: [JSONValue], emails: Bool, lookup: ImportRunner.Lookup) async throws -> [ImportFailure] {
        let uids = ImportRunner.uids(users)
        var project = try await lookup(uids.map { .uid($0) })
        let there = Set(project.compactMap { $0["localId"]?.string })
        // Those of the accounts whose uid is not there (the others are left out whatever they share).
        let identities = users.indices.map { there.contains(uids[$0]) ? [] : Self.identifiers(of: users[$0], emails: emails) }
        var identifiers: [AccountIdentifier] = []
        var asked: Set<AccountIdentifier> = []
        for identifier in identities.joined() where asked.insert(identifier).inserted { identifiers.append(identifier) }
        if !identifiers.isEmpty { project += try await lookup(identifiers) }
        let holders = Holders(project)
        var leftOut: [ImportFailure] = []
        for (index, uid) in uids.enumerated() {
            if there.contains(uid) {
                leftOut.append(ImportFailure(position: index, uid: uid, message: keptMessage))
                continue
            }
            for identifier in identities[index] {
                guard let holder = holders.first(identifier, otherThan: uid) else { continue }
                leftOut.append(ImportFailure(position: index, uid: uid, message: clashMessage(holder.what),
                                             clash: ImportClash(field: holder.field, projectUid: holder.uid)))
                break
            }
        }
        return leftOut
    }

    /// What an account of the import file is found by besides its uid: its email (with `emails`), its phone number, and
    /// its links to federated providers (the `password` and `phone` links are its email and its number again). An email
    /// or number the API would not take in a lookup (`name@domain.tld` under 256 characters; E.164) is not asked for: one
    /// would refuse the call, and stop the import, for the 99 others in it (such an account is not checked against the
    /// project; `accounts:batchCreate` refuses an email it finds invalid, and the report names the account).
    static func identifiers(of user: JSONValue, emails: Bool) -> [AccountIdentifier] {
        var identifiers: [AccountIdentifier] = []
        // In lower case, as Identity Toolkit stores emails: found whether or not a lookup compares them regardless of case.
        if emails, let email = user["email"]?.string, Self.mayLookUp(email: email) { identifiers.append(.email(email.lowercased())) }
        if let number = user["phoneNumber"]?.string, Self.mayLookUp(phoneNumber: number) { identifiers.append(.phoneNumber(number)) }
        for link in user["providerUserInfo"]?.array ?? [] {
            guard let provider = link["providerId"]?.string, provider != "password", provider != "phone",
                  let rawId = link["rawId"]?.string, !rawId.isEmpty else { continue }
            identifiers.append(.federated(providerId: provider, rawId: rawId))
        }
        return identifiers
    }

    static func mayLookUp(email: String) -> Bool {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        return email.utf8.count < 256 && parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".")
            && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".") && !email.contains(where: \.isWhitespace)
    }

    static func mayLookUp(phoneNumber: String) -> Bool {
        let digits = phoneNumber.dropFirst()
        return phoneNumber.hasPrefix("+") && (2...15).contains(digits.utf8.count) && TextScan.isDigits(digits)
    }

    /// The project's accounts found, by what they hold (emails in lower case, as `identifiers(of:)` gives them).
    struct Holders {
        private var uids: [AccountIdentifier: [String]] = [:]

        init(_ accounts: [JSONValue]) {
            for account in accounts {
                guard let uid = account["localId"]?.string else { continue }
                for identifier in ProjectAccounts.identifiers(of: account, emails: true) { uids[identifier, default: []].append(uid) }
            }
        }

        /// The first (by uid) account of the project with this identifier, other than `uid`; what it shares, for the
        /// report (`field`) and for the reason (`what`).
        func first(_ identifier: AccountIdentifier, otherThan uid: String) -> (uid: String, field: String, what: String)? {
            guard let holder = uids[identifier]?.filter({ $0 != uid }).min() else { return nil }
            switch identifier {
            case .email: return (holder, "email", "email")
            case .phoneNumber: return (holder, "phoneNumber", "phone number")
            case .federated(let provider, _): return (holder, "providerUserInfo (\(provider))", "\(provider) user (a sign-in)")
            case .uid: return nil
            }
        }
    }
}
