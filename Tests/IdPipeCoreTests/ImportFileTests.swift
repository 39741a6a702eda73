import Testing
@testable import IdPipeCore

/// The import file: what two of its accounts may not share, and what they may (`ImportKeys`); its user objects
/// (`ImportJSON`).
@Suite struct ImportFileTests {
    /// Lets the account in, or not, as the plan's merge does with the keys its worker found.
    static func admit(_ account: Account, to keys: ImportKeys, emails: Bool = true, adding added: inout [UInt64]) -> ImportKeys.Clash? {
        var hashes: [UInt64] = [], kinds: [UInt8] = []
        ImportKeys.append(keysOf: account, emails: emails, hashes: &hashes, kinds: &kinds)
        return keys.admit(hashes[...], kinds: kinds[...], adding: &added)
    }

    static func account(_ id: String, email: String? = nil, phone: String? = nil, links: [(String, String)] = []) -> Account {
        Account(localId: id, email: email, phoneNumber: phone, providers: links.map { ProviderLink(providerId: $0.0, rawId: $0.1) })
    }

    /// Each case: an account let in first, then the one that follows it, and the field the second is refused for (nil:
    /// let in), with emails checked.
    @Test(arguments: [
        (account("a", email: "Ann@Example.com"), account("b", email: "ann@example.com"), "email"),
        (account("a", email: "ann@example.com"), account("b", email: "ann@example.org"), nil),
        (account("a", phone: "+15555550100"), account("b", email: "x@example.com", phone: "+15555550100"), "phoneNumber"),
        (account("a", links: [("apple.com", "001.abc")]), account("b", links: [("apple.com", "001.abc")]), "providerUserInfo"),
        // One person's ids at two providers are two ids; a provider's id is not an email or a phone number.
        (account("a", links: [("apple.com", "42")]), account("b", links: [("facebook.com", "42")]), nil),
        (account("a", email: "42"), account("b", phone: "42"), nil),
        (account("a", links: [("google.com", "42")]), account("b", email: "42", phone: "42"), nil),
        // The password and phone links hold the email and the phone number: those are checked as such (or not).
        (account("a", email: "ann@example.com", links: [("password", "ann@example.com")]),
         account("b", links: [("password", "ann@example.com")]), nil),
        // Not in the file, so nothing to share there.
        (account("a", links: [("oidc.corp", "7")]), account("b", links: [("oidc.corp", "7")]), nil),
        (account("a", email: ""), account("b", email: ""), nil),
    ] as [(Account, Account, String?)])
    func refusesTheSecondAccountOnlyForAKeyTheyShare(first: Account, second: Account, field: String?) {
        let keys = ImportKeys()
        var added: [UInt64] = []
        #expect(Self.admit(first, to: keys, adding: &added) == nil)
        let before = added.count
        #expect(Self.admit(second, to: keys, adding: &added)?.field == field)
        // A refused account adds none of its keys.
        if field != nil { #expect(added.count == before) }
    }

    /// With the project's duplicate emails allowed, emails pass, and phone numbers and links are still checked.
    @Test func allowedDuplicateEmailsPassAndTheRestIsStillChecked() {
        let keys = ImportKeys()
        var added: [UInt64] = []
        #expect(Self.admit(Self.account("a", email: "ann@example.com", phone: "+15555550100"), to: keys, emails: false, adding: &added) == nil)
        #expect(Self.admit(Self.account("b", email: "ann@example.com"), to: keys, emails: false, adding: &added) == nil)
        #expect(Self.admit(Self.account("c", email: "ann@example.com", phone: "+15555550100"), to: keys, emails: false, adding: &added)?.field == "phoneNumber")
        #expect(added.count == 1)
    }

    /// A refused account's other keys stay free for a later account; the keys handed to the store come back on resume.
    @Test func aRefusedAccountTakesNoKeyAndRestoredKeysAreHeld() {
        let keys = ImportKeys()
        var added: [UInt64] = []
        #expect(Self.admit(Self.account("a", email: "ann@example.com"), to: keys, adding: &added) == nil)
        #expect(Self.admit(Self.account("b", email: "ANN@example.com", phone: "+15555550100"), to: keys, adding: &added)?.field == "email")
        #expect(Self.admit(Self.account("c", phone: "+15555550100"), to: keys, adding: &added) == nil)
        let resumed = ImportKeys()
        resumed.restore(added)
        var more: [UInt64] = []
        #expect(Self.admit(Self.account("d", email: "ann@EXAMPLE.com"), to: resumed, adding: &more)?.field == "email")
        #expect(Self.admit(Self.account("e", phone: "+15555550100"), to: resumed, adding: &more)?.field == "phoneNumber")
        #expect(Self.admit(Self.account("f", email: "bob@example.com"), to: resumed, adding: &more) == nil && more.count == 1)
    }

    /// A user object as `firebase auth:export` lays it out: every key the account has, in the export's order, escaped;
    /// only the exported providers' links; an empty link list as `[]`.
    @Test func rendersTheExportLayout() {
        var full = Account(localId: "u1", email: "ann@example.com", emailVerified: true, passwordHash: "aGFzaA==", salt: "c2FsdA==",
                           displayName: "Ann \"A\" O\u{2019}Neil", photoUrl: "https://example.com/a.png", lastSignedInAt: 1700000000000,
                           createdAt: 1600000000000, phoneNumber: "+15555550100", disabled: false, customAttributes: "{\"admin\":true}",
                           mfaInfoJSON: "[{\"mfaEnrollmentId\":\"m1\"}]")
        full.providers = [ProviderLink(providerId: "apple.com", rawId: "001.x", email: "x@privaterelay.appleid.com"),
                          ProviderLink(providerId: "oidc.corp", rawId: "7"),
                          ProviderLink(providerId: "facebook.com", rawId: "42", displayName: "Ann\nO", photoUrl: "https://f/p")]
        var bytes: [UInt8] = []
        ImportJSON.render(full, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == """
              {
                "localId": "u1",
                "email": "ann@example.com",
                "emailVerified": true,
                "passwordHash": "aGFzaA==",
                "salt": "c2FsdA==",
                "displayName": "Ann \\"A\\" O\u{2019}Neil",
                "photoUrl": "https://example.com/a.png",
                "lastSignedInAt": "1700000000000",
                "createdAt": "1600000000000",
                "phoneNumber": "+15555550100",
                "disabled": false,
                "customAttributes": "{\\"admin\\":true}",
                "mfaInfo": [{"mfaEnrollmentId":"m1"}],
                "providerUserInfo": [
                  {
                    "providerId": "apple.com",
                    "rawId": "001.x",
                    "email": "x@privaterelay.appleid.com"
                  },
                  {
                    "providerId": "facebook.com",
                    "rawId": "42",
                    "displayName": "Ann\\nO",
                    "photoUrl": "https://f/p"
                  }
                ]
              }
            """)
        bytes = []
        ImportJSON.render(Account(localId: "u2", disabled: true, providers: [ProviderLink(providerId: "password", rawId: "a@b.example")]), to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == """
              {
                "localId": "u2",
                "emailVerified": false,
                "disabled": true,
                "providerUserInfo": []
              }
            """)
    }
}

/// `stages.import`: what it needs from the rest of the pipeline, and its password hash parameters.
struct ImportStageConfigTests {
    static let base = "version: 1\nname: m\nsource: {path: x.json}\n"
    static let services = "services: {google: {project_id: p}}\n"
    static let output = "output: {import_json: out.json}\n"
    /// A pipeline whose import stage has these password hash parameters.
    static func hash(_ parameters: String) -> String { "stages: {import: {password_hash: {\(parameters)}}}\n" + output + services }

    /// Pipelines and what their refusal says.
    static let refusals: [(String, String)] = [
        ("stages: {import: true}\n" + output, "add services.google"),
        ("stages: {import: true}\n" + services, "name it with output.import_json"),
        ("select: {disabled: true}\nstages: {import: true, delete: true}\n" + output + services, "does not revoke or delete"),
        ("stages: {import: {users_per_request: 1001}}\n" + output + services, "must be at most 1000 (the API takes 1000 accounts a request)"),
        (hash("rounds: 8"), "missing key 'algorithm'"),
        (hash("algorithm: scrypt"), "'scrypt' is not one of the API's hash algorithms"),
        (hash("algorithm: STANDARD_SCRYPT"), "STANDARD_SCRYPT is not supported here"),
        (hash("algorithm: MD5"), "MD5 needs rounds"),
        (hash("algorithm: HMAC_SHA256, signer_key_file: 'e+Qlga2wsHlJ/vuq+Ad3odQUl5xY/Y6Ut1rc7fKATJo='"),
         "looks like the key itself (base64, not shown)"),
        ("stages: {import: {project_id: demo-idpipe/tenants/x}}\n" + output + services, "is not a project id"),
        ("stages: {import: {tenant_id: ''}}\n" + output + services, "is not a tenant id"),
        (hash("algorithm: BCRYPT, signer_key_env: K"), "BCRYPT hashes take no signer key"),
        (hash("algorithm: SCRYPT"), "SCRYPT needs rounds and memory_cost (the console's"),
        (hash("algorithm: SCRYPT, rounds: 8"), "SCRYPT needs memory_cost (the console's"),
        (hash("algorithm: SCRYPT, salt_separator: 'B w', rounds: 8, memory_cost: 14"), "is not base64"),
        (hash("algorithm: SCRYPT, rounds: 8, memory_cost: 15"), "must be at most 14"),
    ]

    @Test(arguments: refusals)
    func aStageThatCannotImportIsRefused(text: String, message: String) {
        let error = #expect(throws: PipelineFileError.self) { try PipelineDefinition.parse(yaml: Self.base + text, file: "m.yaml") }
        #expect(error?.description.contains(message) == true, "\(String(describing: error))")
        #expect(error?.description.contains("e+Qlga2ws") == false, "a key is never shown")
    }

    @Test func theStageKeepsItsParameters() throws {
        let text = Self.base + "stages: {import: {users_per_request: 500, password_hash: {algorithm: SCRYPT, signer_key_file: k.txt, "
            + "salt_separator: Bw==, rounds: 8, memory_cost: 14}}}\n" + Self.output + Self.services
        let config = try #require(try PipelineDefinition.parse(yaml: text, file: "m.yaml").stages.importAccounts)
        #expect(config.usersPerRequest == 500)
        #expect(config.passwordHash?.algorithm == "SCRYPT" && config.passwordHash?.signerKeyFile == "k.txt" && config.passwordHash?.saltSeparator == "Bw==")
        #expect(config.passwordHash?.rounds == 8 && config.passwordHash?.memoryCost == 14)
        #expect(try PipelineDefinition.parse(yaml: Self.base + "stages: {import: true}\n" + Self.output + Self.services, file: "m.yaml")
            .stages.importAccounts == ImportConfig())
    }
}
