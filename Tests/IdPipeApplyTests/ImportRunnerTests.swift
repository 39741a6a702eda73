import Foundation
import Logging
import IdPipeConnect
import IdPipeTestSupport
import Synchronization
import Testing
@testable import IdPipeApply
@testable import IdPipeCore
@testable import IdPipeStore

/// Apply's import: the import file split into requests of whole accounts, sent in order, and resumed after a stop.
struct ImportRunnerTests {
    /// Brackets, braces and escaped quotes inside strings, nested lists, and a request cut at any count.
    static let file = "{\"users\": [\n"
        + "{\"localId\": \"a\", \"displayName\": \"}{[\\\"]\\\\\", \"lastSignedInAt\": \"1700000000000\"},\n"
        + "{\"localId\": \"b\", \"providerUserInfo\": [{\"providerId\": \"google.com\", \"rawId\": \"]}\"}]},\n"
        + "{\"localId\": \"c\", \"customAttributes\": \"{\\\"role\\\": [1, 2]}\"}]}\n"

    @Test(arguments: [1, 2, 3, 1000])
    func theFileSplitsIntoRequestsOfWholeAccounts(usersPerRequest: Int) throws {
        let path = TemporaryFile.write(Self.file, name: "import-\(usersPerRequest).json")
        let requests = try ImportFileSplitter.requests(path: path, usersPerRequest: usersPerRequest)
        #expect(requests.map(\.users) == Array(repeating: usersPerRequest, count: 3 / usersPerRequest) + (3 % usersPerRequest > 0 ? [3 % usersPerRequest] : []))
        #expect(requests.map(\.id) == Array(1...Int64(requests.count)))
        let reader = try ImportFileReader(path: path)
        let ids = try requests.flatMap { try reader.users(of: $0) }.map { $0["localId"]?.string }
        #expect(ids == ["a", "b", "c"])
        // The export's name of the last sign-in is the API's `lastLoginAt`; the strings come back as written.
        let first = try reader.users(of: requests[0])[0]
        #expect(first["lastLoginAt"]?.string == "1700000000000" && first["lastSignedInAt"] == nil)
        #expect(first["displayName"]?.string == "}{[\"]\\")
    }

    @Test(arguments: [
        ("{\"users\": [{\"localId\": \"a\"}, 7]}", "is not an account object"),
        ("{\"users\": [{\"localId\": \"a\"}, {\"localId\": \"b\"", "ends before its users list does"),
        ("{\"users\": [{\"localId\": \"a\", \"displayName\": \"}]}", "ends before its users list does"),
    ])
    func aFileThatIsNotAnImportFileIsRefused(text: String, message: String) throws {
        let path = TemporaryFile.write(text, name: "bad-import-\(text.utf8.count).json")
        let error = try #require(throws: ImportFileError.self) { try ImportFileSplitter.requests(path: path, usersPerRequest: 2) }
        #expect(error.description.contains(message), "\(error)")
    }

    /// The refused accounts are kept with their uid; a service that stops answering stops the import with its request
    /// left sent, and the next run sends that one again and goes on.
    @Test func refusalsAreNamedAndAStoppedImportGoesOnWhereItStopped() async throws {
        let path = TemporaryFile.write(Self.file, name: "import-runner.json")
        let store = try StateStore()
        #expect(try ImportRunner.prepare(store: store, importFile: path, usersPerRequest: 1).count == 3)
        // Prepared again (a resumed apply), the recorded requests are kept.
        #expect(try ImportRunner.prepare(store: store, importFile: path, usersPerRequest: 2).count == 3)
        let sent = Mutex<[String]>([])
        let failing = ImportRunner(store: store, importFile: path, clock: { 1 }) { users in
            let id = users[0]["localId"]?.string ?? ""
            sent.withLock { $0.append(id) }
            if id == "a" { return [BatchCreateFailure(index: 0, message: "INVALID_PHOTO_URL")] }
            throw ConnectorError.unavailable(service: "identitytoolkit", message: "connection refused")
        }
        let stopped = try await failing.run(shouldStop: { false }) { _, _ in }
        guard case .stopped(let why) = stopped else { Issue.record("\(stopped)"); return }
        #expect(why.contains("request 2 of 3 (accounts 2–2)"), "\(why)")
        #expect(try store.importRequests().map(\.state) == [.done, .sent, .planned])

        let working = ImportRunner(store: store, importFile: path, clock: { 2 }) { users in
            sent.withLock { $0.append(users[0]["localId"]?.string ?? "") }
            return []
        }
        #expect(try await working.run(shouldStop: { false }) { _, _ in } == .completed)
        #expect(sent.withLock { $0 } == ["a", "b", "b", "c"])
        let summary = try #require(try store.importSummary(limit: 10))
        #expect(summary.imported == 2 && summary.refused == 1 && summary.resentRequests == 1 && summary.openRequests == 0)
        #expect(summary.firstRefused == [ImportFailure(position: 0, uid: "a", message: "INVALID_PHOTO_URL")])
    }

    /// With a lookup (`existing_accounts: keep`), the accounts the project has are left out of their request and kept
    /// as they are; a refusal of one sent is named at its place in the request. A request sent again (its answer lost)
    /// is not looked up again, which would find its own accounts: it leaves out what it left out the first time.
    @Test func accountsTheProjectHasAreKeptAndARequestSentAgainLeavesOutTheSame() async throws {
        let path = TemporaryFile.write(Self.file, name: "import-existing.json")
        let store = try StateStore()
        _ = try ImportRunner.prepare(store: store, importFile: path, usersPerRequest: 3)
        let project = Mutex<[JSONValue]>([["localId": "b"]])
        let sent = Mutex<[[String]]>([])
        let lookups = Mutex(0)
        let lookup: ImportRunner.Lookup = { identifiers in
            lookups.withLock { $0 += 1 }
            return Self.found(identifiers, in: project.withLock { $0 })
        }
        let losing = ImportRunner(store: store, importFile: path, clock: { 1 }, lookup: lookup) { users in
            let ids = users.map { $0["localId"]?.string ?? "" }
            sent.withLock { $0.append(ids) }
            // The accounts are made, and the answer is lost.
            project.withLock { $0 += ids.map { ["localId": .string($0)] } }
            throw ConnectorError.unavailable(service: "identitytoolkit", message: "connection reset")
        }
        guard case .stopped = try await losing.run(shouldStop: { false }, progress: { _, _ in }) else { Issue.record("expected a stop"); return }
        #expect(try store.importRequests().map(\.state) == [.sent])
        #expect(try store.keptExisting(request: 1) == [1])
        // Before the request is answered, nothing counts as kept.
        #expect(try store.importSummary(limit: 10)?.keptExisting == 0)

        let answering = ImportRunner(store: store, importFile: path, clock: { 2 }, lookup: lookup) { users in
            sent.withLock { $0.append(users.map { $0["localId"]?.string ?? "" }) }
            // "c", the second account sent, is refused: its place in the request is 2.
            return [BatchCreateFailure(index: 1, message: "INVALID_CLAIMS")]
        }
        #expect(try await answering.run(shouldStop: { false }, progress: { _, _ in }) == .completed)
        #expect(sent.withLock { $0 } == [["a", "c"], ["a", "c"]])
        #expect(lookups.withLock { $0 } == 1)
        let summary = try #require(try store.importSummary(limit: 10))
        #expect(summary.imported == 1 && summary.refused == 1 && summary.keptExisting == 1 && summary.notImported == 2, "\(summary)")
        #expect(summary.firstRefused == [ImportFailure(position: 2, uid: "c", message: "INVALID_CLAIMS")])
        #expect(summary.firstKept == [ImportFailure(position: 1, uid: "b", message: ProjectAccounts.keptMessage)])
    }

    /// A request whose every account the project has sends nothing, and is done.
    @Test func aRequestOfAccountsTheProjectHasSendsNothing() async throws {
        let path = TemporaryFile.write(Self.file, name: "import-all-existing.json")
        let store = try StateStore()
        _ = try ImportRunner.prepare(store: store, importFile: path, usersPerRequest: 2)
        let sent = Mutex<[[String]]>([])
        let runner = ImportRunner(store: store, importFile: path, clock: { 1 }, lookup: { Self.found($0, in: [["localId": "a"], ["localId": "b"]]) }) { users in
            sent.withLock { $0.append(users.map { $0["localId"]?.string ?? "" }) }
            return []
        }
        #expect(try await runner.run(shouldStop: { false }, progress: { _, _ in }) == .completed)
        #expect(sent.withLock { $0 } == [["c"]])
        let summary = try #require(try store.importSummary(limit: 10))
        #expect(summary.imported == 1 && summary.keptExisting == 2 && summary.openRequests == 0, "\(summary)")
    }

    /// The project's accounts with any of the identifiers, as `accounts:lookup` answers (emails compared regardless of case).
    static func found(_ identifiers: [AccountIdentifier], in project: [JSONValue]) -> [JSONValue] {
        project.filter { account in
            identifiers.contains { identifier in
                switch identifier {
                case .uid(let uid): account["localId"]?.string == uid
                case .email(let email): account["email"]?.string?.lowercased() == email.lowercased()
                case .phoneNumber(let number): account["phoneNumber"]?.string == number
                case .federated(let provider, let rawId):
                    account["providerUserInfo"]?.array?.contains { $0["providerId"]?.string == provider && $0["rawId"]?.string == rawId } == true
                }
            }
        }
    }

    /// Another account of the project with an account's email (in any letter case), phone number or federated link
    /// leaves it out, named with that account and the field; its `password` link is not a sign-in of its own, and an
    /// account of the project found by the uid of one account clashes with another. The second round of lookups asks
    /// only for the accounts whose uid is not there. With `checksEmails` off, an email shared is let through.
    @Test(arguments: [true, false])
    func anAccountWhoseEmailPhoneOrSignInTheProjectHasIsLeftOut(checksEmails: Bool) async throws {
        let file = "{\"users\": [\n"
            + "{\"localId\": \"same-uid\", \"email\": \"same@x.example\", \"phoneNumber\": \"+14155550111\"},\n"
            + "{\"localId\": \"by-email\", \"email\": \"Ann@X.example\", \"providerUserInfo\": [{\"providerId\": \"password\", \"rawId\": \"ann@x.example\"}]},\n"
            + "{\"localId\": \"by-phone\", \"phoneNumber\": \"+14155550100\"},\n"
            + "{\"localId\": \"by-apple\", \"email\": \"new@x.example\", \"providerUserInfo\": [{\"providerId\": \"apple.com\", \"rawId\": \"001.abc\"}]},\n"
            + "{\"localId\": \"by-kept\", \"email\": \"SAME@x.example\"},\n"
            // Not asked for: the API would refuse the whole lookup for them.
            + "{\"localId\": \"not-asked\", \"email\": \"no-domain@localhost\", \"phoneNumber\": \"555-0100\"},\n"
            + "{\"localId\": \"fresh\", \"email\": \"fresh@x.example\", \"phoneNumber\": \"+14155550199\", "
            + "\"providerUserInfo\": [{\"providerId\": \"facebook.com\", \"rawId\": \"001.abc\"}, {\"providerId\": \"password\", \"rawId\": \"p@x.example\"}]}]}\n"
        let path = TemporaryFile.write(file, name: "import-clash-\(checksEmails).json")
        let store = try StateStore()
        _ = try ImportRunner.prepare(store: store, importFile: path, usersPerRequest: 1000)
        let project: [JSONValue] = [
            ["localId": "same-uid", "email": "same@x.example"],
            ["localId": "p-email", "email": "ann@x.example"],
            ["localId": "p-phone", "phoneNumber": "+14155550100"],
            ["localId": "p-apple", "providerUserInfo": [["providerId": "apple.com", "rawId": "001.abc"]]],
            // The password link's id is an email, not a sign-in: "fresh"'s password link names it.
            ["localId": "p-password", "providerUserInfo": [["providerId": "password", "rawId": "p@x.example"]]],
        ]
        let asked = Mutex<[[AccountIdentifier]]>([])
        let sent = Mutex<[String]>([])
        let runner = ImportRunner(store: store, importFile: path, clock: { 1 }, lookup: { identifiers in
            asked.withLock { $0.append(identifiers) }
            return Self.found(identifiers, in: project)
        }, checksEmails: checksEmails) { users in
            sent.withLock { $0 += users.map { $0["localId"]?.string ?? "" } }
            return []
        }
        #expect(try await runner.run(shouldStop: { false }, progress: { _, _ in }) == .completed)
        let rounds = asked.withLock { $0 }
        #expect(rounds.count == 2)
        #expect(rounds.first == ["same-uid", "by-email", "by-phone", "by-apple", "by-kept", "not-asked", "fresh"].map { .uid($0) })
        #expect(!(rounds.last ?? []).contains(.email("no-domain@localhost")) && !(rounds.last ?? []).contains(.phoneNumber("555-0100")))
        #expect(!(rounds.last ?? []).contains(.phoneNumber("+14155550111")), "the kept account's number is not asked for")
        // Emails are asked for in lower case, as the project stores them.
        #expect((rounds.last ?? []).contains(.email("ann@x.example")) == checksEmails && !(rounds.last ?? []).contains(.email("Ann@X.example")))
        #expect((rounds.last ?? []).contains(.federated(providerId: "facebook.com", rawId: "001.abc")))
        #expect(!(rounds.last ?? []).contains { if case .federated("password", _) = $0 { true } else { false } })

        let summary = try #require(try store.importSummary(limit: 10))
        #expect(summary.keptExisting == 1 && summary.firstKept.map(\.uid) == ["same-uid"])
        var expected = [("by-phone", "phoneNumber", "p-phone"), ("by-apple", "providerUserInfo (apple.com)", "p-apple")]
        if checksEmails { expected = [("by-email", "email", "p-email")] + expected + [("by-kept", "email", "same-uid")] }
        #expect(summary.firstClashing.map { [$0.uid, $0.clash?.field ?? "", $0.clash?.projectUid ?? ""] } == expected.map { [$0.0, $0.1, $0.2] })
        #expect(summary.firstClashing.allSatisfy { $0.message.hasPrefix("another account of the project has the same ") })
        #expect(summary.clashing == expected.count && summary.imported == 7 - 1 - expected.count && summary.notImported == 1 + expected.count)
        #expect(summary.clashingWhat == (checksEmails ? "email, phone number or sign-in" : "phone number or sign-in"), "\(summary.clashingByField)")
        #expect(summary.clashingByField["providerUserInfo (apple.com)"] == 1 && summary.clashingByField["email"] == (checksEmails ? 2 : nil))
        #expect(sent.withLock { $0 } == (checksEmails ? ["not-asked", "fresh"] : ["by-email", "by-kept", "not-asked", "fresh"]))
    }

    /// Only an email or phone number the API takes in a lookup is asked for (`name@domain.tld`, E.164).
    @Test(arguments: [
        ("ann@x.example", true), ("Ann.B+tag@mail.x.example", true), ("ann@localhost", false), ("@x.example", false),
        ("ann@x.example@y.example", false), ("ann @x.example", false), ("ann@.example", false), ("ann@x.", false),
        (String(repeating: "a", count: 250) + "@x.example", false),
    ])
    func emailsTheLookupTakes(email: String, taken: Bool) {
        #expect(ProjectAccounts.mayLookUp(email: email) == taken, "\(email)")
    }

    @Test(arguments: [("+14155550100", true), ("+44", true), ("+4", false), ("14155550100", false), ("+1 415 555 0100", false),
                      ("+1234567890123456", false), ("+", false)])
    func phoneNumbersTheLookupTakes(number: String, taken: Bool) {
        #expect(ProjectAccounts.mayLookUp(phoneNumber: number) == taken, "\(number)")
    }

    /// A stop asked for between two requests sends no more; the next run sends the rest.
    @Test func aStopSendsNoMoreRequests() async throws {
        let path = TemporaryFile.write(Self.file, name: "import-stop.json")
        let store = try StateStore()
        _ = try ImportRunner.prepare(store: store, importFile: path, usersPerRequest: 1)
        let count = Mutex(0)
        let runner = ImportRunner(store: store, importFile: path, clock: { 1 }) { _ in
            count.withLock { $0 += 1 }
            return []
        }
        #expect(try await runner.run(shouldStop: { count.withLock { $0 } == 1 }) { _, _ in } == .interrupted)
        #expect(try store.importRequests().map(\.state) == [.done, .planned, .planned])
        #expect(try await runner.run(shouldStop: { false }) { _, _ in } == .completed)
        #expect(count.withLock { $0 } == 3)
    }
}

/// The name updates of a migration that imports go in with its accounts.
struct ImportNamesTests {
    /// A session stopped after the import's last answer, before it closed the name updates: the next one closes them
    /// as done by the import, and sends none on its own (`ImportStep` gives the runner an importer with nothing left).
    @Test func nameUpdatesLeftOpenAfterTheLastRequestAreClosedByTheNextSession() async throws {
        let pipeline = try PipelineDefinition.parse(yaml: """
            version: 1
            name: m
            source: {path: x.json}
            stages: {backfill_names: {sources: ["provider:facebook.com"]}, import: true}
            output: {import_json: out.json}
            services: {google: {project_id: p}}
            """, file: "m.yaml")
        let accounts = (0..<3).map { Account(localId: "u\($0)", providers: [ProviderLink(providerId: "facebook.com", rawId: "9\($0)", displayName: "Ann \($0)")]) }
        let store = try StateStore()
        let planner = PlanRunner(pipeline: pipeline, processor: AccountProcessor(pipeline: pipeline, sideInputs: SideInputs(), asOf: 0), store: store,
                                 workers: 1, logger: Logger(label: "test"))
        let record = RunRecord(pipelineName: "m", pipelinePath: "m.yaml", pipelineSHA256: "p", asOf: 0, createdAt: 0, status: .planning,
                               sourcePath: "list", sourceFormat: "list", sourceSize: 3, sideInputSHA256: [:])
        _ = try planner.plan(run: record, openSource: { ListSource(accounts, from: $0) }, fingerprint: FixedFingerprint(), sink: nil, clock: { 0 })
        // Every request answered, the name updates still open.
        let path = TemporaryFile.write(ImportRunnerTests.file, name: "import-names.json")
        _ = try ImportRunner.prepare(store: store, importFile: path, usersPerRequest: 3)
        try await store.finishImport(1, refused: [], at: 1)
        #expect(try store.actionStates()[.updateName]?[.planned] == 3)

        let effects = RecordingEffects()
        let importer = ImportRunner(store: store, importFile: path, clock: { 2 }) { _ in
            Issue.record("a request done is not sent again")
            return []
        }
        let runner = ApplyRunner(store: store, effects: effects, credentials: KeyedRows(), settings: ApplySettings(
            policy: DeletionPolicy(whenNotRevocable: .keep, whenRevocationFails: .keep), deletionCap: nil, accountsInFlight: 2, runKey: "k"),
            clock: { 3 }, monotonic: { 0 }, logger: Logger(label: "test"), importer: importer)
        #expect(try await runner.apply(command: "apply").outcome == .completed(failed: 0))
        #expect(try store.actionStates()[.updateName] == [.done: 3])
        #expect(effects.log.isEmpty, "\(effects.log)")
    }
}
