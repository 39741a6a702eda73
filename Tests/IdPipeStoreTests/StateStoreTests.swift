import Foundation
import GRDB
import IdPipeTestSupport
import Logging
import Testing
@testable import IdPipeCore
@testable import IdPipeStore

/// An in-memory account source: batches of `size` accounts, each a part of its own.
final class ListSource: AccountSource {
    let path = "list"
    let accounts: [Account]
    let size: Int
    var next: Int

    init(_ accounts: [Account], size: Int, from checkpoint: InputCheckpoint) {
        self.accounts = accounts
        self.size = size
        self.next = Int(checkpoint.offset)
    }

    var totalBytes: Int64 { Int64(accounts.count) }

    func nextBatch(records: Int, parts: Int) throws -> (any RawBatch)? {
        guard next < accounts.count else { return nil }
        let end = min(accounts.count, next + size)
        let slice = Array(accounts[next..<end]).enumerated().map { offset, account in
            DecodedRecord.account(account, SourcePosition(file: "list", line: next + offset + 1))
        }
        next = end
        return ListBatch(records: slice, checkpoint: InputCheckpoint(offset: Int64(end), line: end + 1))
    }
}

struct ListBatch: RawBatch {
    /// Where it was read from (for `GuessingListSource`).
    var start = 0
    let records: [DecodedRecord]
    let checkpoint: InputCheckpoint
    var partCount: Int { 2 }
    func decode(part: Int, each: (consuming DecodedRecord) -> Void) {
        let half = records.count / 2
        (part == 0 ? records[..<half] : records[half...]).forEach(each)
    }
}

/// A list source that, like the CSV source, reads each batch from where it guesses the one before ends: `wrongAt` is the
/// batch read from a wrong guess (two accounts too far), or every batch from the second on when `alwaysWrong` (even
/// when it reads again from the right place: a broken source).
final class GuessingListSource: AccountSource {
    let path = "list"
    let accounts: [Account]
    let size: Int
    var next = 0
    var batches = 0
    let wrongAt: Int
    let alwaysWrong: Bool
    /// Bytes the source says it holds beyond its accounts: a broken source that ends before its end.
    let missing: Int
    var readAgainCount = 0

    init(_ accounts: [Account], size: Int, wrongAt: Int, alwaysWrong: Bool = false, missing: Int = 0) {
        self.accounts = accounts
        self.size = size
        self.wrongAt = wrongAt
        self.alwaysWrong = alwaysWrong
        self.missing = missing
    }

    var totalBytes: Int64 { Int64(accounts.count + missing) }

    func nextBatch(records: Int, parts: Int) throws -> (any RawBatch)? {
        batches += 1
        if batches == wrongAt || (alwaysWrong && batches > 1) { next = min(accounts.count, next + 2) }
        guard next < accounts.count else { return nil }
        let end = min(accounts.count, next + size)
        let slice = Array(accounts[next..<end]).enumerated().map { offset, account in
            DecodedRecord.account(account, SourcePosition(file: "list", line: next + offset + 1))
        }
        defer { next = end }
        return ListBatch(start: next, records: slice, checkpoint: InputCheckpoint(offset: Int64(end), line: end + 1))
    }

    func follows(_ next: any RawBatch, after batch: any RawBatch) -> Bool {
        Int64((next as! ListBatch).start) == batch.checkpoint.offset
    }

    func readAgain(after batch: any RawBatch) {
        readAgainCount += 1
        next = Int(batch.checkpoint.offset)
    }
}

final class CountingFingerprint: InputFingerprint {
    func advance(to offset: Int64) throws -> String { "prefix-\(offset)" }
}

@Suite struct StateStoreTests {
    let asOf = Timestamp.parseRFC3339("2026-11-21T00:00:00Z")!

    var pipeline: PipelineDefinition {
        get throws {
            try PipelineDefinition.parse(yaml: """
                version: 1
                name: t
                source: {path: x.json}
                select: {disabled: true}
                stages: {revoke: true, delete: {when_not_revocable: delete}, backfill_names: {sources: [provider:google.com]}}
                """, file: "t.yaml")
        }
    }

    var accounts: [Account] {
        (0..<50).map { index in
            Account(localId: index == 17 ? "u3" : "u\(index)", email: "user\(index)@example.com", disabled: index % 5 == 0,
                    providers: [ProviderLink(providerId: "google.com", rawId: "g\(index)", displayName: "User \(index)")])
        }
    }

    func run(_ store: StateStore, stopAfter: Int? = nil, accounts list: [Account]? = nil) throws -> PlanResult {
        let pipeline = try self.pipeline
        let processor = AccountProcessor(pipeline: pipeline, sideInputs: SideInputs(), asOf: asOf)
        let runner = PlanRunner(pipeline: pipeline, processor: processor, store: store, workers: 2, logger: Logger(label: "test"))
        runner.shouldStop = { batches in stopAfter.map { batches >= $0 } ?? false }
        let record = RunRecord(pipelineName: "t", pipelinePath: "t.yaml", pipelineSHA256: "p", asOf: asOf, createdAt: 0, status: .planning,
                               sourcePath: "list", sourceFormat: "list", sourceSize: 50, sideInputSHA256: [:])
        let all = list ?? accounts
        return try runner.plan(run: record, openSource: { ListSource(all, size: 8, from: $0) }, fingerprint: CountingFingerprint(),
                               sink: nil, clock: { 0 })
    }

    func run(_ store: StateStore, source: GuessingListSource) throws -> PlanResult {
        let pipeline = try self.pipeline
        let processor = AccountProcessor(pipeline: pipeline, sideInputs: SideInputs(), asOf: asOf)
        let runner = PlanRunner(pipeline: pipeline, processor: processor, store: store, workers: 2, logger: Logger(label: "test"))
        let record = RunRecord(pipelineName: "t", pipelinePath: "t.yaml", pipelineSHA256: "p", asOf: asOf, createdAt: 0, status: .planning,
                               sourcePath: "list", sourceFormat: "list", sourceSize: 50, sideInputSHA256: [:])
        return try runner.plan(run: record, openSource: { _ in source }, fingerprint: CountingFingerprint(), sink: nil, clock: { 0 })
    }

    /// A batch read from a wrong guess of where the one before ended is dropped, with the batches read after it, and the
    /// source reads again from where the last merged batch ended: the plan equals one read in order.
    @Test(arguments: [2, 3, 6])
    func aBatchReadFromAWrongGuessIsReadAgain(wrongAt: Int) throws {
        let whole = try StateStore()
        _ = try run(whole)
        let guessed = try StateStore()
        let source = GuessingListSource(accounts, size: 8, wrongAt: wrongAt)
        let result = try run(guessed, source: source)
        #expect(source.readAgainCount == 1)
        #expect(result.run.status == .planned)
        #expect(try snapshot(guessed) == snapshot(whole))
    }

    /// A source that keeps reading from the wrong place stops the plan with an error, rather than reading for ever. (A
    /// few times from one place are allowed: a CSV source reads a chunk twice as long each time a record is longer.)
    @Test func aSourceThatNeverFollowsStopsThePlan() throws {
        let source = GuessingListSource(accounts, size: 8, wrongAt: 0, alwaysWrong: true)
        let error = try #require(throws: PlanError.self) { try run(try StateStore(), source: source) }
        #expect("\(error)".contains("cannot read on after line 9"), "\(error)")
        #expect(source.readAgainCount == 40)
    }

    /// A source that ends before the end of its file (as one set back to the wrong place by `readAgain` could) fails the
    /// plan, naming where reading ended, instead of finishing it with fewer accounts.
    @Test func aPlanThatEndsBeforeTheEndOfItsInputFails() throws {
        let source = GuessingListSource(accounts, size: 8, wrongAt: 0, missing: 10)
        let error = try #require(throws: PlanError.self) { try run(try StateStore(), source: source) }
        #expect("\(error)".contains("reading ended at byte 50 of 60 (line 51)"), "\(error)")
    }

    func snapshot(_ store: StateStore) throws -> String {
        var text = ""
        try store.accountsWithActions(nil, limit: nil) { account, _ in
            text += "\(account.sequence) \(account.uid) \(account.selection) \(account.nameOutcome ?? "-")\n"
        }
        try store.actions(limit: nil) { text += "\($0.sequence) \($0.kind) \($0.state)\n" }
        try store.quarantine(limit: nil) { text += "\($0) \($1.localId ?? "") \($1.reason)\n" }
        return text + "\(try store.tally().counts.sorted { $0.key < $1.key })"
    }

    @Test func aPlanStoppedAndResumedEqualsAnUninterruptedOne() throws {
        let whole = try StateStore()
        let result = try run(whole)
        #expect(result.run.status == .planned)
        #expect(result.tally["accounts.read"] == 50)
        #expect(result.tally["accounts.quarantined"] == 1, "u3 appears twice")

        let interrupted = try StateStore()
        _ = try run(interrupted, stopAfter: 2)
        #expect(try interrupted.loadRun()?.status == .planning)
        #expect(try interrupted.loadCheckpoint()?.input.records == 16)
        let resumed = try run(interrupted)
        #expect(resumed.resumed)
        #expect(try snapshot(interrupted) == snapshot(whole))
    }

    @Test func aFinishedPlanIsNotReadAgain() throws {
        let store = try StateStore()
        _ = try run(store)
        let again = try run(store)
        #expect(again.alreadyPlanned)
        #expect(again.tally["accounts.read"] == 50)
    }

    /// A row quarantined for its own problems whose id an earlier account has: the duplicate is its first problem, the
    /// others after it (fixed, they only met the duplicate in the next plan), and counted as such, across a resume too.
    @Test(arguments: [nil, 1]) func aQuarantinedRowWithAnEarlierAccountsIdIsADuplicateFirst(stopAfter: Int?) throws {
        var list = accounts
        list[17].email = "user17@@example.com"  // u3 again, with an email no one can have
        list[30].email = "user30@@example.com"  // its own id: quarantined for the email alone
        let store = try StateStore()
        if let stopAfter { _ = try run(store, stopAfter: stopAfter, accounts: list) }
        let result = try run(store, accounts: list)
        var rows: [String] = []
        try store.quarantine(limit: nil) { _, entry in
            rows.append(([entry.localId ?? "", entry.field] + entry.otherIssues.map(\.field)).joined(separator: " "))
        }
        #expect(rows == ["u3 localId email", "u30 email"])
        #expect(result.tally["accounts.quarantined"] == 2)
        #expect(result.tally["quarantine.field.localId"] == 1 && result.tally["quarantine.field.email"] == 1, "\(result.tally.counts)")
    }

    @Test func duplicateIdsAreRememberedAcrossAResume() throws {
        let store = try StateStore()
        _ = try run(store, stopAfter: 1)  // u3 (index 3) is in the first batch, its duplicate (index 17) in the third
        let result = try run(store)
        var reasons: [String] = []
        try store.quarantine(limit: nil) { _, entry in reasons.append("\(entry.localId ?? ""): \(entry.reason)") }
        #expect(reasons == ["u3: duplicate: an earlier row has the same id"])
        #expect(result.tally["accounts.quarantined"] == 1)
        // The duplicate was counted as an account by its worker, then taken back: it counts only as quarantined.
        #expect(result.tally["accounts.processed"] == 49)
        #expect(result.tally["providers.google.com"] == 49)
        #expect(result.tally["quarantine.field.localId"] == 1)
        #expect(result.tally.counts.values.allSatisfy { $0 > 0 }, "no total is left at zero or below: \(result.tally.counts)")
    }

    @Test func aChangedPipelineIsRefused() throws {
        let store = try StateStore()
        _ = try run(store, stopAfter: 1)
        var changed = try #require(try store.loadRun())
        changed.pipelineSHA256 = "other"
        #expect(throws: PlanError.self) { try PlanRunner.checkSameRun(try #require(try store.loadRun()), changed) }
    }

    /// An interrupted plan is resumed only by the idpipe that started it, named in the refusal (a store from before the
    /// version was kept has none); a finished one is not planned again, so another version reads it as it is.
    @Test(arguments: ["0.1.0", nil] as [String?])
    func anInterruptedPlanOfAnotherVersionIsNotResumed(version: String?) throws {
        let store = try StateStore()
        _ = try run(store, stopAfter: 1)
        var record = try #require(try store.loadRun())
        #expect(record.idpipeVersion == IdPipeVersion.text)
        record.idpipeVersion = version
        try store.saveRun(record)
        let error = try #require(throws: PlanError.self) { try run(store) }
        let started = version.map { "idpipe \($0)" } ?? "an idpipe before 0.4.0 (which did not record its version)"
        #expect("\(error)" == "cannot resume: the interrupted plan was started by \(started), and this is idpipe \(IdPipeVersion.text); "
            + "its report would mix what each planned; plan again into a new state store (--state, or --out), or finish this one with the "
            + "idpipe that started it")
        #expect(try store.loadCheckpoint()?.input.records == 8, "nothing more was read")

        let finished = try StateStore()
        _ = try run(finished)
        var done = try #require(try finished.loadRun())
        done.idpipeVersion = version
        try finished.saveRun(done)
        let again = try run(finished)
        #expect(again.alreadyPlanned && again.run.idpipeVersion == version)
    }

    /// `status` tells a run going on from one left midway by who holds the store's lock: the holder while a lock is
    /// held, nobody once it is let go (or when there never was a lock file, which asking does not make).
    @Test func theLockSaysWhoHoldsTheStore() throws {
        let path = TemporaryFile.directory("locked-store") + "/state.sqlite"
        #expect(StateLock.holder(statePath: path) == nil)
        #expect(!FileManager.default.fileExists(atPath: path + ".lock"))
        var lock: StateLock? = try StateLock(statePath: path, command: "plan")
        #expect(StateLock.holder(statePath: path) == "idpipe plan (pid \(getpid()))")
        #expect(throws: StoreError.self) { try StateLock(statePath: path, command: "apply") }
        withExtendedLifetime(lock) {}
        lock = nil
        #expect(StateLock.holder(statePath: path) == nil)
        #expect(throws: Never.self) { try StateLock(statePath: path, command: "apply") }
    }

    @Test func checkpointRoundTripsOnRealSQLite() throws {
        let store = try StateStore()
        var tally = Tally()
        tally.add("accounts.read", 3)
        let checkpoint = PlanCheckpoint(input: InputCheckpoint(offset: 42, line: 7, records: 3, state: "export"), inputPrefixSHA256: "abc",
                                        tally: tally, nextSequence: 3, importFileLength: 9)
        var batch = PlanBatch(checkpoint: checkpoint)
        batch.newIdHashes = [1, 2, UInt64.max]
        try store.commit(batch)
        var next = PlanBatch(checkpoint: checkpoint)
        next.newIdHashes = [0, 7]
        try store.commit(next)
        let loaded = try #require(try store.loadCheckpoint())
        #expect(loaded.input == checkpoint.input)
        #expect(loaded.tally == tally)
        var seen: [[UInt64]] = []
        try store.forEachSeenIdHashes { seen.append($0) }
        #expect(seen == [[1, 2, UInt64.max], [0, 7]])
        #expect(try store.seenIdCount() == 5)
        #expect(loaded.importFileLength == 9)
    }

    /// The seen-id blobs of stores already written keep their meaning: little-endian 8-byte words, in order.
    @Test func idHashBlobsAreLittleEndianWords() {
        let hashes: [UInt64] = [0x0102_0304_0506_0708, 0, UInt64.max]
        let blob = IdHashes.encode(hashes)
        #expect(Array(blob) == [8, 7, 6, 5, 4, 3, 2, 1] + Array(repeating: 0, count: 8) + Array(repeating: 0xFF, count: 8))
        #expect(IdHashes.decode(blob) == hashes)
        #expect(IdHashes.encode([]).isEmpty)
    }

    /// Rows are bound through SQLite's C API: an empty text stays empty (not NULL), NULL stays NULL, and text outside
    /// ASCII is stored as it is.
    @Test func accountRowsKeepTextAsGiven() throws {
        let store = try StateStore()
        let processor = AccountProcessor(pipeline: try pipeline, sideInputs: SideInputs(), asOf: asOf)
        let account = Account(localId: "ü-1", email: "josé@bücher.example", displayName: "", disabled: true,
                              providers: [ProviderLink(providerId: "google.com", rawId: "g1", displayName: "山田太郎")])
        guard case .account(var outcome) = processor.process(account, position: SourcePosition(file: "f.json", line: 3), sequence: 0) else {
            Issue.record("not processed")
            return
        }
        outcome.sequence = 5
        // As stored, whatever normalizing made of them.
        outcome.account.email = "josé@bücher.example"
        outcome.account.displayName = ""
        var batch = PlanBatch(checkpoint: PlanCheckpoint(input: InputCheckpoint(offset: 1, line: 2, records: 1, state: nil), inputPrefixSHA256: "x",
                                                         tally: Tally(), nextSequence: 6, importFileLength: 0))
        batch.accounts = [KeptAccount(outcome)]
        try store.commit(batch)
        var rows: [ReportAccount] = []
        var actions: [ReportAction] = []
        try store.accountsWithActions(nil, limit: nil) { rows.append($0); actions.append(contentsOf: $1) }
        let row = try #require(rows.first)
        #expect(rows.count == 1)
        #expect([row.uid, row.file, row.email, row.displayName, row.providers] == ["ü-1", "f.json", "josé@bücher.example", "", "google.com"])
        #expect(row.sequence == 5 && row.line == 3 && row.phone == nil && row.deletionRequest == nil)
        #expect(actions.map(\.kind) == outcome.actions.map(\.kind.rawValue))
        #expect(actions.allSatisfy { $0.sequence == 5 && $0.uid == "ü-1" })
    }

    /// plan.md's lists, gathered as a plan commits its batches, hold what the store's conditions select: the same
    /// counts, and the same first accounts in input order, with the same actions. Values at the edges of each
    /// condition: an empty consent text or request (not NULL), "fill from" in other cases and without its space,
    /// selections that only start alike.
    @Test func gatheredListsMatchTheStoresConditions() throws {
        let store = try StateStore()
        let processor = AccountProcessor(pipeline: try pipeline, sideInputs: SideInputs(), asOf: asOf)
        guard case .account(let outcome) = processor.process(Account(localId: "base", email: "a@example.com"),
                                                             position: SourcePosition(file: "f.json", line: 1), sequence: 0) else {
            Issue.record("not processed")
            return
        }
        let consents: [String?] = [nil, "", "phone number"]
        let names: [String?] = [nil, "present", "fill from legacy", "Fill From provider:facebook.com", "FILL FROM x", "fill fromlegacy", "fill"]
        let selections = ["not-selected", "selected", "protected", "selected-not", "Selected", "filtered-by-provider", "filtered-by-providers"]
        let requests: [String?] = [nil, "", "app at 2026-11-20T00:00:00Z"]
        var kept: [KeptAccount] = []
        for consent in consents {
            for name in names {
                for (index, selection) in selections.enumerated() {
                    var account = KeptAccount(outcome)
                    account.row.uid = "u\(kept.count)"
                    account.row.consentReview = consent
                    account.row.nameOutcome = name
                    account.row.selection = selection
                    account.row.deletionRequest = requests[(index + kept.count / selections.count) % requests.count]
                    // Every other account was repaired in a migration.
                    if kept.count % 2 == 0 { account.row.repairs.insert(kept.count % 4 == 0 ? .emailTrimmed : .phoneReformatted) }
                    // Every third account has a name update and a deletion, so the lists' actions are told apart.
                    if kept.count % 3 == 1 {
                        account.actions = [
                            ReportAction(sequence: 0, uid: account.row.uid, kind: ActionKind.updateName.rawValue, state: "planned", detail: "d",
                                         reason: nil, value: "Name \(kept.count)", attempts: 0),
                            ReportAction(sequence: 0, uid: account.row.uid, kind: ActionKind.deleteAccount.rawValue, state: "blocked", detail: "d",
                                         reason: "why \(kept.count)", value: nil, attempts: 0),
                        ]
                        account.steps = [ActionKind.updateName.order, ActionKind.deleteAccount.order]
                    }
                    account.number(Int64(kept.count))
                    kept.append(account)
                }
            }
        }
        var batch = PlanBatch(checkpoint: PlanCheckpoint(input: InputCheckpoint(offset: 1, line: 2, records: Int64(kept.count), state: nil), inputPrefixSHA256: "x",
                                                         tally: Tally(), nextSequence: Int64(kept.count), importFileLength: 0))
        batch.accounts = kept
        try store.commit(batch)
        var lists = GatheredLists(limit: 4)
        for account in kept { lists.add(account.row, actions: account.actions) }
        let gathered = GatheredListsSource(base: store, lists: lists)
        #expect(try gathered.counts() == store.counts())
        #expect(try store.counts().values.allSatisfy { $0 > 0 })
        var listedActions = false
        for list in AccountList.allCases {
            for limit in [0, 3, 4] {
                var fromStore: [String] = [], fromPlan: [String] = []
                let described = { (account: ReportAccount, actions: [ReportAction]) in
                    "\(account.uid) " + actions.map { "\($0.sequence) \($0.kind) \($0.state) \($0.value ?? "-") \($0.reason ?? "-")" }.joined(separator: ", ")
                }
                try store.accountsWithActions(list, limit: limit) { fromStore.append(described($0, $1)) }
                try gathered.accountsWithActions(list, limit: limit) { fromPlan.append(described($0, $1)) }
                #expect(fromPlan == fromStore, "\(list), limit \(limit)")
                #expect(fromStore.count == limit, "\(list), limit \(limit)")
                listedActions = listedActions || fromStore.contains { $0.contains("blocked - why") }
            }
        }
        #expect(listedActions)
    }

    /// Text is copied into the insert's own row buffer for binding; a value longer than that buffer is bound as a copy
    /// of its own. Either way every row reads back as written, the rows before and after a long one included.
    @Test func longAndShortTextRowsReadBackWhole() throws {
        let store = try StateStore()
        let processor = AccountProcessor(pipeline: try pipeline, sideInputs: SideInputs(), asOf: asOf)
        let long = String(repeating: "Zoë ", count: 20_000)
        let names = ["Ann", long, "", "山田太郎", long + "!"]
        var batch = PlanBatch(checkpoint: PlanCheckpoint(input: InputCheckpoint(offset: 1, line: 2, records: 5, state: nil), inputPrefixSHA256: "x",
                                                         tally: Tally(), nextSequence: 5, importFileLength: 0))
        for (index, name) in names.enumerated() {
            let account = Account(localId: "u\(index)", email: "u\(index)@example.com", displayName: "Ann", disabled: true,
                                  providers: [ProviderLink(providerId: "google.com", rawId: "g\(index)")])
            guard case .account(var outcome) = processor.process(account, position: SourcePosition(file: "f.json", line: index + 1), sequence: 0) else {
                Issue.record("not processed")
                return
            }
            outcome.sequence = Int64(index)
            outcome.account.displayName = name  // as stored, whatever processing made of it
            batch.accounts.append(KeptAccount(outcome))
        }
        try store.commit(batch)
        var rows: [ReportAccount] = []
        try store.accountsWithActions(nil, limit: nil) { account, _ in rows.append(account) }
        #expect(rows.map(\.displayName) == names)
        #expect(rows.map(\.uid) == (0..<5).map { "u\($0)" })
        #expect(rows.map(\.email) == (0..<5).map { "u\($0)@example.com" })
    }

    /// A migration's repaired account keeps its repairs in the store: the report's list finds it, and reads back the
    /// same set; an account kept without them (any other pipeline) is in no such list.
    @Test func repairsAreKeptForTheRepairedList() throws {
        let store = try StateStore()
        var repairs = RepairSet()
        repairs.insert(.emailDomainIDNA)
        repairs.insert(.phoneReformatted)
        func kept(_ uid: String, _ sequence: Int64, withRepairs: Bool) -> KeptAccount {
            var outcome = AccountOutcome(sequence: sequence, position: SourcePosition(file: "f", line: Int(sequence) + 1), account: Account(localId: uid),
                                         repairs: repairs, relay: nil, name: nil, selection: .notSelected, deletionRequest: nil, actions: [])
            outcome.sequence = sequence
            return KeptAccount(outcome, withRepairs: withRepairs)
        }
        var batch = PlanBatch(checkpoint: PlanCheckpoint(input: InputCheckpoint(offset: 2, line: 1, records: 2, state: nil), inputPrefixSHA256: "x",
                                                         tally: Tally(), nextSequence: 2, importFileLength: 0))
        batch.accounts = [kept("a", 0, withRepairs: false), kept("b", 1, withRepairs: true)]
        try store.commit(batch)
        #expect(try store.counts()[.repaired] == 1)
        var listed: [(String, RepairSet)] = []
        try store.accountsWithActions(.repaired, limit: 10) { account, _ in listed.append((account.uid, account.repairs)) }
        #expect(listed.map(\.0) == ["b"])
        #expect(listed.first?.1 == repairs)
        #expect(listed.first?.1.all == [.emailDomainIDNA, .phoneReformatted])
        // The list's condition in Swift (for lists gathered as the plan goes) agrees with the store's.
        var all: [ReportAccount] = []
        try store.accountsWithActions(nil, limit: nil) { account, _ in all.append(account) }
        #expect(all.map { AccountList.repaired.holds($0) } == [false, true])
    }

    /// The reports read actions in row-id order and expect (seq, step): an outcome whose actions come out of order is
    /// still stored, and read back, in step order, account after account and batch after batch.
    @Test func actionsAreReadInSequenceAndStepOrder() throws {
        struct NotProcessed: Error { var uid: String }
        let store = try StateStore()
        let processor = AccountProcessor(pipeline: try pipeline, sideInputs: SideInputs(), asOf: asOf)
        func outcome(_ uid: String, _ sequence: Int64, _ kinds: [ActionKind]) throws -> AccountOutcome {
            guard case .account(var outcome) = processor.process(Account(localId: uid), position: SourcePosition(file: "f", line: 1), sequence: 0) else {
                throw NotProcessed(uid: uid)
            }
            outcome.sequence = sequence
            outcome.actions = kinds.map { PlannedAction(kind: $0, state: .planned, detail: $0.rawValue) }
            return outcome
        }
        func batch(_ outcomes: [AccountOutcome], next: Int64) -> PlanBatch {
            var batch = PlanBatch(checkpoint: PlanCheckpoint(input: InputCheckpoint(offset: next, line: 1, records: next, state: nil), inputPrefixSHA256: "x",
                                                             tally: Tally(), nextSequence: next, importFileLength: 0))
            batch.accounts = outcomes.map { KeptAccount($0) }
            return batch
        }
        try store.commit(batch([try outcome("a", 0, [.deleteAccount, .revokeSessions, .revokeApple]), try outcome("b", 2, [.revokeFacebook])], next: 3))
        try store.commit(batch([try outcome("c", 3, [.deleteAccount, .deleteData, .revokeFacebook, .revokeApple])], next: 4))
        let expected = ["0 revoke-apple", "0 revoke-sessions", "0 delete-account", "2 revoke-facebook",
                        "3 revoke-apple", "3 revoke-facebook", "3 delete-data", "3 delete-account"]
        var listed: [String] = []
        try store.actions(limit: nil) { listed.append("\($0.sequence) \($0.kind)") }
        #expect(listed == expected)
        var merged: [String] = []
        try store.accountsWithActions(nil, limit: nil) { account, actions in merged += actions.map { "\(account.sequence) \($0.kind)" } }
        #expect(merged == expected)
    }

    /// An action the merge cannot place fails the report as a damaged store instead of being left out of it: one out
    /// of sequence order, met before a later account's actions, and one after every account (no account has its
    /// number: only a store written with foreign keys off can hold it).
    @Test(arguments: [true, false])
    func actionOutOfOrderIsAnError(outOfOrder: Bool) throws {
        let store = try StateStore()
        let processor = AccountProcessor(pipeline: try pipeline, sideInputs: SideInputs(), asOf: asOf)
        func commit(_ accounts: [(String, Int64)]) throws {
            let next = accounts.last!.1 + 1
            var batch = PlanBatch(checkpoint: PlanCheckpoint(input: InputCheckpoint(offset: next, line: 1, records: next, state: nil), inputPrefixSHA256: "x",
                                                             tally: Tally(), nextSequence: next, importFileLength: 0))
            for (uid, sequence) in accounts {
                guard case .account(var outcome) = processor.process(Account(localId: uid), position: SourcePosition(file: "f", line: 1), sequence: 0) else {
                    Issue.record("not processed")
                    return
                }
                outcome.sequence = sequence
                outcome.actions = [PlannedAction(kind: .deleteAccount, state: .planned, detail: "x")]
                batch.accounts.append(KeptAccount(outcome))
            }
            try store.commit(batch)
        }
        try commit([("a", 0), ("c", 2)])
        var merged = 0
        try store.accountsWithActions(nil, limit: nil) { _, actions in merged += actions.count }
        #expect(merged == 2)
        if outOfOrder {
            // A second action of account a, written after account c's, and account e's after it.
            try store.queue.write { db in
                try db.execute(sql: "INSERT INTO action (seq, uid, kind, step, state, detail, updated_at) VALUES (0, 'a', 'revoke-apple', 1, 'planned', 'x', 0)")
            }
            try commit([("e", 4)])
        } else {
            try store.queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA foreign_keys = OFF")
                try db.execute(sql: "INSERT INTO action (seq, uid, kind, step, state, detail, updated_at) VALUES (9, 'z', 'revoke-apple', 1, 'planned', 'x', 0)")
                try db.execute(sql: "PRAGMA foreign_keys = ON")
            }
        }
        #expect(throws: StoreError.self) { try store.accountsWithActions(nil, limit: nil) { _, _ in } }
    }

    /// How SQLite runs a query, one line a step.
    static func queryPlan(_ store: StateStore, _ sql: String) throws -> [String] {
        try store.queue.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: [0, 10]).map { $0["detail"] as String }
        }
    }

    /// Apply's pages of accounts with open actions follow the (seq, kind) index (see migration v7-no-state-index).
    @Test func openActionsArePagedAlongTheSequence() throws {
        let plan = try Self.queryPlan(try StateStore(), StateStore.pendingSequencesSQL)
        #expect(plan.contains { $0.contains("INDEX sqlite_autoindex_action_1 (seq>?)") }, "\(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
    }

    /// A store written before migration v7 loses its (state, kind) index when it is opened again.
    @Test func anOlderStoreLosesTheStateIndex() throws {
        let path = TemporaryFile.directory("older-store") + "/state.sqlite"
        let indexes = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'action_state'"
        do {
            let old = try StateStore(path: path)
            try old.queue.write { db in
                try db.execute(sql: "CREATE INDEX action_state ON action (state, kind)")
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v7-no-state-index'")
            }
            #expect(try old.queue.read { db in try Int.fetchOne(db, sql: indexes) } == 1)
            // What the index did to the query, so the check below can tell.
            #expect(try Self.queryPlan(old, StateStore.pendingSequencesSQL).contains { $0.contains("TEMP B-TREE") })
        }
        let reopened = try StateStore(path: path)
        #expect(try reopened.queue.read { db in try Int.fetchOne(db, sql: indexes) } == 0)
        #expect(!(try Self.queryPlan(reopened, StateStore.pendingSequencesSQL)).contains { $0.contains("TEMP B-TREE") })
    }

    /// A store of idpipe 0.6.0 (before migration v14) gains the columns of an account left out for another account of
    /// the project: its accounts kept by uid count as kept, none as left out for a shared email, phone number or sign-in.
    @Test func anOlderStoresKeptAccountsStayKept() async throws {
        let path = TemporaryFile.directory("store-v13") + "/state.sqlite"
        do {
            let old = try StateStore(path: path)
            try old.planImportRequests([ImportRequest(id: 1, start: 0, end: 10, users: 2)])
            try await old.markImportSent(1, at: 1, kept: [ImportFailure(position: 1, uid: "b", message: "its uid is in the project already")])
            try await old.finishImport(1, refused: [], at: 2)
            try await old.queue.write { db in
                try db.execute(sql: "ALTER TABLE import_failure DROP COLUMN clash_uid; ALTER TABLE import_failure DROP COLUMN clash_field")
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v14-import-clash'")
            }
        }
        let reopened = try StateStore(path: path)
        let summary = try #require(try reopened.importSummary(limit: 5))
        #expect(summary.keptExisting == 1 && summary.clashing == 0 && summary.imported == 1, "\(summary)")
        #expect(summary.firstKept == [ImportFailure(position: 1, uid: "b", message: "its uid is in the project already")])
        // The new columns are written and read back.
        try await reopened.markImportSent(1, at: 3, kept: [ImportFailure(position: 0, uid: "a", message: "m", clash: ImportClash(field: "email", projectUid: "p"))])
        try await reopened.finishImport(1, refused: [], at: 4)
        let after = try #require(try reopened.importSummary(limit: 5))
        #expect(after.keptExisting == 1 && after.clashing == 1 && after.imported == 0, "\(after)")
        #expect(after.firstClashing == [ImportFailure(position: 0, uid: "a", message: "m", clash: ImportClash(field: "email", projectUid: "p"))])
    }

    /// Syncing the store keeps the process's locks on it: the syncs went through descriptors that were closed, which
    /// dropped SQLite's locks, and another process that opened the store while apply ran (`status`, `report`, a refused
    /// `resume`) took itself for the last user and removed the WAL as it closed. Apply wrote on into the removed file,
    /// and a resume after a kill sent done actions again. Another process (Python's sqlite3) opens and closes the store
    /// here after each sync: the WAL stays, and what is written after is seen by it.
    @Test func syncingKeepsTheStoreLockedForOtherProcesses() throws {
        let path = TemporaryFile.directory("synced-store") + "/state.sqlite"
        let store = try StateStore(path: path)
        _ = try run(store)
        func otherProcessReadsStatus() throws -> String {
            let (code, output) = try runProgram("/usr/bin/env", ["python3", "-c", """
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1]); print(c.execute("SELECT record FROM run").fetchone()[0]); c.close()
                """, path])
            #expect(code == 0, "\(output)")
            return output
        }
        /// After another process opened and closed the file, the WAL is still there and what `store` writes reaches it.
        func expectLocksKept(by store: StateStore, writing status: RunStatus) throws {
            _ = try otherProcessReadsStatus()
            #expect(FileManager.default.fileExists(atPath: path + "-wal"), "the WAL was removed under the open store")
            var run = try #require(try store.loadRun())
            run.status = status
            try store.saveRun(run)
            #expect(try otherProcessReadsStatus().contains("\"\(status.rawValue)\""))
        }
        for _ in 0..<2 {
            try store.makeDurable()
            try expectLocksKept(by: store, writing: .applying)
            var run = try #require(try store.loadRun())
            run.status = .planned
            try store.saveRun(run)
        }
        // A store that synced and closed while another of the same file stays open (`run`: the plan's, then apply's;
        // the path written another way) leaves that one's locks in place.
        let folder = (path as NSString).deletingLastPathComponent
        let other = try StateStore(path: folder + "/./state.sqlite")
        do {
            let first = try StateStore(path: path)
            try first.makeDurable()
        }
        try expectLocksKept(by: other, writing: .applied)
    }

    /// The plan writes its store without syncing it; apply first syncs and checks it, and refuses a store damaged since
    /// (here: a page of the account table overwritten, as a failing disk or another program could leave it).
    @Test func aStoreDamagedAfterThePlanIsRefusedBeforeApply() throws {
        let path = TemporaryFile.directory("damaged-store") + "/state.sqlite"
        let synchronous = "PRAGMA synchronous"
        do {
            let planned = try StateStore(path: path)
            #expect(try planned.queue.read { db in try Int.fetchOne(db, sql: synchronous) } == 1)
            try planned.deferSyncing()
            #expect(try planned.queue.read { db in try Int.fetchOne(db, sql: synchronous) } == 0)
            _ = try run(planned)
        }
        let whole = try StateStore(path: path)
        #expect(try whole.queue.read { db in try Int.fetchOne(db, sql: synchronous) } == 1)
        #expect(FileManager.default.fileExists(atPath: path + ".unsynced"))
        try whole.makeDurable()
        #expect(!FileManager.default.fileExists(atPath: path + ".unsynced"))
        #expect(try whole.loadRun()?.status == .planned)

        try damageTable("account", inDatabase: path)
        let damaged = try StateStore(path: path)
        #expect {
            try damaged.makeDurable()
        } throws: { error in
            "\(error)".contains("the state store is damaged: \(path): ") && "\(error)".hasSuffix("plan again into a new state store")
        }
    }

    /// A plan's unsynced writes are covered by a marker naming the system's boot, written before them. A marker of an
    /// earlier boot (a power loss or a crash of the system came before the store was synced) makes every open refuse
    /// the store, until `discardUnsyncedPlan` removes it for the plan to be made again; a store that was synced, or
    /// never deferred, has no marker.
    @Test func aStoreARestartOfTheSystemMayHaveCutShortIsRefusedUntilDiscarded() throws {
        let folder = TemporaryFile.directory("unsynced-store")
        let path = folder + "/state.sqlite"
        let marker = path + ".unsynced"
        let boot = try #require(UnsyncedMarker.currentBoot())
        #expect(boot == (try systemBootId()))
        do {
            let synced = try StateStore(path: path)
            _ = try run(synced)
            #expect(!FileManager.default.fileExists(atPath: marker))
            try synced.deferSyncing()
        }
        let text = try String(contentsOfFile: marker, encoding: .utf8)
        let inode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int)
        #expect(text.hasPrefix("\(boot) \(inode)\n") && text.contains(path), "\(text)")
        // The same boot: the store opens, both ways.
        #expect(try StateStore(path: path).loadRun()?.status == .planned)
        #expect(try StateStore(readingFrom: path).loadRun()?.status == .planned)
        #expect(try StateStore.discardUnsyncedPlan(at: path) == false)

        // A copy of the store, with its marker, taken before any restart and opened elsewhere: it was read whole.
        let copy = TemporaryFile.directory("unsynced-store-copy") + "/state.sqlite"
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try fromAnEarlierBoot(text).write(toFile: copy + ".unsynced", atomically: false, encoding: .utf8)
        #expect(try StateStore(path: copy).loadRun()?.status == .planned)

        // An earlier boot, and markers that cannot be read.
        for earlier in [try fromAnEarlierBoot(text), "", "\u{0}\u{1}", "\(boot)\n"] {
            try earlier.write(toFile: marker, atomically: false, encoding: .utf8)
            for open in [{ _ = try StateStore(path: path) }, { _ = try StateStore(readingFrom: path) }] as [() throws -> Void] {
                #expect {
                    try open()
                } throws: { error in
                    "\(error)".hasPrefix("the state store \(path) holds a plan that was not yet on the disk when the system restarted")
                }
            }
        }
        #expect(try StateStore.discardUnsyncedPlan(at: path))
        let left = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(left.isEmpty, "\(left)")
        #expect(try StateStore.discardUnsyncedPlan(at: path) == false)
        let fresh = try StateStore(path: path)
        #expect(try fresh.loadRun() == nil)
        try fresh.deferSyncing()
        #expect(FileManager.default.fileExists(atPath: marker))
        try fresh.makeDurable()
        #expect(!FileManager.default.fileExists(atPath: marker))
        // The whole plan syncs its store and drops the marker itself.
        try fresh.deferSyncing()
        _ = try run(fresh)
        #expect(try fresh.queue.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 0)
        try fresh.syncDeferred()
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(try fresh.queue.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 1)

        // A marker of an earlier boot beside a store apply has worked on is stale (apply removes the marker before it
        // sends anything: another store took the marked one's place): the store opens, and is never removed.
        var applying = try #require(try fresh.loadRun())
        applying.status = .applying
        try fresh.saveRun(applying)
        try fresh.deferSyncing()
        let stale = try fromAnEarlierBoot(try String(contentsOfFile: marker, encoding: .utf8))
        try stale.write(toFile: marker, atomically: false, encoding: .utf8)
        #expect(try StateStore(path: path).loadRun()?.status == .applying)
        #expect(try StateStore.discardUnsyncedPlan(at: path) == false)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    /// A file that is no database (an export given as `--state`) is named as such, by the store and by the lock, which
    /// makes no lock file beside it; the file is left as it was.
    @Test func aFileThatIsNoDatabaseIsRefusedAsSuch() throws {
        let path = TemporaryFile.write("{\"users\": [\n]}", name: "accounts.json")
        let expected = "\(path) is not an idpipe state store (not an SQLite database): give --state the state.sqlite a plan wrote"
        #expect { try StateStore(path: path) } throws: { "\($0)" == expected }
        #expect { try StateStore(readingFrom: path) } throws: { "\($0)" == expected }
        #expect { try StateLock(statePath: path, command: "apply") } throws: { "\($0)" == expected }
        #expect(!FileManager.default.fileExists(atPath: path + ".lock"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\"users\": [\n]}")
    }

    /// Another program's database given as `--state` is refused and left unchanged (before, idpipe's tables were
    /// added to it and its journal switched to WAL); an empty file and idpipe's own store open.
    @Test func anotherProgramsDatabaseIsRefusedUntouched() throws {
        let folder = TemporaryFile.directory("foreign-store")
        let path = folder + "/app.db"
        do {
            let app = try DatabaseQueue(path: path)
            try app.write { db in try db.execute(sql: "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT); INSERT INTO users VALUES (1, 'a@b.c')") }
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect {
            try StateStore(path: path)
        } throws: { error in
            "\(error)" == "\(path) is an SQLite database but not an idpipe state store (its tables: users); it was left as it was: give --state a new file"
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        let empty = folder + "/empty.sqlite"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        _ = try StateStore(path: empty)
        _ = try StateStore(path: empty)
        // Killed while it was created: the migrations' table made, none of them recorded. It opens as a new store; one
        // with a foreign migration recorded does not.
        let cut = folder + "/cut.sqlite"
        try DatabaseQueue(path: cut).write { db in try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)") }
        #expect(try StateStore(path: cut).loadRun() == nil)
        let other = folder + "/other.sqlite"
        try DatabaseQueue(path: other).write { db in
            try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY); INSERT INTO grdb_migrations VALUES ('their-v1')")
        }
        #expect(throws: StoreError.self) { try StateStore(path: other) }
    }
    @Test(arguments: [[], ["google.com"], ["google.com", "apple.com"], ["apple.com", "google.com"], ["apple.com", "apple.com"],
                      ["twitter.com", "facebook.com", "apple.com"]])
    func providerListIsSortedAndSpaced(_ ids: [String]) {
        let links = ids.map { ProviderLink(providerId: $0, rawId: "1") }
        #expect(ReportAccount.providerList(links) == ids.sorted().joined(separator: " "))
    }
}
