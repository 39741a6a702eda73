import Testing
import IdPipeTestSupport
@testable import IdPipeCore

@Suite struct SelectionTests {
    static let asOf = Timestamp.parseRFC3339("2026-11-21T00:00:00Z")!
    static let day: Int64 = 86_400_000
    static let recent = asOf - 10 * day, old = asOf - 800 * day
    static let appleLink = [ProviderLink(providerId: "apple.com", rawId: "001.a.1")]

    /// Deletion requests, disabled accounts and no sign-in for 730 days; two ids and an email domain protected (one id
    /// from the pipeline, one from a protected-accounts side input); `providers`, when given, filters.
    static func selector(providers: [String]) -> Selector {
        var config = SelectionConfig()
        config.deletionRequested = true
        config.disabled = true
        config.inactiveForDays = 730
        config.protectedIds = ["vip"]
        config.protectedEmailDomains = ["corp.example", "xn--bcher-kva.example"]  // as the pipeline file's parser leaves them
        config.providers = providers
        return Selector(config: config, asOf: asOf, extraProtectedIds: ["listed"])
    }

    /// Each case: what it shows, the account, whether it has a deletion request, the provider filter, the outcome.
    static let cases: [(String, Account, Bool, [String], SelectionOutcome)] = [
        ("no rule matches", Account(localId: "a", lastSignedInAt: recent), false, [], .notSelected),
        ("deletion requested", Account(localId: "b", lastSignedInAt: recent), true, [], .selected(.deletionRequested)),
        ("disabled", Account(localId: "c", lastSignedInAt: recent, disabled: true), false, [], .selected(.disabled)),
        ("last sign-in 800 days ago", Account(localId: "d", lastSignedInAt: old), false, [], .selected(.inactive)),
        ("never signed in, created 800 days ago", Account(localId: "e", createdAt: old), false, [], .selected(.inactive)),
        ("last sign-in exactly 730 days ago: not older", Account(localId: "f", lastSignedInAt: asOf - 730 * day), false, [], .notSelected),
        ("last sign-in 730 days and 1 ms ago", Account(localId: "g", lastSignedInAt: asOf - 730 * day - 1), false, [], .selected(.inactive)),
        ("a sign-in counts before the creation", Account(localId: "h", lastSignedInAt: recent, createdAt: old), false, [], .notSelected),
        ("the later of the two decides: created since", Account(localId: "h2", lastSignedInAt: old, createdAt: recent), false, [], .notSelected),
        ("a last sign-in of 0 is no time", Account(localId: "h3", lastSignedInAt: 0, createdAt: recent), false, [], .notSelected),
        ("times of 0 only", Account(localId: "h4", lastSignedInAt: 0, createdAt: 0), false, [], .notSelected),
        ("every rule at once", Account(localId: "i", lastSignedInAt: old, disabled: true), true, [],
         .selected([.deletionRequested, .disabled, .inactive])),
        ("protected id", Account(localId: "vip", lastSignedInAt: old), true, [], .protected([.deletionRequested, .inactive], why: "protected account id")),
        ("protected id from the side input", Account(localId: "listed", disabled: true), false, [], .protected(.disabled, why: "protected account id")),
        ("protected email domain, in any case", Account(localId: "j", email: "boss@Corp.Example", lastSignedInAt: recent), true, [],
         .protected(.deletionRequested, why: "protected email domain")),
        ("a subdomain of a protected domain", Account(localId: "k", email: "x@eu.corp.example"), true, [], .protected(.deletionRequested, why: "protected email domain")),
        ("a link's address at a protected domain",
         Account(localId: "k6", providers: [ProviderLink(providerId: "facebook.com", rawId: "9", email: "boss@corp.example")]), true, [],
         .protected(.deletionRequested, why: "protected email domain")),
        ("a final dot (normalize off)", Account(localId: "k7", email: "boss@corp.example."), true, [], .protected(.deletionRequested, why: "protected email domain")),
        ("a domain that only ends alike", Account(localId: "k2", email: "x@notcorp.example"), true, [], .selected(.deletionRequested)),
        ("a protected domain inside another", Account(localId: "k3", email: "x@corp.example.net"), true, [], .selected(.deletionRequested)),
        ("an IDN domain, normalized", Account(localId: "k4", email: "x@xn--bcher-kva.example"), true, [], .protected(.deletionRequested, why: "protected email domain")),
        ("an IDN domain as written (normalize off)", Account(localId: "k5", email: "x@Bücher.Example"), true, [], .protected(.deletionRequested, why: "protected email domain")),
        ("an IDN domain decomposed (normalize off)", Account(localId: "k8", email: "x@bu\u{0308}cher.example"), true, [],
         .protected(.deletionRequested, why: "protected email domain")),
        ("a domain in fullwidth letters (normalize off)", Account(localId: "k9", email: "x@ｃｏｒｐ.example"), true, [],
         .protected(.deletionRequested, why: "protected email domain")),
        ("provider filter, not linked", Account(localId: "l", disabled: true), false, ["apple.com"], .filteredByProvider(.disabled)),
        ("provider filter, linked", Account(localId: "m", disabled: true, providers: appleLink), false, ["apple.com"], .selected(.disabled)),
        ("provider filter, one of several", Account(localId: "n", providers: appleLink), true, ["facebook.com", "apple.com"],
         .selected(.deletionRequested)),
        ("provider filter, no rule matches", Account(localId: "o", providers: appleLink), false, ["apple.com"], .notSelected),
    ]

    @Test(arguments: cases)
    func selects(_ what: String, account: Account, requested: Bool, providers: [String], expected: SelectionOutcome) {
        let request = requested ? DeletionRequest(requestedAt: Self.asOf - Self.day, source: "app") : nil
        #expect(Self.selector(providers: providers).select(account, deletionRequest: request) == expected, "\(what)")
    }

    /// A deletion request dated after the plan's time did not exist then: not honoured (it was, a clock or time zone
    /// off); one made at that very moment is.
    @Test(arguments: [(Int64(0), SelectionOutcome.selected(.deletionRequested)), (1, .requestNotActedOn(why: "made after the plan's time")),
                      (400 * day, .requestNotActedOn(why: "made after the plan's time"))])
    func aRequestAfterThePlansTimeIsNotHonoured(later: Int64, expected: SelectionOutcome) {
        let request = DeletionRequest(requestedAt: Self.asOf + later, source: "app")
        #expect(Self.selector(providers: []).select(Account(localId: "b", lastSignedInAt: Self.recent), deletionRequest: request) == expected)
    }

    /// Within the grace period a request waits; one exactly as old as the grace period is acted on. The other rules
    /// are not delayed.
    /// The request says when it is acted on: 14 days after it was made, 2026-11-21 being the plan's time.
    @Test(arguments: [(Int64(14 * day), SelectionOutcome.selected(.deletionRequested)),
                      // 1 ms short of 14 days at the plan's time: acted on from the next second (to the second, rounded up).
                      (14 * day - 1, .requestNotActedOn(why: "within select.deletion_grace_days: acted on from 2026-11-21T00:00:01Z")),
                      (day, .requestNotActedOn(why: "within select.deletion_grace_days: acted on from 2026-12-04T00:00:00Z")),
                      (0, .requestNotActedOn(why: "within select.deletion_grace_days: acted on from 2026-12-05T00:00:00Z")),
                      (400 * day, .selected(.deletionRequested))])
    func aRequestWithinItsGracePeriodWaits(age: Int64, expected: SelectionOutcome) {
        var config = SelectionConfig()
        config.deletionRequested = true
        config.disabled = true
        config.deletionGraceDays = 14
        let selector = Selector(config: config, asOf: Self.asOf)
        let request = DeletionRequest(requestedAt: Self.asOf - age, source: "app")
        #expect(selector.select(Account(localId: "b", lastSignedInAt: Self.recent), deletionRequest: request) == expected)
        #expect(selector.select(Account(localId: "c", lastSignedInAt: Self.recent, disabled: true), deletionRequest: request)
                == .selected(expected.isSelected ? [.deletionRequested, .disabled] : .disabled))
    }

    /// `retention_match: all`: disabled and unused for 730 days at once, not either; a deletion request still selects
    /// on its own, and the protections and the provider filter still apply.
    @Test(arguments: [
        ("disabled only", Account(localId: "c", lastSignedInAt: recent, disabled: true), false, SelectionOutcome.notSelected),
        ("unused only", Account(localId: "d", lastSignedInAt: old), false, .notSelected),
        ("disabled and unused", Account(localId: "e", lastSignedInAt: old, disabled: true), false, .selected([.disabled, .inactive])),
        ("disabled, never signed in, created long ago", Account(localId: "e2", createdAt: old, disabled: true), false, .selected([.disabled, .inactive])),
        ("disabled, with times of 0 only", Account(localId: "e3", lastSignedInAt: 0, createdAt: 0, disabled: true), false, .notSelected),
        ("a request alone", Account(localId: "f", lastSignedInAt: recent), true, .selected(.deletionRequested)),
        ("a request, and disabled only", Account(localId: "g", lastSignedInAt: recent, disabled: true), true, .selected(.deletionRequested)),
        ("a request, disabled and unused", Account(localId: "h", lastSignedInAt: old, disabled: true), true, .selected([.deletionRequested, .disabled, .inactive])),
        ("protected", Account(localId: "vip", lastSignedInAt: old, disabled: true), false, .protected([.disabled, .inactive], why: "protected account id")),
    ])
    func retentionRulesMatchedTogether(_ what: String, account: Account, requested: Bool, expected: SelectionOutcome) {
        var config = Self.selector(providers: []).config
        config.retentionMatch = .all
        let request = requested ? DeletionRequest(requestedAt: Self.asOf - Self.day, source: "app") : nil
        #expect(Selector(config: config, asOf: Self.asOf).select(account, deletionRequest: request) == expected, "\(what)")
    }

    /// A pipeline that does not select by request still names the accounts whose owners asked, and says why.
    @Test func aRequestThePipelineDoesNotSelectBySaysSo() {
        var config = SelectionConfig()
        config.disabled = true
        let request = DeletionRequest(requestedAt: Self.asOf - Self.day, source: "app")
        #expect(Selector(config: config, asOf: Self.asOf).select(Account(localId: "b", lastSignedInAt: Self.recent), deletionRequest: request)
                == .requestNotActedOn(why: "select.deletion_requested is off"))
        #expect(Selector(config: config, asOf: Self.asOf).select(Account(localId: "b", lastSignedInAt: Self.recent), deletionRequest: nil) == .notSelected)
    }

    /// A protected account is never revoked or deleted, whatever selects it; it stays, so its name is still filled.
    /// The same account unprotected is revoked and deleted.
    @Test func aProtectedAccountGetsNoRevocationOrDeletion() throws {
        let pipeline = try PipelineDefinition.parse(yaml: """
            version: 1
            name: cleanup
            source: {path: a.json}
            inputs: {legacy_names: names.csv, deletion_requests: requests.csv}
            select: {deletion_requested: true, disabled: true, protect: {uids: [vip]}}
            stages:
              backfill_names: {sources: [legacy]}
              revoke: true
              delete: {when_not_revocable: delete}
            """, file: "p.yaml")
        let request = DeletionRequest(requestedAt: Self.asOf - Self.day, source: "app")
        let token = StoredCredentials(apple: StoredAppleToken(kind: .refreshToken, token: Secret(value: "r1", fingerprint: "f00"), capturedAt: Self.recent))
        let name = LegacyName(givenName: "Jane", familyName: "Doe", consent: true)
        // (vip has no deletion request: an account whose owner asked for its deletion gets no name, protected or not.)
        let sideInputs = SideInputs(legacyNames: ["vip": name, "other": name], deletionRequests: ["other": request],
                                    credentials: ["vip": token, "other": token])
        let processor = AccountProcessor(pipeline: pipeline, sideInputs: sideInputs, asOf: Self.asOf)
        func outcome(_ uid: String) throws -> AccountOutcome {
            let account = Account(localId: uid, email: "\(uid)@example.com", disabled: true, providers: Self.appleLink)
            guard case .account(let outcome) = processor.process(account, position: SourcePosition(file: "a.json", line: 1), sequence: 0) else {
                throw ToolError("\(uid) was quarantined")
            }
            return outcome
        }
        let protected = try outcome("vip")
        #expect(protected.selection == .protected([.disabled], why: "protected account id"))
        #expect(protected.actions.map(\.kind) == [.updateName])
        let other = try outcome("other")
        #expect(other.selection == .selected([.deletionRequested, .disabled]))
        #expect(other.actions.map(\.kind) == [.revokeApple, .deleteAccount])
    }

    /// A selected account that stays (the pipeline revokes, and deletes nothing) still gets its name; one that is
    /// deleted does not.
    @Test(arguments: [("revoke: true", [ActionKind.revokeApple, .revokeSessions, .updateName]), ("revoke: true, delete: {accounts: true}", [.revokeApple, .deleteAccount]),
                      // Its deletion blocked (the code is too old to revoke, and the policy keeps such accounts), it stays.
                      ("revoke: true, delete: {accounts: true, when_not_revocable: keep}", [.revokeApple, .revokeSessions, .deleteAccount, .updateName])])
    func aSelectedAccountThatStaysGetsItsName(stages: String, expected: [ActionKind]) throws {
        let pipeline = try PipelineDefinition.parse(yaml: """
            version: 1
            name: revoke
            source: {path: a.json}
            inputs: {legacy_names: names.csv}
            select: {disabled: true}
            stages: {backfill_names: {sources: [legacy]}, \(stages)}
            """, file: "p.yaml")
        let kind: AppleTokenKind = stages.contains("keep") ? .authorizationCode : .refreshToken
        let token = StoredCredentials(apple: StoredAppleToken(kind: kind, token: Secret(value: "r1", fingerprint: "f00"), capturedAt: Self.recent))
        let sideInputs = SideInputs(legacyNames: ["u": LegacyName(givenName: "Jane", familyName: "Doe", consent: true)], credentials: ["u": token])
        let processor = AccountProcessor(pipeline: pipeline, sideInputs: sideInputs, asOf: Self.asOf)
        let account = Account(localId: "u", email: "u@example.com", disabled: true, providers: Self.appleLink)
        guard case .account(let outcome) = processor.process(account, position: SourcePosition(file: "a.json", line: 1), sequence: 0) else {
            throw ToolError("quarantined")
        }
        #expect(outcome.actions.map(\.kind) == expected)
    }

    /// An account whose owner asked for its deletion gets no name written into it, whether its deletion is blocked (its
    /// revocation not possible, with the policy keep) or its request is later than the plan's time.
    @Test(arguments: [Int64(-86_400_000), 86_400_000])
    func anAccountItsOwnerAskedToDeleteGetsNoName(requestAge: Int64) throws {
        let pipeline = try PipelineDefinition.parse(yaml: """
            version: 1
            name: cleanup
            source: {path: a.json}
            inputs: {legacy_names: names.csv, deletion_requests: requests.csv}
            select: {deletion_requested: true}
            stages: {backfill_names: {sources: [legacy]}, revoke: true, delete: {accounts: true, when_not_revocable: keep}}
            """, file: "p.yaml")
        let sideInputs = SideInputs(legacyNames: ["u": LegacyName(givenName: "Jane", familyName: "Doe", consent: true)],
                                    deletionRequests: ["u": DeletionRequest(requestedAt: Self.asOf + requestAge, source: "app")])
        let processor = AccountProcessor(pipeline: pipeline, sideInputs: sideInputs, asOf: Self.asOf)
        let account = Account(localId: "u", email: "u@example.com", providers: Self.appleLink)
        guard case .account(let outcome) = processor.process(account, position: SourcePosition(file: "a.json", line: 1), sequence: 0) else {
            throw ToolError("quarantined")
        }
        #expect(!outcome.actions.contains { $0.kind == .updateName }, "\(outcome.actions.map(\.kind))")
        #expect(outcome.name == .noSource(AccountProcessor.deletionRequestedNoName))
    }

    /// A time before March 1973 is taken for seconds in an export, where no account is that old; a table's pipeline
    /// gives the unit, and a legacy account created in 1972 kept its date (it was moved to the year 4384).
    @Test(arguments: [("auth-export-json", "a.json", Int64(76_204_800_000_000)), ("mapped-csv", "a.csv", Int64(76_204_800_000))])
    func onlyAnExportsTimesAreTakenForSeconds(format: String, path: String, expected: Int64) throws {
        let mapping = format == "mapped-csv" ? ", mapping: {localId: id}" : ""
        let pipeline = try PipelineDefinition.parse(yaml: """
            version: 1
            name: times
            source: {path: \(path), format: \(format)\(mapping)}
            """, file: "p.yaml")
        let processor = AccountProcessor(pipeline: pipeline, sideInputs: SideInputs(), asOf: Self.asOf)
        let account = Account(localId: "u", createdAt: 76_204_800_000)
        guard case .account(let outcome) = processor.process(account, position: SourcePosition(file: path, line: 1), sequence: 0) else {
            throw ToolError("quarantined")
        }
        #expect(outcome.account.createdAt == expected)
    }

    /// An invisible character in an address's domain made another domain of it: the account escaped the protection of
    /// its domain and was planned for deletion, and a relay address passed for a real one. Mapped as UTS #46 maps it,
    /// the domain is the one it shows.
    @Test(arguments: ["\u{00AD}", "\u{200B}", "\u{FEFF}"])
    func anInvisibleCharacterInADomainHidesNothing(hidden: String) throws {
        let pipeline = try PipelineDefinition.parse(yaml: """
            version: 1
            name: cleanup
            source: {path: a.json}
            select: {disabled: true, protect: {email_domains: [corp.example]}}
            stages: {delete: {accounts: true}}
            """, file: "p.yaml")
        let processor = AccountProcessor(pipeline: pipeline, sideInputs: SideInputs(), asOf: Self.asOf)
        func outcome(_ email: String) throws -> AccountOutcome {
            let account = Account(localId: "u", email: email, phoneNumber: "+14155550100", disabled: true, providers: Self.appleLink)
            guard case .account(let outcome) = processor.process(account, position: SourcePosition(file: "a.json", line: 1), sequence: 0) else {
                throw ToolError("\(email) was quarantined")
            }
            return outcome
        }
        let boss = try outcome("boss@corp\(hidden).example")
        #expect(boss.selection == .protected([.disabled], why: "protected email domain"), "\(boss.selection)")
        #expect(boss.actions.isEmpty)
        let relay = try outcome("ab1@privaterelay.appleid.com\(hidden)")
        #expect(relay.relay?.relayClass == .relayAddress)
    }
}

@Suite struct PlannerTests {
    let asOf = Timestamp.parseRFC3339("2026-11-21T00:00:00Z")!
    func secret(_ value: String) -> Secret { Secret(value: value, fingerprint: "f00") }

    func planner(_ policy: NotRevocablePolicy) -> Planner {
        var stages = StagesConfig()
        stages.revoke = RevokeConfig()
        stages.delete = DeleteConfig(dataWebhook: "https://example.com/hook", accounts: true, whenNotRevocable: policy)
        return Planner(stages: stages, asOf: asOf)
    }

    let appleAndFacebook = Account(localId: "u", providers: [
        ProviderLink(providerId: "apple.com", rawId: "001.a.1"), ProviderLink(providerId: "facebook.com", rawId: "123"),
    ])

    @Test(arguments: [
        (nil as AppleTokenKind?, 0 as Int64, ActionState.notPossible, "no stored Apple token" as String?),
        (.refreshToken, 400 * 86_400_000, .planned, nil),
        (.accessToken, 0, .planned, nil),
        (.authorizationCode, 60_000, .planned, nil),
        (.authorizationCode, 6 * 60_000, .notPossible, "authorization code older than 5 minutes"),
        (.authorizationCode, 299_999, .planned, nil),
        (.authorizationCode, 300_000, .notPossible, "authorization code older than 5 minutes"),  // 5:00: gone
        // Captured after the plan's time: planned, as apply judges a code's age when it sends (refused here, a code
        // still fresh when apply ran was never exchanged, and with when_not_revocable: delete its account was deleted).
        (.authorizationCode, -1, .planned, nil),
        (.refreshToken, -86_400_000, .planned, nil),
        // Later than a code lives, it is said (a code of 2030 went unremarked).
        (.authorizationCode, -300_001, .planned, "authorization code captured after the plan's time (at 2026-11-21T00:05:00Z): apply judges its "
            + "age as it sends, and fails it if it is later than then (a clock or file error)"),
    ])
    func appleRevocation(kind: AppleTokenKind?, age: Int64, state: ActionState, reason: String?) {
        let credentials = kind.map { StoredCredentials(apple: StoredAppleToken(kind: $0, token: secret("t"), capturedAt: asOf - age)) }
        let apple = planner(.keep).revocations(for: appleAndFacebook, credentials: credentials).first { $0.kind == .revokeApple }
        #expect(apple?.state == state)
        #expect(apple?.reason == reason)
        #expect(apple?.detail.contains("t ") != true, "the token value never appears in a plan")
    }

    @Test func facebookLimitedLoginIsNotRevocable() {
        let limited = StoredCredentials(facebook: StoredFacebookLogin(facebookId: "123", login: .limited, accessToken: nil))
        let action = planner(.keep).revocations(for: appleAndFacebook, credentials: limited).first { $0.kind == .revokeFacebook }
        #expect(action?.state == .notPossible)
        #expect(action?.reason == "Facebook Limited Login cannot be revoked from a server")
    }

    /// The deletions say what came first: an account with no login to revoke was said to have its revocations
    /// planned first.
    @Test func deletionsSayWhetherRevocationsComeFirst() {
        let twitterOnly = Account(localId: "t", providers: [ProviderLink(providerId: "twitter.com", rawId: "9")])
        let bare = planner(.keep).cleanup(for: twitterOnly, credentials: nil)
        #expect(bare.map(\.kind) == [.deleteData, .deleteAccount])
        #expect(bare.allSatisfy { $0.detail.hasSuffix("; no login to revoke first") }, "\(bare.map(\.detail))")
        let stored = StoredCredentials(apple: StoredAppleToken(kind: .refreshToken, token: secret("t"), capturedAt: asOf),
                                       facebook: StoredFacebookLogin(facebookId: "123", login: .classic, accessToken: nil))
        let revoked = planner(.keep).cleanup(for: appleAndFacebook, credentials: stored).filter { $0.kind == .deleteAccount }
        #expect(revoked.map(\.detail) == ["accounts:batchDelete force (ends its Firebase sessions); revocations planned first"])
    }

    /// A token stored for an account with no such login any more is still revoked (unlinking in Firebase revokes
    /// nothing at Apple or Facebook): before, it was passed over and the account deleted with the grant alive.
    @Test func aStoredTokenWithoutItsLoginIsStillRevoked() {
        let bare = Account(localId: "u")
        let stored = StoredCredentials(apple: StoredAppleToken(kind: .refreshToken, token: secret("t"), capturedAt: asOf),
                                       facebook: StoredFacebookLogin(facebookId: "987", login: .classic, accessToken: nil))
        let actions = planner(.keep).cleanup(for: bare, credentials: stored)
        #expect(actions.map(\.kind) == [.revokeApple, .revokeFacebook, .deleteData, .deleteAccount])
        #expect(actions.allSatisfy { $0.state == .planned })
        #expect(actions[0].detail.hasSuffix("(from the stored-tokens file: the account has no such login)"))
        #expect(actions[1].value == "987")
        #expect(planner(.keep).cleanup(for: bare, credentials: nil).map(\.kind) == [.deleteData, .deleteAccount])
        #expect(!planner(.keep).cleanup(for: appleAndFacebook, credentials: stored)[0].detail.contains("stored-tokens"))
    }

    /// A stored Facebook entry whose id is not the account's login describes another user (its login kind too): the
    /// revocation is not possible, so `when_not_revocable` decides, where before the entry's kind was taken for the
    /// account's. The same id, or none on either side, plans as before.
    @Test(arguments: [
        ("123", ActionState.planned, nil as String?, "123" as String?),
        ("124", .notPossible, "the stored-tokens file gives another facebook_id than the account's facebook.com login", nil),
    ])
    func aStoredFacebookIdMustBeTheLogins(storedId: String, state: ActionState, reason: String?, value: String?) {
        let stored = StoredCredentials(facebook: StoredFacebookLogin(facebookId: storedId, login: .classic, accessToken: nil))
        let actions = planner(.keep).cleanup(for: appleAndFacebook, credentials: stored)
        let facebook = actions.first { $0.kind == .revokeFacebook }
        #expect(facebook?.state == state)
        #expect(facebook?.reason == reason)
        #expect(facebook?.value == value)
        #expect(actions.last?.state == .blocked)  // the Apple token is missing either way
    }

    @Test func policyDecidesWhetherANotRevocableAccountIsDeleted() {
        for (policy, expected) in [(NotRevocablePolicy.keep, ActionState.blocked), (.delete, .planned)] {
            let plan = planner(policy)
            let revocations = plan.revocations(for: appleAndFacebook, credentials: nil)
            let deletions = plan.deletions(after: revocations, uid: "u1")
            #expect(deletions.map(\.kind) == [.deleteData, .deleteAccount])
            #expect(deletions.allSatisfy { $0.state == expected }, "\(policy)")
            #expect(deletions.allSatisfy { $0.detail.contains("when_not_revocable: \(policy.rawValue)") })
        }
    }

    /// A pipeline that deletes with the revocation of a login switched off still names that login, as a revocation
    /// not possible: its token would not be revoked before the deletion, so when_not_revocable decides (by default the
    /// account stays). Before, the deletion was planned with no revocation at all. Without deletion, nothing is added.
    @Test func aRevocationSwitchedOffInAPipelineThatDeletesIsNotPossible() {
        func cleanup(revoke: RevokeConfig?, delete: NotRevocablePolicy?) -> [String] {
            var stages = StagesConfig()
            stages.revoke = revoke
            stages.delete = delete.map { DeleteConfig(dataWebhook: nil, accounts: true, whenNotRevocable: $0) }
            return Planner(stages: stages, asOf: asOf).cleanup(for: appleAndFacebook, credentials: nil)
                .map { "\($0.kind.rawValue) \($0.state.rawValue)" + ($0.reason.map { ": \($0)" } ?? "") }
        }
        #expect(cleanup(revoke: nil, delete: .keep) == [
            "revoke-apple not-possible: stages.revoke is off in the pipeline",
            "revoke-facebook not-possible: stages.revoke is off in the pipeline",
            "delete-account blocked: revoke-apple: stages.revoke is off in the pipeline; revoke-facebook: stages.revoke is off in the pipeline",
        ])
        #expect(cleanup(revoke: RevokeConfig(apple: false, facebook: true, firebaseSessions: false), delete: .keep) == [
            "revoke-apple not-possible: stages.revoke.apple is off in the pipeline",
            "revoke-facebook planned",
            "delete-account blocked: revoke-apple: stages.revoke.apple is off in the pipeline",
        ])
        #expect(cleanup(revoke: nil, delete: .delete).last == "delete-account planned")
        #expect(cleanup(revoke: nil, delete: nil) == [])
    }

    /// The guards count accounts whose data or account the plan deletes, as apply's cap does: a plan that deletes
    /// data only passed them, and apply stopped it midway.
    @Test func guardsStopTooManyDeletions() {
        var counter = TallyCounter()
        func account(_ actions: [PlannedAction]) -> AccountOutcome {
            var outcome = AccountOutcome.empty
            outcome.account = Account(localId: "u")
            outcome.actions = actions
            return outcome
        }
        let dataOnly = account([PlannedAction(kind: .deleteFirestore, state: .planned, detail: "")])
        let both = account([PlannedAction(kind: .deleteData, state: .planned, detail: ""), PlannedAction(kind: .deleteAccount, state: .planned, detail: "")])
        let kept = account([PlannedAction(kind: .deleteAccount, state: .notPossible, detail: "", reason: "kept")])
        for _ in 0..<6 { counter.count(dataOnly) }
        for _ in 0..<5 { counter.count(both) }
        for _ in 0..<89 { counter.count(kept) }
        let tally = counter.tally()
        #expect(tally["accounts.processed"] == 100 && tally["accounts.deletions-planned"] == 11)
        #expect(Guards.verdict(GuardsConfig(maxDeletions: 10, maxDeletionShare: nil), tally: tally)
            == "the plan deletes the data or the account of 11 accounts; guards.max_deletions allows 10")
        // The share as written: 0.034 * 100 is 3.4000000000000004, and the message said so.
        #expect(Guards.verdict(GuardsConfig(maxDeletions: 11, maxDeletionShare: 0.034), tally: tally)
            == "the plan deletes the data or the account of 11 of 100 accounts (11.0 %); guards.max_deletion_share allows 3.4 %")
        #expect(Guards.verdict(GuardsConfig(maxDeletions: 11, maxDeletionShare: 0.2), tally: tally) == nil)
        #expect([0.5, 0.034, 0.07, 0.001, 0.0000125, 1, 1e-9, 0.123456789, 1e-7, 0].map(GuardsConfig.percent)
            == ["50", "3.4", "7", "0.1", "0.00125", "100", "0.0000001", "12.3456789", "0.00001", "0"])
    }
}

@Suite struct PipelineFileTests {
    /// A key given twice names the key and the line of its second, without quoting the file (Yams's message held the
    /// whole mapping, and its line was the first key's); a byte-order mark before the text is allowed.
    @Test(arguments: [
        ("version: 1\nname: x\nsource: {path: a.json}\nname: y\n", "p.yaml:4: not valid YAML: 'name' given twice in one mapping"),
        ("version: 1\nname: x\nsource: {path: a.json, path: b.json}\n", "p.yaml:3: not valid YAML: 'path' given twice in one mapping"),
        // The same key in another mapping, deeper, is not the second.
        ("version: 1\nname: x\nsource: {path: a.json}\nselect:\n  disabled: true\n  protect: {uids: [a]}\nstages: {delete: true}\n"
            + "inputs:\n  legacy_names: a.csv\nguards: {max_deletions: 1}\nselect: {}\n", "p.yaml:11: not valid YAML: 'select' given twice in one mapping"),
    ])
    func duplicateKeysAreNamedWhereTheyAreGivenAgain(text: String, expected: String) throws {
        let error = #expect(throws: PipelineFileError.self) { try PipelineDefinition.parse(yaml: text, file: "p.yaml") }
        #expect(error?.description == expected, "\(String(describing: error))")
        #expect(try PipelineDefinition.parse(yaml: "\u{FEFF}version: 1\nname: x\nsource: {path: a.json}\n", file: "p.yaml").name == "x")
    }

    /// libyaml's errors give their line and column, in the order they read, and a tab is named: the messages were its
    /// own, over several lines, with no line for the file.
    @Test(arguments: [
        ("version: 1\nname: x\nsource:\n\tpath: a.json\n",
         "p.yaml:4: not valid YAML: found character that cannot start any token at column 1; while scanning for the next token (the line holds a tab: YAML indents with spaces)"),
        ("version: 1\nname: x\nsource: {path: a.json}\n---\nversion: 1\n",
         "p.yaml:4: not valid YAML: found another document at column 1; expected a single document in the stream (line 1)"),
        ("version: 1\nname: x\nsource: {path: a.json}\nguards: *g\n", "p.yaml:4: not valid YAML: found undefined alias at column 9"),
        ("version: 1\nname: x\nsource: {path: a.json}\n? [a, b]\n: 1\n", "p.yaml:4: keys must be text"),
        ("version: 1\nname: x\nsource: {path: a.json}\nstages:\n  delete:\n    firestore: {paths: [users/{uid}]}\n",
         "p.yaml:6: not valid YAML: did not find expected ',' or ']' at column 31; while parsing a flow sequence (a path with {uid} in [ ] "
            + "is read as a mapping: quote it, or list the paths one `- users/{uid}` a line)"),
    ])
    func yamlErrorsGiveTheirLine(text: String, expected: String) throws {
        let error = #expect(throws: PipelineFileError.self) { try PipelineDefinition.parse(yaml: text, file: "p.yaml") }
        #expect(error?.description == expected, "\(String(describing: error))")
    }

    /// `phone_country_code` goes with `phone_trunk_prefix` (a wrong guess gives another person's number), on a mapped
    /// table only (an export's numbers have their code).
    @Test func phoneCountryCodeNeedsItsTrunkPrefixOnAMappedTable() throws {
        func source(_ keys: String, format: String = "mapped-csv") -> String {
            "version: 1\nname: x\nsource:\n  path: a.csv\n  format: \(format)\n  mapping: {localId: id}\n\(keys)"
        }
        let parsed = try PipelineDefinition.parse(yaml: source("  phone_country_code: 44\n  phone_trunk_prefix: 0\n"), file: "p.yaml")
        #expect(parsed.source.phoneDefault == PhoneDefault(countryCode: "44", trunkPrefix: "0"))
        let italy = try PipelineDefinition.parse(yaml: source("  phone_country_code: '+39'\n  phone_trunk_prefix: none\n"), file: "p.yaml")
        #expect(italy.source.phoneDefault == PhoneDefault(countryCode: "39", trunkPrefix: ""))
        #expect(try PipelineDefinition.parse(yaml: source(""), file: "p.yaml").source.phoneDefault == nil)
        let refused: [(String, String)] = [
            (source("  phone_country_code: 44\n"), "p.yaml:7: source.phone_country_code: needs phone_trunk_prefix"),
            (source("  phone_trunk_prefix: 0\n"), "p.yaml:7: source.phone_trunk_prefix: goes with phone_country_code"),
            (source("  phone_country_code: 0044\n  phone_trunk_prefix: 0\n"), "p.yaml:7: source.phone_country_code: expected a calling code of 1 to 3 digits"),
            (source("  phone_country_code: 44\n  phone_trunk_prefix: '+'\n"), "p.yaml:8: source.phone_trunk_prefix: expected 0 or none with country code 44"),
            (source("  phone_country_code: 44\n  phone_trunk_prefix: ''\n"), "p.yaml:8: source.phone_trunk_prefix: expected 0 or none with country code 44"),
            // Russia's 8 also begins St Petersburg's area code 812.
            (source("  phone_country_code: 7\n  phone_trunk_prefix: 8\n"), "p.yaml:8: source.phone_trunk_prefix: expected 0 or none with country code 7"),
            (source("  phone_country_code: 1\n  phone_trunk_prefix: 0\n"), "p.yaml:8: source.phone_trunk_prefix: expected 1 or none with country code 1"),
            (source("  phone_country_code: 39\n  phone_trunk_prefix: 0\n"), "p.yaml:8: source.phone_trunk_prefix: is none for country code 39"),
            ("version: 1\nname: x\nsource:\n  path: a.json\n  phone_country_code: 44\n  phone_trunk_prefix: 0\n",
             "p.yaml:5: source.phone_country_code: is for a mapped table"),
            (source("  phone_country_code: 44\n  phone_trunk_prefix: 0\nstages: {normalize: false}\n"),
             "p.yaml:7: source.phone_country_code: is read by the normalize stage, which stages.normalize turns off"),
        ]
        for (yaml, expected) in refused {
            let error = #expect(throws: PipelineFileError.self) { try PipelineDefinition.parse(yaml: yaml, file: "p.yaml") }
            #expect(error?.description.hasPrefix(expected) == true, "\(String(describing: error))")
        }
    }

    /// `timestamp_zone` is UTC or a fixed offset, for a mapped table's RFC 3339 times: a zone with summer time is refused
    /// with what to do instead, and so is the key where no time could be without a zone.
    @Test func aTimestampZoneIsForAMappedTablesDates() throws {
        func source(_ keys: String, format: String = "mapped-csv") -> String {
            "version: 1\nname: x\nsource:\n  path: a.csv\n  format: \(format)\n  mapping: {localId: id}\n\(keys)"
        }
        #expect(try PipelineDefinition.parse(yaml: source("  timestamp_zone: '+01:00'\n"), file: "p.yaml").source.timestampZone?.minutes == 60)
        #expect(try PipelineDefinition.parse(yaml: source("  timestamp_zone: UTC\n"), file: "p.yaml").source.timestampZone?.minutes == 0)
        #expect(try PipelineDefinition.parse(yaml: source(""), file: "p.yaml").source.timestampZone == nil)
        // epoch-ms says what an export's times are: accepted there.
        #expect(try PipelineDefinition.parse(yaml: "version: 1\nname: x\nsource:\n  path: a.json\n  timestamp_format: epoch-ms\n", file: "p.yaml")
                .source.timestampFormat == .epochMilliseconds)
        let refused: [(String, String)] = [
            (source("  timestamp_zone: Europe/Berlin\n"), "p.yaml:7: source.timestamp_zone: expected UTC or an offset such as +01:00 or -05:00, "
                + "found 'Europe/Berlin': a zone is given by its offset"),
            (source("  timestamp_zone: '+1:00'\n"), "p.yaml:7: source.timestamp_zone: expected UTC or an offset of hours and minutes, two digits "
                + "each, from -12:00 to +14:00 (+01:00, -05:30), found '+1:00'"),
            (source("  timestamp_zone: UTC+1\n"), "p.yaml:7: source.timestamp_zone: expected UTC or an offset alone, found 'UTC+1': write +01:00"),
            // The live API's accounts are read as they are: a mapped table's keys did nothing there, without a word.
            ("version: 1\nname: x\nsource:\n  format: identity-toolkit\n  timestamp_zone: UTC\n",
             "p.yaml:5: source.timestamp_zone: is for a mapped table (format: mapped-csv); format identity-toolkit reads the live API's accounts as they are"),
            ("version: 1\nname: x\nsource:\n  format: identity-toolkit\n  mapping: {localId: id}\n", "p.yaml:5: source.mapping: is for a mapped table"),
            ("version: 1\nname: x\nsource:\n  format: identity-toolkit\n  timestamp_format: epoch-s\n", "p.yaml:5: source.timestamp_format: is for a mapped table"),
            // An export's times are epoch milliseconds: another unit was ignored, without a word.
            ("version: 1\nname: x\nsource:\n  path: a.json\n  timestamp_format: epoch-s\n",
             "p.yaml:5: source.timestamp_format: is for a mapped table (format: mapped-csv): an export's times are epoch milliseconds"),
            (source("  timestamp_format: epoch-ms\n  timestamp_zone: UTC\n"), "p.yaml:8: source.timestamp_zone: is for times written as dates"),
            ("version: 1\nname: x\nsource:\n  path: a.json\n  timestamp_zone: UTC\n", "p.yaml:5: source.timestamp_zone: is for a mapped table"),
        ]
        for (yaml, expected) in refused {
            let error = #expect(throws: PipelineFileError.self) { try PipelineDefinition.parse(yaml: yaml, file: "p.yaml") }
            #expect(error?.description.hasPrefix(expected) == true, "\(String(describing: error))")
        }
    }

    /// `null_values` names a table's NULL texts (one or a list); `\N` is the default. A mapping makes a .csv a mapped table.
    @Test func aTablesNullValuesAreNamedInThePipeline() throws {
        func parse(_ keys: String, path: String = "a.csv") throws -> SourceConfig {
            try PipelineDefinition.parse(yaml: "version: 1\nname: x\nsource:\n  path: \(path)\n  mapping: {localId: id}\n\(keys)", file: "p.yaml").source
        }
        let plain = try parse("")
        #expect(plain.format == .mappedCSV, "a .csv with a mapping is a mapped table, not an export refused for having one")
        #expect(plain.nullCells == ["\\N"] && plain.assumptions == nil)
        let listed = try parse("  null_values: ['\\N', NULL]\n")
        #expect(listed.nullCells == ["\\N", "NULL"])
        #expect(listed.assumptions == "a cell that is \\N or NULL is read as empty (NULL)")
        #expect(try parse("  null_values: \\N\n").nullCells == ["\\N"], "one text alone, unquoted")
        #expect(try parse("  null_values: []\n").nullCells.isEmpty, "none: \\N is then a text")
        let refused: [(String, String)] = [
            ("version: 1\nname: x\nsource:\n  path: a.csv\n  mapping: {localId: id}\n  null_values: ['']\n",
             "p.yaml:6: source.null_values[0]: an empty cell is no value already"),
            // In double quotes YAML takes \N for U+0085.
            ("version: 1\nname: x\nsource:\n  path: a.csv\n  mapping: {localId: id}\n  null_values: [\"\\N\"]\n",
             "p.yaml:6: source.null_values[0]: in double quotes YAML reads \\N as a line end (U+0085): write '\\N' in single quotes"),
            ("version: 1\nname: x\nsource:\n  path: a.json\n  null_values: [NULL]\n", "p.yaml:5: source.null_values: is for a mapped table"),
            // A flag's spelling turned the flags written so into false.
            ("version: 1\nname: x\nsource:\n  path: a.csv\n  mapping: {localId: id}\n  null_values: [NULL, 1]\n",
             "p.yaml:6: source.null_values[1]: '1' is also how a flag is written"),
            ("version: 1\nname: x\nsource:\n  format: identity-toolkit\n  null_values: [NULL]\n", "p.yaml:5: source.null_values: is for a mapped table"),
            ("version: 1\nname: x\nsource:\n  path: a.json\n  mapping: {localId: id}\n", "p.yaml:5: source.mapping: a mapping is only for format: mapped-csv"),
            // validate said valid; plan then refused it, as plan.json is written in the same folder.
            ("version: 1\nname: x\nsource: {path: a.json}\noutput: {import_json: plan.json}\n",
             "p.yaml:4: output.import_json: 'plan.json' is the name of a report the run writes in the same folder (plan.json, report.json)"),
            ("version: 1\nname: x\nsource: {path: a.json}\noutput: {import_json: report.json}\n", "p.yaml:4: output.import_json: 'report.json' is the name"),
        ]
        for (yaml, expected) in refused {
            let error = #expect(throws: PipelineFileError.self) { try PipelineDefinition.parse(yaml: yaml, file: "p.yaml") }
            #expect(error?.description.hasPrefix(expected) == true, "\(String(describing: error))")
        }
    }

    /// A YAML error quotes its line cut short: a line of 200 kB was printed whole.
    @Test func aYAMLErrorQuotesALongLineCutShort() {
        let yaml = "version: 1\nname: x\nsource: {path: a.json}\nstages: " + String(repeating: "[", count: 100_000) + "\n"
        let error = #expect(throws: PipelineFileError.self) { try PipelineDefinition.parse(yaml: yaml, file: "p.yaml") }
        let description = error?.description ?? ""
        #expect(description.hasPrefix("p.yaml:4: not valid YAML: nested too deeply at column "), "\(description.prefix(400))")
        #expect(description.count < 2_000, "\(description.count) characters")
    }

    @Test func reportsLineAndPathOfAnUnknownKey() {
        let yaml = """
            version: 1
            name: x
            source:
              path: a.json
            stages:
              revoke: true
              delte: true
            select:
              deletion_requested: true
            """
        let error = #expect(throws: PipelineFileError.self) { try PipelineDefinition.parse(yaml: yaml, file: "p.yaml") }
        #expect(error?.line == 7)
        #expect(error?.path == "stages.delte")
        #expect(error?.description.hasPrefix("p.yaml:7: stages.delte: unknown key") == true)
    }

    @Test(arguments: [
        ("version: 2\nname: x\nsource: {path: a.json}", "version 2 is not supported"),
        ("version: 1\nname: x y\nsource: {path: a.json}", "a name is letters"),
        ("version: 1\nname: x\nsource: {path: a.txt}", "cannot tell the format"),
        ("version: 1\nname: x\nsource: {path: a.json}\nstages: {delete: true}", "need a 'select' rule"),
        ("version: 1\nname: x\nsource: {path: a.json}\nstages: {backfill_names: {sources: [nope]}}", "'nope' is not a name source"),
        ("version: 1\nname: x\nsource: {path: a.json}\nstages: {backfill_names: {sources: []}}", "stages.backfill_names.sources: is empty: name at least one source"),
        ("version: 1\nname: x\nsource: {path: a.json}\noutput: {import_json: cleaned.csv}", "'cleaned.csv' does not end in .json"),
        ("version: 1\nname: x\nsource: {path: a.json}\nguards: {max_deletion_share: 5}", "a share is between 0 and 1"),
        ("version: 1\nname: x\nsource: {path: a.csv, format: mapped-csv}", "needs a 'mapping'"),
        // Larger, it overflowed the selector's arithmetic (a trap at plan time, after validate had passed it).
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {inactive_for_days: 106751991168}", "select.inactive_for_days: must be at most 36500 (100 years)"),
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {inactive_for_days: 0}", "must be at least 1"),
        // A grace period for a rule that is off would do nothing, without a word.
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true, deletion_grace_days: 14}",
         "select.deletion_grace_days: delays the deletion_requested rule, which is not on"),
        ("version: 1\nname: x\nsource: {path: a.json}\ninputs: {deletion_requests: d.csv}\nselect: {deletion_requested: true, deletion_grace_days: 0}",
         "select.deletion_grace_days: must be at least 1"),
        // Digits beyond any number are out of range ("expected a whole number" said they were none).
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {inactive_for_days: 99999999999999999999999}", "select.inactive_for_days: must be at most 36500 (100 years)"),
        ("version: 1\nname: x\nsource: {path: a.json}\nguards: {max_deletions: -99999999999999999999}", "guards.max_deletions: must be at least 0"),
        ("version: 1\nname: x\nsource: {path: a.json}\nguards: {max_deletions: 1e400}", "guards.max_deletions: expected a whole number, found '1e400'"),
        // Without a bound of its own, the bound of a machine number is not shown.
        ("version: 99999999999999999999\nname: x\nsource: {path: a.json}", "version 99999999999999999999 is not supported"),
        ("version: 1\nname: x\nsource: {path: a.json}\nreport: {list_limit: 99999999999999999999999}", "report.list_limit: is too large"),
        // A protected domain that could match no address would protect nobody, without a word.
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true, protect: {email_domains: ['@corp.example']}}",
         "p.yaml:4: select.protect.email_domains[0]: '@corp.example' is not an email domain: domain '@corp.example' contains '@'"),
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true, protect: {email_domains: [corp]}}", "'corp' is not an email domain"),
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true, protect: {uids: ['vip ', b]}}",
         "select.protect.uids[0]: 'vip ': a space in the id"),
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true, protect: {uids: ['a,b']}}", "'a,b': , in the id"),
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true, protect: {uids: ['', b]}}", "select.protect.uids[0]: '': empty"),
        // An empty filter would read as none: every disabled account selected, whatever it is linked to.
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true, providers: []}", "select.providers: is empty"),
        // A rule whose input is not given did nothing: "no configured source has a name" for every account.
        ("version: 1\nname: x\nsource: {path: a.json}\nstages: {backfill_names: {sources: [legacy]}}",
         "p.yaml:4: stages.backfill_names: the name source 'legacy' reads inputs.legacy_names, which the pipeline does not give"),
        ("version: 1\nname: x\nsource: {path: a.json}\nstages: {backfill_names: true}", "the name source 'legacy' reads inputs.legacy_names"),
        ("version: 1\nname: x\nsource: {path: a.json}\nselect: {deletion_requested: true}",
         "p.yaml:4: select.deletion_requested: deletion_requested reads inputs.deletion_requests, which the pipeline does not give"),
        // Written in the output folder: a path was joined to it, and the plan failed at its end.
        ("version: 1\nname: x\nsource: {path: a.json}\noutput: {import_json: /tmp/x.json}",
         "p.yaml:4: output.import_json: '/tmp/x.json' is not a file name: the import file is written in the plan's output folder (--out)"),
        ("version: 1\nname: x\nsource: {path: a.json}\noutput: {import_json: ../x.json}", "is not a file name"),
        // It would change nothing: only an import file is checked for two accounts with one email.
        ("version: 1\nname: x\nsource: {path: a.json}\noutput: {allow_duplicate_emails: true}",
         "p.yaml:4: output.allow_duplicate_emails: concerns the import file, which the pipeline does not write (no output.import_json)"),
        ("version: 1\nname: x\nsource: {path: a.json}\noutput: {import_json: x.json, allow_duplicate_emails: sometimes}", "allow_duplicate_emails"),
    ])
    func rejects(yaml: String, message: String) {
        do {
            _ = try PipelineDefinition.parse(yaml: yaml, file: "p.yaml")
            Issue.record("should be rejected: \(yaml)")
        } catch {
            #expect(error.description.contains(message), "\(error)")
        }
    }

    /// A key or secret written where its file's path belongs is refused, and not printed: the error that the "path"
    /// could not be read printed the key whole.
    @Test(arguments: [
        ("apple: {team_id: T, key_id: K, client_id: C, private_key: \"-----BEGIN PRIVATE KEY-----\\nMIIsEcReT\\n-----END PRIVATE KEY-----\"}",
         "services.apple.private_key"),
        ("google: {credentials: '{\"type\": \"service_account\", \"private_key\": \"MIIsEcReT\"}'}", "services.google.credentials"),
        ("facebook: {app_id: '1', app_secret_file: \"sEcReT\\nline\"}", "services.facebook.app_secret_file"),
        ("webhook: {secret_file: \"-----BEGIN sEcReT\"}", "services.webhook.secret_file"),
    ])
    func aKeyInPlaceOfItsPathIsRefusedUnshown(services: String, key: String) {
        do {
            _ = try PipelineDefinition.parse(yaml: "version: 1\nname: x\nsource: {path: a.json}\nservices: {\(services)}", file: "p.yaml")
            Issue.record("should be rejected: \(services)")
        } catch {
            #expect(error.description.contains("\(key): holds the key itself") && !error.description.contains("sEcReT"), "\(error)")
        }
    }

    /// Each section's problem is given at once, in line order, whatever the order the sections are read in; a section
    /// that asks of another one that has a problem of its own adds nothing.
    @Test func theProblemsOfEverySectionAreGivenTogether() {
        let yaml = """
            version: 1
            name: x
            services:
              facebook: {app_id: 'abc'}
            source: {path: a.json, format: nope}
            select: {disabled: maybe}
            stages: {revoke: true}
            report: {list_limit: -1}
            """
        do {
            _ = try PipelineDefinition.parse(yaml: yaml, file: "p.yaml")
            Issue.record("should be rejected")
        } catch {
            let lines = error.description.split(separator: "\n").map(String.init)
            #expect(lines.count == 5, "\(error)")
            #expect(lines.first?.hasPrefix("p.yaml:4: services.facebook.app_id: is not a Facebook App ID") == true, "\(error)")
            #expect(lines.dropFirst().first?.hasPrefix("  p.yaml:5: source.format: ") == true, "\(error)")
            #expect(lines.dropFirst(2).first?.hasPrefix("  p.yaml:6: select.disabled: expected true or false") == true, "\(error)")
            #expect(lines.dropFirst(3).first?.hasPrefix("  p.yaml:8: report.list_limit: ") == true, "\(error)")
            #expect(lines.last == "  (4 problems)", "\(error)")
            #expect(error.line == 4)
        }
    }

    /// The lines of the error the file gives (one that parses is an issue).
    static func problemLines(_ yaml: String, sourceLocation: SourceLocation = #_sourceLocation) -> [String] {
        do {
            _ = try PipelineDefinition.parse(yaml: yaml, file: "p.yaml")
            Issue.record("should be rejected", sourceLocation: sourceLocation)
            return []
        } catch {
            return error.description.split(separator: "\n").map(String.init)
        }
    }

    /// `select.retention_match` takes any or all, and all needs both retention rules, disabled true.
    @Test func retentionMatchIsReadAndChecked() throws {
        let base = "version: 1\nname: x\nsource: {path: a.json}\nselect:\n"
        let both = try PipelineDefinition.parse(yaml: base + "  disabled: true\n  inactive_for_days: 730\n  retention_match: all\n", file: "p.yaml")
        #expect(both.selection.retentionMatch == .all)
        #expect(try PipelineDefinition.parse(yaml: base + "  disabled: true\n", file: "p.yaml").selection.retentionMatch == .any)
        #expect(Self.problemLines(base + "  inactive_for_days: 730\n  retention_match: all\n") == [
            "p.yaml:6: select.retention_match: all combines disabled and inactive_for_days: give both (an account is then selected when it is "
                + "disabled and unused)"])
        #expect(Self.problemLines(base + "  disabled: false\n  inactive_for_days: 730\n  retention_match: all\n") == [
            "p.yaml:7: select.retention_match: all combines disabled and inactive_for_days, and disabled is false: no account would meet both"])
        #expect(Self.problemLines(base + "  disabled: true\n  retention_match: both\n") == ["p.yaml:6: select.retention_match: 'both' is not one of: any, all"])
    }

    /// A missing version, name or source, or a bad name, is given with the rest of the file's problems; a version this
    /// idpipe does not read ends the reading, with the unknown keys beside it.
    @Test func theTopLevelsProblemsAreGivenWithTheRest() {
        #expect(Self.problemLines("name: bad name!\nsource: {path: a.json, formatt: json}\nselect: {inactive_for_day: 3}\n") == [
            "p.yaml:1: missing key 'version' (this idpipe reads version 1)",
            "  p.yaml:1: name: a name is letters, digits, '-' and '_' (it names the output folder)",
            "  p.yaml:2: source.formatt: unknown key (did you mean 'format'? expected one of: format, mapping, null_values, path, phone_country_code, "
                + "phone_trunk_prefix, timestamp_format, timestamp_zone)",
            "  p.yaml:3: select.inactive_for_day: unknown key (did you mean 'inactive_for_days'? expected one of: deletion_grace_days, "
                + "deletion_requested, disabled, inactive_for_days, protect, providers, retention_match)",
            "  (4 problems)"])
        #expect(Self.problemLines("version: 1\nstages: {delete: {when_not_revocable: shrug}}\n") == [
            "p.yaml:1: missing key 'name'", "  p.yaml:1: missing key 'source'",
            "  p.yaml:2: stages.delete.when_not_revocable: 'shrug' is not one of: delete, keep", "  (3 problems)"])
        #expect(Self.problemLines("version: 2\nname: x\nsource: {path: a.json, formatt: json}\nfoo: 1\n") == [
            "p.yaml:1: version: version 2 is not supported (this idpipe reads version 1)",
            "  p.yaml:4: foo: unknown key (expected one of: apply, description, guards, inputs, name, output, report, select, services, source, "
                + "stages, version)",
            "  (2 problems)"])
    }

    /// Every bad value of a section, a stage or a service is given, not only its first, and a section with one is not
    /// taken: the checks across sections add nothing of their own about it.
    @Test func everyBadValueOfASectionIsGiven() {
        let yaml = """
            version: 1
            name: x
            source: {path: a.json}
            select:
              disabled: maybe
              inactive_for_days: -3
              providers: [apple.com, myspace.com, facebook.com, friendster.com]
            stages:
              normalize: yes please
              delete: {when_not_revocable: shrug, accounts: sometimes, firestore: {paths: ['users/{uid}', users]}}
            services:
              google: {project_id: demo, reads_per_second: 0, max_in_flight: none}
            guards: {max_deletions: many, max_deletion_share: 2}
            """
        #expect(Self.problemLines(yaml) == [
            "p.yaml:5: select.disabled: expected true or false, found 'maybe'",
            "  p.yaml:6: select.inactive_for_days: must be at least 1",
            "  p.yaml:7: select.providers[1]: 'myspace.com' is not a provider id (e.g. apple.com, facebook.com)",
            "  p.yaml:7: select.providers[3]: 'friendster.com' is not a provider id (e.g. apple.com, facebook.com)",
            "  p.yaml:9: stages.normalize: expected true or false, found 'yes please'",
            // On one line, in its order (they are read in another).
            "  p.yaml:10: stages.delete.when_not_revocable: 'shrug' is not one of: delete, keep",
            "  p.yaml:10: stages.delete.accounts: expected true or false, found 'sometimes'",
            "  p.yaml:10: stages.delete.firestore.paths[1]: 'users' has no {uid}: every selected account would delete the same data",
            "  p.yaml:12: services.google.reads_per_second: a rate is a number of requests per second above 0",
            "  p.yaml:12: services.google.max_in_flight: expected a whole number, found 'none'",
            "  p.yaml:13: guards.max_deletions: expected a whole number, found 'many'",
            "  p.yaml:13: guards.max_deletion_share: a share is between 0 and 1 (0.05 is 5 %)",
            "  (12 problems)",
        ])
    }

    /// The same in the parts whose values hang together: the import file's name, a database's url and paths, Apple's
    /// keys, a hash's parameters (only the keys not given are said to be missing; one given is told for its value).
    @Test func everyBadValueOfTheRestIsGiven() {
        let yaml = """
            version: 1
            name: x
            source: {path: a.json}
            output: {import_json: x.csv, allow_duplicate_emails: nope}
            stages:
              import: {password_hash: {algorithm: SCRYPT, rounds: x}}
            services:
              google: {project_id: demo}
              apple: {team_id: [T], key_id: [K], private_key: k.p8, max_in_flight: 0}
              facebook: {app_id: 'secret', requests_per_second: -1}
            """
        #expect(Self.problemLines(yaml) == [
            "p.yaml:4: output.import_json: 'x.csv' does not end in .json: the import file is JSON, and firebase auth:import reads a file by its extension",
            "  p.yaml:4: output.allow_duplicate_emails: expected true or false, found 'nope'",
            "  p.yaml:6: stages.import.password_hash: SCRYPT needs memory_cost (the console's Password hash parameters)",
            "  p.yaml:6: stages.import.password_hash.rounds: expected a whole number, found 'x'",
            "  p.yaml:9: services.apple: missing key 'client_id'",
            "  p.yaml:9: services.apple.team_id: expected a text value",
            "  p.yaml:9: services.apple.key_id: expected a text value",
            "  p.yaml:9: services.apple.max_in_flight: must be at least 1",
            "  p.yaml:10: services.facebook.app_id: is not a Facebook App ID (its digits, as the app dashboard shows it); not shown, as it may be the app secret",
            "  p.yaml:10: services.facebook.requests_per_second: a rate is a number of requests per second above 0",
            "  (10 problems)",
        ])
        // A database's paths are read whatever its url's problem.
        let database = "version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true}\n"
            + "stages: {delete: {realtime_database: {url: 'http://x', paths: [users]}}}\n"
        let problems = Self.problemLines(database)
        #expect(problems.contains { $0.contains("url: 'http://x' is neither") } && problems.contains { $0.contains("paths[0]: 'users' has no {uid}") }, "\(problems)")
    }

    /// A list of thousands of bad items gives its first problems, and how many there are.
    @Test func aLongListOfBadItemsIsCounted() {
        let ids = (0..<3000).map { "p\($0).example" }.joined(separator: ", ")
        let yaml = "version: 1\nname: x\nsource: {path: a.json}\nselect: {disabled: true, providers: [\(ids)]}\n"
        let lines = Self.problemLines(yaml)
        #expect(lines.count == 102 && lines.last == "  (3000 problems)" && lines.dropLast().last == "  … and 2900 more", "\(lines.suffix(3))")
        #expect(lines.dropFirst(99).first?.contains("providers[99]: 'p99.example' is not a provider id") == true, "\(lines.prefix(100).suffix(1))")
    }

    /// Every unknown key is given, each with the key it seems to stand for, and the section it is in is read on: its
    /// other problem is given with it, as are those of the file's other sections and of a version that stopped the file.
    @Test func everyUnknownKeyIsGivenAndItsSectionReadOn() {
        let yaml = """
            version: 1
            name: x
            sourse: {path: a.json}
            source: {path: a.json, formt: csv}
            select: {deletion_requested: true, inactve_for_days: 3, disabled: maybe}
            stages:
              normalise: true
              delete: {when-not-revocable: delete, acounts: false}
            inputs: {deletion_requests: d.csv}
            """
        do {
            _ = try PipelineDefinition.parse(yaml: yaml, file: "p.yaml")
            Issue.record("should be rejected")
        } catch {
            let lines = error.description.split(separator: "\n").map(String.init)
            #expect(lines == [
                "p.yaml:3: sourse: unknown key (did you mean 'source'? expected one of: apply, description, guards, inputs, name, output, "
                    + "report, select, services, source, stages, version)",
                "  p.yaml:4: source.formt: unknown key (did you mean 'format'? expected one of: format, mapping, null_values, path, "
                    + "phone_country_code, phone_trunk_prefix, timestamp_format, timestamp_zone)",
                "  p.yaml:5: select.inactve_for_days: unknown key (did you mean 'inactive_for_days'? expected one of: deletion_grace_days, "
                    + "deletion_requested, disabled, inactive_for_days, protect, providers, retention_match)",
                "  p.yaml:5: select.disabled: expected true or false, found 'maybe'",
                "  p.yaml:7: stages.normalise: unknown key (did you mean 'normalize'? expected one of: backfill_names, delete, detect_relay, "
                    + "import, normalize, revoke)",
                "  p.yaml:8: stages.delete.when-not-revocable: unknown key (did you mean 'when_not_revocable'? expected one of: accounts, "
                    + "data_webhook, firestore, realtime_database, storage, when_not_revocable, when_revocation_fails)",
                "  p.yaml:8: stages.delete.acounts: unknown key (did you mean 'accounts'? expected one of: accounts, data_webhook, firestore, "
                    + "realtime_database, storage, when_not_revocable, when_revocation_fails)",
                "  (7 problems)",
            ], "\(error)")
        }
        // A problem that stops the file (its version) is given with the unknown keys read before it.
        do {
            _ = try PipelineDefinition.parse(yaml: "version: 2\nname: x\nsoruce: {path: a.json}\n", file: "p.yaml")
            Issue.record("should be rejected")
        } catch {
            #expect(error.description.hasPrefix("p.yaml:1: version: version 2 is not supported"), "\(error)")
            #expect(error.description.contains("\n  p.yaml:3: soruce: unknown key (did you mean 'source'?") && error.description.hasSuffix("(2 problems)"),
                    "\(error)")
        }
        // A file whose only problem is an unknown key is refused.
        #expect(throws: PipelineFileError.self) {
            try PipelineDefinition.parse(yaml: "version: 1\nname: x\nsource: {path: a.json}\nstages: {normalize: true, extra: 1}\n", file: "p.yaml")
        }
    }

    /// Each stage and each service is read whatever another's problem: the problems of each are given.
    @Test func theProblemOfEveryStageAndServiceIsGiven() {
        let yaml = """
            version: 1
            name: x
            source: {path: a.json}
            select: {deletion_requested: true}
            stages:
              revoke: {apple: maybe}
              delete: {when_not_revocable: sometimes}
            inputs: {deletion_requests: d.csv}
            services:
              google: {reads_per_second: 0}
              facebook: {app_id: abc}
              firestore: {endpoint: "http://example.com"}
            """
        do {
            _ = try PipelineDefinition.parse(yaml: yaml, file: "p.yaml")
            Issue.record("should be rejected")
        } catch {
            let lines = error.description.split(separator: "\n").map(String.init)
            #expect(lines.map { $0.trimmingCharacters(in: .whitespaces).split(separator: ":").prefix(3).joined(separator: ":") } == [
                "p.yaml:6: stages.revoke.apple", "p.yaml:7: stages.delete.when_not_revocable", "p.yaml:10: services.google.reads_per_second",
                "p.yaml:11: services.facebook.app_id", "p.yaml:12: services.firestore.endpoint", "(5 problems)",
            ], "\(error)")
        }
    }

    /// The key a misspelt one stands for: within two edits (a swap is one), or `-` for `_`; none when two keys are as near.
    @Test(arguments: [
        ("sourse", "source"), ("soucre", "source"), ("Source", "source"), ("when-not-revocable", "when_not_revocable"),
        ("acounts", "accounts"), ("xyz", nil), ("deletion_grace", nil), ("", nil), ("stage", "stages"),
    ] as [(String, String?)])
    func anUnknownKeyIsMatchedToTheNearestAllowedOne(typed: String, expected: String?) {
        let keys: Set = ["source", "stages", "accounts", "when_not_revocable", "when_revocation_fails", "deletion_grace_days", "select"]
        #expect(ConfigNode.nearest(typed, in: keys) == expected, "\(typed)")
        // Two keys as near as each other: neither is offered.
        #expect(ConfigNode.nearest("ab", in: ["ac", "ad"]) == nil)
    }

    /// A secret written where its variable's name goes, or in the app id or Graph version, is refused and not printed
    /// (a review saw `app_secret_env: <the secret>` echoed by "…or the environment variable <the secret>").
    @Test(arguments: [
        ("services: {facebook: {app_id: '1', app_secret_env: 3f9a0c1dsEcReT7e2b4a6f8c}}", "services.facebook.app_secret_env: is not an environment variable's name"),
        ("services: {webhook: {secret_env: 'whsec-sEcReT9'}}", "services.webhook.secret_env: is not an environment variable's name"),
        ("stages: {import: {password_hash: {algorithm: HMAC_SHA256, signer_key_env: 'c2FuZsEcReT=='}}}\noutput: {import_json: out.json}",
         "stages.import.password_hash.signer_key_env: is not an environment variable's name"),
        ("services: {facebook: {app_id: 3f9a0c1dsEcReT7e2b4a6f8c}}", "services.facebook.app_id: is not a Facebook App ID"),
        ("services: {facebook: {app_id: '1', graph_version: v3f9a0c1dsEcReT7e2b4a6f8c}}", "services.facebook.graph_version: must look like v21.0 (a longer value is not shown)"),
    ])
    func aSecretInPlaceOfANameOrIdIsRefusedUnshown(yaml: String, message: String) {
        do {
            _ = try PipelineDefinition.parse(yaml: "version: 1\nname: x\nsource: {path: a.json}\n" + yaml, file: "p.yaml")
            Issue.record("should be rejected: \(yaml)")
        } catch {
            #expect(error.description.contains(message) && !error.description.contains("sEcReT"), "\(error)")
        }
    }

    @Test func readsTheShippedPipelineShape() throws {
        let yaml = """
            version: 1
            name: cleanup
            source: {path: a.csv}
            inputs: {legacy_names: names.csv, deletion_requests: requests.csv}
            select: {deletion_requested: true, inactive_for_days: 30, protect: {uids: [a], email_domains: [Corp.Example, " Bücher.example"]}}
            stages:
              backfill_names: {sources: [legacy, provider:google.com, email-local-part]}
              revoke: {facebook: false}
              delete: {when_not_revocable: delete}
            guards: {max_deletions: 5}
            """
        let pipeline = try PipelineDefinition.parse(yaml: yaml, file: "p.yaml")
        #expect(pipeline.source.format == .authExportCSV)
        #expect(pipeline.selection.inactiveForDays == 30)
        // As the normalize stage writes an email's domain: lower case, Unicode labels in their xn-- form.
        #expect(pipeline.selection.protectedEmailDomains == ["corp.example", "xn--bcher-kva.example"])
        #expect(pipeline.stages.backfillNames == [.legacy, .provider("google.com"), .emailLocalPart])
        #expect(pipeline.stages.revoke == RevokeConfig(apple: true, facebook: false, firebaseSessions: true))
        #expect(pipeline.stages.delete?.whenNotRevocable == .delete)
        #expect(pipeline.guards.maxDeletions == 5)
    }
}

@Suite struct TimestampTests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", 0 as Int64?),
        ("2026-10-03T12:00:00Z", 1_791_028_800_000),
        ("2026-10-03T14:00:00.250+02:00", 1_791_028_800_250),
        ("2026-10-03", 1_790_985_600_000),
        ("2026-13-03T12:00:00Z", nil),
        ("yesterday", nil),
        // Days a month does not have are refused, not rolled into the next month.
        ("2026-02-30T07:01:56Z", nil), ("2026-04-31", nil), ("2026-02-29", nil), ("1900-02-29", nil),
        ("2024-02-29", 1_709_164_800_000), ("2000-02-29", 951_782_400_000), ("2026-12-31", 1_798_675_200_000),
        // An offset of 24 hours or 60 minutes or more is none (`+99:99` was taken, and moved --as-of by four days).
        ("2026-10-03T12:00:00+23:59", 1_790_942_460_000), ("2026-10-03T12:00:00+99:99", nil), ("2026-10-03T12:00:00+24:00", nil),
        ("2026-10-03T12:00:00-05:60", nil),
        // Offsets as PostgreSQL writes a timestamptz (hours alone), and without the colon.
        ("2026-10-03 14:00:00+02", 1_791_028_800_000), ("2026-10-03T14:00:00.250+0200", 1_791_028_800_250),
        ("2026-10-03T07:00:00-05", 1_791_028_800_000), ("2026-10-03T12:00:00+2", nil), ("2026-10-03T12:00:00+02:0", nil),
        ("2026-10-03T12:00:00+020", nil), ("2026-10-03T12:00:00+02:000", nil),
    ])
    func parses(text: String, expected: Int64?) {
        #expect(Timestamp.parseRFC3339(text) == expected)
    }

    /// What is wrong with a time that is none, in words that show none of it: masked in a report, the value shows only its
    /// shape, and `2024-13-01T00:00:00Z` looked like any valid time.
    @Test(arguments: [
        ("2026-10-03T12:00:00Z", nil), ("2026-10-03", nil), ("2026-10-03T14:00:00.250+02:00", nil),
        ("2024-13-01T00:00:00Z", "its month is not 01 to 12"), ("2024-00-01", "its month is not 01 to 12"),
        ("2026-02-29T00:00:00Z", "its day is not one of its month's"), ("2026-04-00", "its day is not one of its month's"),
        ("2026-10-03T24:00:00Z", "its hour is over 23"), ("2026-10-03T12:60:00Z", "its minute is over 59"),
        ("2026-10-03T12:00:61Z", "its second is over 60"), ("2026-10-03T12:00:00+24:00", "its offset from UTC is out of range"),
        // The shape is judged first: a wrong month in a text cut short is named by its shape.
        ("2024-13-01T00:00", Timestamp.Flaw.shape.rawValue),
        // A date and time with no zone (a SQL DATETIME) is named so: `source.timestamp_zone` reads it.
        ("2026-10-03T12:00:00", Timestamp.Flaw.noOffset.rawValue), ("2026-10-03 12:00:00", Timestamp.Flaw.noOffset.rawValue),
        ("2026-10-03 12:00:00.250", Timestamp.Flaw.noOffset.rawValue), ("2026-10-03 12:00", Timestamp.Flaw.shape.rawValue),
        ("2026-10-03 12:00:00Z", nil), ("2026-10-03T12:00:00.Z", Timestamp.Flaw.shape.rawValue),
        ("2026-10-03T12:00:00Zx", Timestamp.Flaw.shape.rawValue), ("1700000000", Timestamp.Flaw.shape.rawValue),
        ("", Timestamp.Flaw.shape.rawValue), ("yesterday", Timestamp.Flaw.shape.rawValue),
    ] as [(String, String?)])
    func namesTheFlaw(text: String, expected: String?) {
        #expect(Timestamp.rfc3339Flaw(text) == expected)
        #expect((Timestamp.parseRFC3339(text) == nil) == (expected != nil))
    }

    /// A table's times without a zone (`source.timestamp_zone`) are read in the one given, a date alone at its midnight;
    /// a time with its own Z or offset keeps it.
    @Test(arguments: [
        ("2026-10-03 12:00:00", "+02:00", 1_791_021_600_000 as Int64?), ("2026-10-03T12:00:00", "UTC", 1_791_028_800_000),
        ("2026-10-03 12:00:00", "utc", 1_791_028_800_000), ("2026-10-03 12:00:00", "Z", 1_791_028_800_000),
        ("2026-10-03 12:00:00.250", "-05:30", 1_791_048_600_250), ("2026-10-03T12:00:00Z", "+02:00", 1_791_028_800_000),
        ("2026-10-03T14:00:00+02:00", "-05:00", 1_791_028_800_000), ("2026-10-03", "+02:00", 1_790_978_400_000),
        ("2026-10-03", "+00:00", 1_790_985_600_000), ("2026-10-03 24:00:00", "+02:00", nil), ("2026-10-03 12:00", "+02:00", nil),
    ] as [(String, String, Int64?)])
    func readsTimesWithoutAZoneInTheTablesZone(text: String, zone: String, expected: Int64?) throws {
        let zone = try #require(TimestampZone(zone))
        #expect(Timestamp.parseRFC3339(text, zone: zone) == expected)
        #expect((Timestamp.rfc3339Flaw(text, zone: zone) == nil) == (expected != nil))
    }

    @Test func aZoneIsUTCOrAnOffset() {
        #expect(["UTC", "utc", "GMT", "Z", "z", "+00:00", "-00:00", "+02:00", "-05:30", "+14:00", "-12:00", "+0200", "+02", "-0530"]
                    .map { TimestampZone($0)?.minutes } == [0, 0, 0, 0, 0, 0, 0, 120, -330, 840, -720, 120, 120, -330])
        #expect(["UTC", "+02:00", "-05:30"].map { TimestampZone($0)!.description } == ["UTC", "UTC+02:00", "UTC-05:30"])
        // No zone is further from UTC than -12:00 and +14:00: +23:59 moved every time by a day.
        for text in ["+1:00", "+010", "+24:00", "+23:59", "+14:30", "-12:30", "+01:60", "01:00", "Europe/Berlin", "CET", "UTC+1", "", "+01:00 ", "Z+01",
                     "+01:00Z", "+"] {
            #expect(TimestampZone(text) == nil, "\(text)")
        }
    }

    @Test(arguments: [
        (1_791_028_800_000, "2026-10-03T12:00:00Z"), (1_791_028_800_999, "2026-10-03T12:00:00Z"), (0, "1970-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59Z"), (951_782_400_000, "2000-02-29T00:00:00Z"), (1_704_067_199_000, "2023-12-31T23:59:59Z"),
        (253_402_300_799_000, "9999-12-31T23:59:59Z"), (253_402_300_800_000, "10000-01-01T00:00:00Z"),
        (-30_610_224_000_000, "1000-01-01T00:00:00Z"), (-30_610_224_001_000, "0999-12-31T23:59:59Z"),
        // Four digits, as RFC 3339 writes a year (year 0 was printed `0-01-01`).
        (-62_167_219_200_000, "0000-01-01T00:00:00Z"),
    ] as [(Int64, String)])
    func formats(millis: Int64, expected: String) {
        #expect(Timestamp.formatRFC3339(millis) == expected)
    }

    /// Formatting then parsing gives the time back, to the second, for any time in the years 1000 to 9999.
    @Test func roundTrips() {
        var random = SeededGenerator(seed: 3)
        for _ in 0..<2000 {
            let millis = Int64.random(in: -30_610_224_000_000..<253_402_300_800_000, using: &random)
            let text = Timestamp.formatRFC3339(millis)
            #expect(Timestamp.parseRFC3339(text) == millis - ((millis % 1000) + 1000) % 1000, "\(text)")
        }
    }
}

@Suite struct MaskingTests {
    @Test func masksPersonalDataUnlessRevealed() {
        let masked = Masking(reveal: false), shown = Masking(reveal: true)
        #expect(masked.email("jane.doe@example.com") == "j•••@example.com")
        #expect(masked.name("Jane Doe") == "J••• D•••")
        #expect(masked.phone("+14155550100") == "+1••••••••00")
        #expect(shown.email("jane.doe@example.com") == "jane.doe@example.com")
        #expect(masked.quotedValues(in: "'jane@@x.com' has more than one @", field: "email") == "'j•••@x.com' has more than one @")
        #expect(masked.quotedValues(in: "'Jane Doe' is too long", field: "displayName") == "'J••• D•••' is too long")
        // The one character a syntax error quotes is no personal data: shown, so the reader sees what was found.
        #expect(masked.quotedValues(in: "expected a key in double quotes, found ',' (line 8)", field: "email")
            == "expected a key in double quotes, found ',' (line 8)")
    }

    /// A value quoted for another field is masked when it has a letter: a column mapped wrongly put a name where a time
    /// belongs, and the reports showed `'Lily Doe' is not an RFC 3339 time` for every row. Short numbers show;
    /// ids are masked only when they look like personal data.
    @Test(arguments: [
        ("'Lily Doe' is not an RFC 3339 time (column \"full_name\")", "lastSignedInAt", "'L••• D•••' is not an RFC 3339 time (column \"full_name\")"),
        ("'lily@example.com' is not true or false (column 27)", "disabled", "'l•••@example.com' is not true or false (column 27)"),
        // Five digits or more may be a phone number or a birth date: the digits hidden (of any script), the shape shown,
        // which tells the reviewer what the column holds. Fewer show.
        ("'2026-13-01' is not a timestamp in epoch milliseconds (column 24)", "createdAt", "'####-##-##' is not a timestamp in epoch milliseconds (column 24)"),
        ("'415 555 0100' is not an RFC 3339 time", "lastSignedInAt", "'### ### ####' is not an RFC 3339 time"),
        ("'2025-02-17 02:38:20' is not an RFC 3339 time", "lastSignedInAt", "'####-##-## ##:##:##' is not an RFC 3339 time"),
        ("'1700000000' is not an RFC 3339 time", "createdAt", "'##########' is not an RFC 3339 time"),
        ("'17.5.90' is not true or false", "disabled", "'##.#.##' is not true or false"),
        ("'٥٥٥١٢٣٤٥٦٧' is not true or false", "disabled", "'##########' is not true or false"),
        ("'５５５１２３４５６７' is not an RFC 3339 time", "createdAt", "'##########' is not an RFC 3339 time"),
        ("'¹²³⁴⁵⁶⁷⁸⁹' is not an RFC 3339 time", "createdAt", "'#########' is not an RFC 3339 time"),
        ("'①②③④⑤-⑥⑦' is not true or false", "disabled", "'#####-##' is not true or false"),
        ("'-12' is not a timestamp in epoch milliseconds", "createdAt", "'-12' is not a timestamp in epoch milliseconds"),
        // A time's T and Z are the format's, not a name's letters: its shape shows.
        ("'2024-01-01T00:00:00Z' is not a timestamp in epoch milliseconds", "createdAt", "'####-##-##T##:##:##Z' is not a timestamp in epoch milliseconds"),
        ("'Tz 1' is not true or false", "disabled", "'T••• 1•••' is not true or false"),
        // Only where a time has them: a T or Z elsewhere is a letter of a name or an address.
        ("'T.Z. 0412345678' is not true or false", "disabled", "'T••• 0•••' is not true or false"),
        ("'tz12345@tz.tz' is not true or false", "disabled", "'t•••@tz.tz' is not true or false"),
        ("'2024-01-01T00:00:00Z ' is not an RFC 3339 time", "createdAt", "'####-##-##T##:##:##Z ' is not an RFC 3339 time"),
        ("'T00:00:00Z' is not an RFC 3339 time", "createdAt", "'T##:##:##Z' is not an RFC 3339 time"),
        ("'2024-01-01T00:00:00 Z' is not an RFC 3339 time", "createdAt", "'####-##-##T##:##:## Z' is not an RFC 3339 time"),
        // The flaw named after the value is no value: it shows.
        ("'2024-13-01T00:00:00Z' is not an RFC 3339 time (column \"signup\"): its month is not 01 to 12", "createdAt",
         "'####-##-##T##:##:##Z' is not an RFC 3339 time (column \"signup\"): its month is not 01 to 12"),
        ("'1234' is not true or false", "disabled", "'1234' is not true or false"),
        ("'+14155550100' is not true or false", "disabled", "'+###########' is not true or false"),
        ("' u1 ' has spaces around it", "localId", "' u1 ' has spaces around it"),
        ("'lily@example.com' has spaces around it", "providerUserInfo[0].rawId", "'l•••@example.com' has spaces around it"),
        // An apostrophe in the value ended it early, and the rest showed in clear; it is quoted with a backslash now.
        (Quoted.value("o'brien.kelly@@example.com") + " has more than one @", "email", "'o•••@example.com' has more than one @"),
        (Quoted.value("Sean O'Neill") + " is not an RFC 3339 time", "createdAt", "'S••• O•••' is not an RFC 3339 time"),
        (Quoted.value("a\\'b") + " is not true or false", "disabled", "'a•••' is not true or false"),
        // A combining mark or joiner beside a quote made one Character of the two, and the value showed in clear.
        ("'\u{301}jane.doe@@example.com' has more than one @", "email", "'\u{301}•••@example.com' has more than one @"),
        ("'jane.doe@@example.com\u{600}' has more than one @", "email", "'j•••@•••' has more than one @"),
        // After an @, what is no domain is masked; and so are later quoted values that are no domain.
        ("'jane.doe@example.com (Jane Doe)' domain 'example.com (jane doe)' contains ' '", "email",
         "'j•••@•••' domain 'e••• (••• d•••' contains ' '"),
        ("'jane@example.com, +1 415 555 0100' is not an RFC 3339 time", "createdAt", "'j•••@•••' is not an RFC 3339 time"),
        ("'jane@example' domain 'example' has no dot", "email", "'j•••@example' domain 'example' has no dot"),
    ])
    func quotedValuesOfOtherFieldsAreMaskedWhenTheyHaveLetters(reason: String, field: String, expected: String) {
        #expect(Masking(reveal: false).quotedValues(in: reason, field: field) == expected)
        #expect(Masking(reveal: true).quotedValues(in: reason, field: field) == reason)
    }

    @Test func quotingEscapesQuotesAndBackslashesOnly() {
        #expect(Quoted.value("jane@x.com") == "'jane@x.com'")
        #expect(Quoted.value("o'brien\\x") == "'o\\'brien\\\\x'")
    }

    /// The id column of a shifted or broken row may hold another field: masked as what it looks like, ids as they are.
    @Test(arguments: [
        ("lily_doe@yahoo.com", "l•••@yahoo.com"), ("Doe", "Doe"), ("Lily Doe", "L••• D•••"), ("山田 太郎", "山••• •••"),
        ("+14155550100", "+1••••••••00"), ("F1sp11jdOyG04kDzjIH8CY9Q4G0i", "F1sp11jdOyG04kDzjIH8CY9Q4G0i"), ("user-42", "user-42"),
        // An id quarantined for the spaces around it stays findable; so does one in another script.
        ("abc123 ", "abc123 "), (" F1sp11jd", " F1sp11jd"), ("山田", "山田"),
    ])
    func quarantinedIdsThatLookLikePersonalDataAreMasked(value: String, expected: String) {
        #expect(Masking(reveal: false).quarantinedId(value) == expected)
        #expect(Masking(reveal: true).quarantinedId(value) == value)
        #expect(Masking(reveal: false).quarantinedId(nil) == nil)
    }

    /// The byte-level path for ASCII, and the one pass over characters for the rest, give the bytes the
    /// Character-based rules give.
    @Test(arguments: ["Jane Doe", "  Jane   Doe ", "x", "a b c", "jane.doe@example.com", "a@b@c.org", "no-at-sign", "@x.com",
                      "Zoë Ångström", "山田太郎", "e\u{301}mile@example.com", "Line\r\nBreak", "tab\tname",
                      // Outside ASCII, the words are still the runs of characters other than " ": a space followed by
                      // a combining mark is one character, and not a space.
                      "  Zoë   Ångström  ", "", "   ", "é\u{301} x", "a \u{301}b c", "👩‍👩‍👧 family", "\r\n x", "山田 太郎", "刘 芳", "김 민준", "Taro 山田"])
    func maskingMatchesTheCharacterRules(value: String) {
        let masked = Masking(reveal: false)
        // Words after the first that start in Han, Hangul or Kana show no character.
        let name = value.split(separator: " ").enumerated().map { index, word in
            (index > 0 && NameFormatting.isEastAsian(String(word.prefix(1))) ? "" : String(word.prefix(1))) + "•••"
        }.joined(separator: " ")
        let email = value.lastIndex(of: "@").map { String(value.prefix(1)) + "•••" + value[$0...] } ?? "•••"
        #expect(Array(masked.name(value).utf8) == Array(name.utf8))
        #expect(Array(masked.email(value).utf8) == Array(email.utf8))
    }
}

@Suite struct KeyedRowsTests {
    /// Set, replace, look up, and remove (the last row moves into the gap and stays reachable by its id).
    @Test func behavesLikeADictionary() {
        var rows: KeyedRows<Int> = ["a": 1, "b": 2]
        rows["c"] = 3
        // Room made with rows already in: the table is placed again, and every row is still found.
        rows.reserveCapacity(1000)
        rows["a"] = 10
        #expect(rows.count == 3)
        #expect([rows["a"], rows["b"], rows["c"], rows["d"]] == [10, 2, 3, nil])
        rows["a"] = nil
        #expect(rows.count == 2)
        #expect([rows["a"], rows["b"], rows["c"]] == [nil, 2, 3])
        rows["c"] = nil
        rows["b"] = nil
        rows["b"] = nil
        #expect(rows.count == 0 && rows["b"] == nil)
        // `modify` on an absent id that leaves nil adds nothing; on a present one, it changes that row.
        let wasAbsent = rows.modify("z") { entry in entry == nil }
        #expect(wasAbsent && rows.count == 0)
        rows["z"] = 1
        rows.modify("z") { $0! += 1 }
        #expect(rows["z"] == 2 && rows.count == 1)
        let built = KeyedRows(["x": 7, "y": 8])
        #expect(built["x"] == 7 && built["y"] == 8 && built.count == 2)
    }

    /// Many rows, as a side input holds them: the same answers as a dictionary through growth, updates and removals,
    /// for ids that are there and ids that are not; with room reserved for fewer rows than are added, and without.
    @Test(arguments: [0, 40])
    func answersAsADictionaryDoes(reserved: Int) {
        var generator = SeededGenerator(seed: 7)
        var rows = KeyedRows<Int>()
        if reserved > 0 { rows.reserveCapacity(reserved) }
        var reference: [String: Int] = [:]
        let ids = (0..<5000).map { "id-\($0 * 7919 % 10007)-" + String(repeating: "x", count: $0 % 30) }
        for step in 0..<20000 {
            let id = ids[Int.random(in: 0..<ids.count, using: &generator)]
            let value = step % 10 == 9 ? nil : step
            if step % 3 == 0 {
                // Through `modify`, which must see what a lookup would and store what it leaves.
                let seen = rows.modify(id) { entry in
                    defer { entry = value }
                    return entry
                }
                #expect(seen == reference[id], "\(id)")
            } else {
                rows[id] = value
            }
            reference[id] = value
        }
        #expect(rows.count == reference.count)
        for id in ids + ["absent", "", "id-1"] { #expect(rows[id] == reference[id], "\(id)") }
    }
}
