import Testing
@testable import IdPipeCore

@Suite struct TallyCounterTests {
    private func outcome(_ name: NameOutcome?, _ selection: SelectionOutcome, _ actions: [PlannedAction]) -> AccountOutcome {
        var outcome = AccountOutcome.empty
        outcome.account = Account(localId: "u", disabled: true, providers: [ProviderLink(providerId: "apple.com", rawId: "r")])
        outcome.name = name
        outcome.selection = selection
        outcome.actions = actions
        return outcome
    }

    /// Each kind of count under its stable name, and `by: -1` (a duplicate id) takes back exactly what was counted;
    /// quarantined rows count by field, whatever the provider index.
    @Test func namesEveryCountAndTakesADuplicateBack() {
        let kept = outcome(.fill(NameUpdate(name: "Jane", source: .provider("facebook.com"))), .notSelected,
                           [PlannedAction(kind: .updateName, state: .planned, detail: "name from provider:facebook.com")])
        let selected = outcome(.noSource("relay address only"), .selected([.deletionRequested, .inactive]), [
            PlannedAction(kind: .revokeApple, state: .notPossible, detail: "", reason: "no stored token"),
            PlannedAction(kind: .deleteAccount, state: .planned, detail: ""),
        ])
        let protected = outcome(.present, .protected([.disabled], why: "listed"), [])
        var counter = TallyCounter()
        for record in [kept, selected, protected, selected] { counter.count(record) }
        counter.count(selected, by: -1)
        counter.count(QuarantineEntry(position: SourcePosition(file: "f.json", line: 9), localId: nil, field: "providerUserInfo[2].rawId", reason: "is missing"))
        // A file cut short, or a comma missing between two accounts, is a quarantine row, but no account read.
        counter.count(QuarantineEntry(position: SourcePosition(file: "f.json", line: 20), localId: nil, field: "file", reason: "the file ends"))
        counter.count(QuarantineEntry(position: SourcePosition(file: "f.json", line: 12), localId: nil, field: "separator", reason: "expected ','"))
        let expected: [String: Int] = [
            "accounts.read": 4, "accounts.processed": 3, "accounts.quarantined": 1, "quarantine.field.providerUserInfo[].rawId": 1, "accounts.disabled": 3, "providers.apple.com": 3,
            "quarantine.field.file": 1, "quarantine.field.separator": 1,
            "names.fill.provider:facebook.com": 1, "names.no-source.relay address only": 1, "names.present": 1,
            "selection.selected": 1, "selection.reason.deletion requested": 1, "selection.reason.inactive": 1, "selection.protected": 1,
            "actions.update-name.planned": 1, "actions.revoke-apple.not-possible": 1, "actions.delete-account.planned": 1, "accounts.deletions-planned": 1,
            "accounts.deletions-planned-unrevoked": 1,
            "not-possible.revoke-apple.no stored token": 1,
        ]
        #expect(counter.tally().counts == expected)
        #expect(counter.tally().quarantineRows == 3)

        var halves = TallyCounter(), other = TallyCounter()
        halves.count(kept)
        other.count(selected)
        other.count(protected)
        other.count(QuarantineEntry(position: SourcePosition(file: "f.json", line: 9), localId: nil, field: "providerUserInfo[0].rawId", reason: "x"))
        other.count(QuarantineEntry(position: SourcePosition(file: "f.json", line: 20), localId: nil, field: "file", reason: "the file ends"))
        other.count(QuarantineEntry(position: SourcePosition(file: "f.json", line: 12), localId: nil, field: "separator", reason: "expected ','"))
        halves.merge(other)
        #expect(halves.tally() == counter.tally())
    }

    /// Each account written to the import file is counted, with what `firebase auth:import` would refuse in it: a link
    /// outside its four providers, or MFA enrolments. Links the file does not hold (password, phone) are not.
    /// Stores keep their tallies as JSON under the `repairs.` names the case names gave before `Repair.key` existed, and
    /// plan.json lists an account's repairs by the same names: a renamed case must not change them. A set rebuilt from
    /// stored bits keeps every repair and drops bits that name none.
    @Test func repairNamesAreTheCaseNamesAndBitsRoundTrip() {
        for repair in Repair.allCases { #expect(repair.key == "\(repair)") }
        var set = RepairSet()
        set.insert(.providerIdCase)
        set.insert(.emailTrimmed)
        #expect(RepairSet(bits: set.bits) == set)
        #expect(RepairSet(bits: set.bits | 1 << 31).all == [.emailTrimmed, .providerIdCase])
    }

    @Test func importedAccountsCountWhatTheFirebaseCLIRefuses() {
        var counter = TallyCounter()
        counter.countImported(Account(localId: "1", providers: [ProviderLink(providerId: "google.com", rawId: "g"), ProviderLink(providerId: "password", rawId: "p")]))
        counter.countImported(Account(localId: "2", providers: [ProviderLink(providerId: "apple.com", rawId: "a"), ProviderLink(providerId: "yahoo.com", rawId: "y")]))
        counter.countImported(Account(localId: "3", mfaInfoJSON: "[]", providers: [ProviderLink(providerId: "apple.com", rawId: "a")]))
        #expect(counter.tally().counts == ["import.accounts": 3, "import.cli-refused": 2, "import.cli-refuses.provider apple.com": 2,
                                           "import.cli-refuses.provider yahoo.com": 1, "import.cli-refuses.mfaInfo": 1])
    }

    /// Accounts with a password hash are counted: their import needs the project's hash parameters (`stages.import`).
    @Test func importedPasswordHashesAreCounted() {
        var counter = TallyCounter()
        counter.countImported(Account(localId: "1", passwordHash: "aGFzaA=="))
        counter.countImported(Account(localId: "2", passwordHash: ""))
        counter.countImported(Account(localId: "3"))
        #expect(counter.tally().counts == ["import.accounts": 3, "import.password-hashes": 1])
    }

    /// Values Identity Toolkit refuses (claims over 1000 characters or not a JSON object, a photo URL over 2048
    /// characters) keep the account out of the import file: they went into it without a word, and its import failed.
    @Test(arguments: [
        (Account(localId: "1", customAttributes: "{\"admin\": true}"), [String]()),
        (Account(localId: "2", customAttributes: "not json"), ["customAttributes not a JSON object"]),
        (Account(localId: "3", customAttributes: "{\"a\":1"), ["customAttributes not a JSON object"]),
        (Account(localId: "4", customAttributes: "[1]"), ["customAttributes not a JSON object"]),
        // JSONSerialization takes a comma before a closing brace or bracket, and a byte order mark; JSON.parse does not.
        (Account(localId: "7", customAttributes: "{\"admin\": true,}"), ["customAttributes not a JSON object"]),
        (Account(localId: "8", customAttributes: "{\"roles\": [\"a\", \"b\" ,\n ]}"), ["customAttributes not a JSON object"]),
        (Account(localId: "10", customAttributes: "\u{FEFF}{\"admin\": true}"), ["customAttributes not a JSON object"]),
        (Account(localId: "9", customAttributes: "{\"note\": \"a,}\", \"q\": \"\\\",]\"}"), [String]()),
        (Account(localId: "5", customAttributes: "{\"a\": \"" + String(repeating: "x", count: 1000) + "\"}"), ["customAttributes longer than 1000 characters"]),
        (Account(localId: "6", photoUrl: "https://x.example/" + String(repeating: "p", count: 2040)), ["photoUrl longer than 2048 characters"]),
    ])
    func valuesTheAPIRefusesKeepTheAccountOutOfTheImportFile(account: Account, refuses: [String]) {
        let refusal = ImportJSON.refusal(account)
        #expect(refusal.map { [$0.what] } ?? [] == refuses)
        #expect(refusal.map { $0.clash.field == String($0.what.prefix { $0 != " " }) } ?? true)
        var counter = TallyCounter()
        if let refusal { counter.countRefusedByTheAPI(refusal.what) }
        var expected: [String: Int] = [:]
        for what in refuses { expected["import.api-refuses." + what] = 1 }
        if !refuses.isEmpty { expected["import.api-refused"] = 1 }
        #expect(counter.tally().counts == expected)
    }
}
