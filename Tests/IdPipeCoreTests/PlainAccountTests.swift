import Testing
import IdPipeTestSupport
@testable import IdPipeCore

extension AccountProcessor {
    /// The fast path's counts of the account when it takes it; nil when the full path must decide.
    func plain(_ account: borrowing AccountBytes) -> PlainAccount? {
        if case .plain(let counts) = fastPath(account) { counts } else { nil }
    }
}

/// The fast path (`AccountProcessor.fastPath`) against the full one (`process`): whenever the fast path takes an account,
/// the full path must find it needs nothing and count it the same way. Accounts are drawn from pools of values that
/// include every kind of trouble the stages repair or reject, under pipelines that switch each stage and rule.
@Suite struct PlainAccountTests {
    static let asOf = Timestamp.parseRFC3339("2026-11-21T00:00:00Z")!
    static let day: Int64 = 86_400_000

    static let pipelines: [String] = [
        "select: {deletion_requested: true}\nstages: {backfill_names: {sources: [legacy, provider:facebook.com]}, revoke: true, delete: {when_not_revocable: delete}}",
        "select: {disabled: true, inactive_for_days: 365}\nstages: {backfill_names: {sources: [provider:google.com, email-local-part, provider:apple.com]}}",
        "select: {deletion_requested: true, providers: [apple.com]}\nstages: {detect_relay: false, backfill_names: {sources: [legacy]}}",
        "select: {disabled: true}\nstages: {normalize: false}",
        "select: {deletion_requested: true}\nstages: {backfill_names: {sources: [provider:oidc.example]}}",
    ]

    static func processor(_ rules: String) throws -> AccountProcessor {
        let pipeline = try PipelineDefinition.parse(yaml: "version: 1\nname: t\nsource: {path: x.json}\ninputs: {legacy_names: n.csv, deletion_requests: d.csv}\n" + rules, file: "t.yaml")
        var legacy = KeyedRows<LegacyName>()
        legacy["named"] = LegacyName(givenName: "Ann", familyName: "Lee", consent: false)
        legacy["consented"] = LegacyName(givenName: "Bo", familyName: "Ek", consent: true)
        var requests = KeyedRows<DeletionRequest>()
        requests["leaving"] = DeletionRequest(requestedAt: asOf - day, source: "app")
        return AccountProcessor(pipeline: pipeline, sideInputs: SideInputs(legacyNames: legacy, deletionRequests: requests), asOf: asOf)
    }

    // Pools of values; each account takes one of each, by a deterministic walk.
    static let ids = ["u1", "named", "consented", "leaving", " spaced", "", "é-id", String(repeating: "x", count: 129), "ok-2", "u1\u{0}x", "u\u{1B}"]
    static let emails: [String?] = [nil, "ann@example.com", "Ann@Example.COM", " ann@example.com", "k2x9@privaterelay.appleid.com",
                                     "K2X9@PrivateRelay.AppleID.com", "no-at", "", "ann@bücher.de", "a..b@example.com"]
    static let phones: [String?] = [nil, "+14155550100", "+1 415 555 0100", "0014155550100", "+0123456789", "", "+1234567", "+123456", "+1234567890123456"]
    static let names: [String?] = [nil, "Ann Lee", "", " Ann", "Ann  Lee", "刘芳", String(repeating: "a", count: 257), "a\u{200B}", "  ", "Ann\u{7}"]
    static let times: [Int64?] = [asOf - 10 * day, nil, 1_700_000_000_000, 1_500_000_000, 0, -5, asOf - 400 * day, asOf + 2 * day]
    static let providerIds = ["apple.com", "facebook.com", "google.com", "phone", "password", "oidc.example", "Apple.com", "twitter.com", " google.com"]
    static let rawIds = ["1", "", " 1", "001.abc.9"]
    static let linkEmails: [String?] = [nil, "same", "r5@privaterelay.appleid.com", "bob@example.org", "BAD@X.COM", ""]
    static let linkNames: [String?] = [nil, "Bob", "", " Bob"]

    /// The `n`-th account of the walk: mostly ordinary values, each field off the plain path now and then.
    static func account(_ n: Int) -> Account {
        var random = SeededGenerator(seed: UInt64(n))
        func pick<T>(_ pool: [T], plain: Int = 2) -> T {
            // Nine draws in ten take one of the first `plain` values (ordinary ones), the rest any.
            random.next() % 10 != 0 ? pool[Int(random.next() % UInt64(plain))] : pool[Int(random.next() % UInt64(pool.count))]
        }
        let email = pick(emails)
        var account = Account(localId: pick(ids, plain: 5), email: email, displayName: pick(names), lastSignedInAt: pick(times),
                              createdAt: pick(times), phoneNumber: pick(phones), disabled: random.next() % 7 == 0)
        for _ in 0..<Int(random.next() % 4) {
            let linkEmail = pick(linkEmails, plain: 3)
            account.providers.append(ProviderLink(providerId: pick(providerIds, plain: 4), rawId: pick(rawIds),
                                                  email: linkEmail == "same" ? email : linkEmail, displayName: pick(linkNames)))
        }
        return account
    }

    /// The account's fields as the bytes a decoder would give the fast path.
    static func withBytes<T>(_ account: Account, _ body: (AccountBytes) -> T) -> T {
        var arena: [UInt8] = []
        var ranges: [Range<Int>] = []
        func add(_ text: String?) -> Int? {
            guard let text else { return nil }
            arena.append(contentsOf: text.utf8)
            ranges.append(arena.count - text.utf8.count..<arena.count)
            return ranges.count - 1
        }
        let id = add(account.localId)!, email = add(account.email), name = add(account.displayName), phone = add(account.phoneNumber)
        let links = account.providers.map { (add($0.providerId)!, add($0.rawId)!, add($0.email), add($0.displayName)) }
        return arena.withUnsafeBufferPointer { buffer in
            func slice(_ index: Int?) -> UnsafeBufferPointer<UInt8>? {
                index.map { UnsafeBufferPointer(rebasing: buffer[ranges[$0]]) }
            }
            var bytes = AccountBytes()
            bytes.localId = slice(id)!
            bytes.email = slice(email)
            bytes.displayName = slice(name)
            bytes.phoneNumber = slice(phone)
            bytes.disabled = account.disabled
            bytes.createdAt = account.createdAt
            bytes.lastSignedInAt = account.lastSignedInAt
            bytes.links = links.map { LinkBytes(providerId: slice($0.0)!, rawId: slice($0.1)!, email: slice($0.2), displayName: slice($0.3)) }
            return body(bytes)
        }
    }

    @Test(arguments: 0..<pipelines.count)
    func theFastPathTakesOnlyWhatTheFullPathWouldOnlyCount(pipeline: Int) throws {
        let processor = try Self.processor(Self.pipelines[pipeline])
        var taken = 0, full = 0
        for n in 0..<20_000 {
            let account = Self.account(n)
            guard let plain = Self.withBytes(account, { processor.plain($0) }) else { continue }
            taken += 1
            guard case .account(let outcome) = processor.process(account, position: SourcePosition(file: "f", line: 1), sequence: 0) else {
                Issue.record("#\(n) was taken, but the full path quarantines it: \(account)")
                continue
            }
            #expect(!outcome.isNoteworthy, "#\(n): \(account)")
            #expect(outcome.repairs.isEmpty, "#\(n): \(account)")
            #expect(outcome.account == account, "#\(n): the full path changed it")
            #expect(plain.idHash == IdHash.of(account.localId))
            var expected = TallyCounter(), counted = TallyCounter()
            expected.count(outcome)
            counted.count(plain)
            #expect(counted.tally() == expected.tally(), "#\(n): \(account)")
            full += 1
        }
        // The walk must exercise the fast path, and leave it often (a test that never takes it proves nothing).
        if pipeline == 3 {
            #expect(taken == 0, "a pipeline that does not normalize never takes the fast path")
        } else {
            #expect(taken > 1_000 && taken < 15_000, "taken \(taken) of 20000")
        }
        #expect(full == taken)
    }

    /// An account the fast path leaves to the full path with its values found already normal (`FastPathVerdict.normalized`)
    /// skips the normalize stage: the stage must leave it as it is, and the outcome must be the one the whole full
    /// path gives.
    @Test(arguments: 0..<pipelines.count)
    func theAccountsFoundNormalizedNeedNoNormalizing(pipeline: Int) throws {
        let processor = try Self.processor(Self.pipelines[pipeline])
        var normalized = 0
        for n in 0..<20_000 {
            let account = Self.account(n)
            guard case .normalized = Self.withBytes(account, { processor.fastPath($0) }) else { continue }
            normalized += 1
            #expect(AccountProcessor.normalizes(to: account), "#\(n): \(account)")
            let position = SourcePosition(file: "f", line: 1)
            var skippedHash: UInt64 = 0, fullHash: UInt64 = 0
            let skipped = processor.process(account, position: position, sequence: 0, idHash: &skippedHash, normalized: true)
            let full = processor.process(account, position: position, sequence: 0, idHash: &fullHash)
            #expect("\(skipped)" == "\(full)" && skippedHash == fullHash, "#\(n): \(account)")
        }
        if pipeline == 3 {
            #expect(normalized == 0, "a pipeline that does not normalize never finds an account normalized")
        } else {
            #expect(normalized > 1_000, "found normalized: \(normalized) of 20000")
        }
    }

    @Test func plainAccountsAreTaken() throws {
        let processor = try Self.processor(Self.pipelines[0])
        let cases: [Account] = [
            Account(localId: "u1", email: "ann@example.com", displayName: "Ann Lee", lastSignedInAt: 1_700_000_000_000),
            Account(localId: "u2", email: "k2x9@privaterelay.appleid.com", displayName: "刘芳",
                    providers: [ProviderLink(providerId: "apple.com", rawId: "001.a.1", email: "k2x9@privaterelay.appleid.com")]),
            Account(localId: "u3", email: "bob@example.org", phoneNumber: "+14155550100", disabled: true,
                    providers: [ProviderLink(providerId: "google.com", rawId: "9", email: "bob@example.org", displayName: "Bob")]),
            // No name and no source for one: counted as such.
            Account(localId: "u4", email: "k@privaterelay.appleid.com", providers: [ProviderLink(providerId: "apple.com", rawId: "001.b.2")]),
        ]
        for account in cases {
            #expect(Self.withBytes(account, { processor.plain($0) }) != nil, "\(account.localId)")
        }
    }

    @Test func accountsWithSomethingToDoAreLeftToTheFullPath() throws {
        let processor = try Self.processor(Self.pipelines[0])
        let relay = "k2x9@privaterelay.appleid.com"
        let cases: [(String, Account)] = [
            ("deletion requested", Account(localId: "leaving", email: "ann@example.com", displayName: "Ann")),
            ("a legacy name to fill", Account(localId: "named", email: "ann@example.com")),
            ("a Facebook name to fill", Account(localId: "u", providers: [ProviderLink(providerId: "facebook.com", rawId: "1", displayName: "Bo")])),
            ("a relay account with a real email, no consent", Account(localId: "u", email: "ann@example.com", displayName: "Ann",
                                                                      providers: [ProviderLink(providerId: "apple.com", rawId: "1", email: relay)])),
            ("an upper-case domain", Account(localId: "u", email: "ann@EXAMPLE.com", displayName: "Ann")),
            ("a phone to reformat", Account(localId: "u", displayName: "Ann", phoneNumber: "+1 415 555 0100")),
            ("a timestamp in seconds", Account(localId: "u", displayName: "Ann", createdAt: 1_500_000_000)),
            ("a provider linked twice", Account(localId: "u", displayName: "Ann", providers: [
                ProviderLink(providerId: "google.com", rawId: "1"), ProviderLink(providerId: "google.com", rawId: "2")])),
            ("an unknown provider", Account(localId: "u", displayName: "Ann", providers: [ProviderLink(providerId: "oidc.x", rawId: "1")])),
            // Counted by the full path (`OddTimes`).
            ("made after the plan's time", Account(localId: "u", displayName: "Ann", createdAt: Self.asOf + Self.day)),
            ("a last sign-in before the account was made", Account(localId: "u", displayName: "Ann", lastSignedInAt: Self.asOf - 2 * Self.day,
                                                                    createdAt: Self.asOf - Self.day)),
        ]
        for (what, account) in cases {
            #expect(Self.withBytes(account, { processor.plain($0) }) == nil, "\(what)")
        }
    }

    /// Times that cannot be right, each by more than a minute; the rest are none.
    @Test(arguments: [
        (nil, nil, []), (asOf - day, asOf, []), (asOf + 60_000, asOf + 60_000, []), (asOf + 60_001, nil, [.createdAfterPlan]),
        (nil, asOf + day, [.signedInAfterPlan]), (asOf - day, asOf - day - 60_000, []),
        (asOf - day, asOf - day - 60_001, [.signedInBeforeCreated]),
        (asOf + 2 * day, asOf + day, [.createdAfterPlan, .signedInAfterPlan, .signedInBeforeCreated]),
    ] as [(Int64?, Int64?, OddTimes)])
    func oddTimesAreFound(created: Int64?, lastSignedIn: Int64?, expected: OddTimes) {
        #expect(OddTimes(createdAt: created, lastSignedInAt: lastSignedIn, asOf: Self.asOf) == expected)
    }
}
