import Foundation
import IdPipeConnect
import Logging
import Synchronization
import Testing
@testable import IdPipeApply
@testable import IdPipeCore
@testable import IdPipeStore

/// Effects that record each call in order, and fail or stop where a test says.
final class RecordingEffects: RemoteEffects {
    let calls = Mutex<[String]>([])
    let failApple: Set<String>
    /// Every data deletion throws this.
    let errorOnData: ConnectorError?
    let batchDeleteRate: Double
    /// Counts of these accounts' paths fail with the error.
    let countFailures: [String: ConnectorError]
    /// Called with the uid of each data deletion, before it returns.
    let onData: (@Sendable (String) -> Void)?
    /// Accounts Identity Toolkit no longer has.
    let gone: Set<String>
    /// Called with the uid of each data deletion before its request would leave: where it waits for its turn.
    let beforeData: (@Sendable (String) -> Void)?
    /// Called as any request that changes something would leave, before the channel's look at the run.
    let beforeSend: (@Sendable () -> Void)?

    init(failApple: Set<String> = [], errorOnData: ConnectorError? = nil, batchDeleteRate: Double = 1000,
         countFailures: [String: ConnectorError] = [:], onData: (@Sendable (String) -> Void)? = nil, gone: Set<String> = [],
         beforeData: (@Sendable (String) -> Void)? = nil, beforeSend: (@Sendable () -> Void)? = nil) {
        self.onData = onData
        self.beforeData = beforeData
        self.beforeSend = beforeSend
        self.gone = gone
        self.failApple = failApple
        self.errorOnData = errorOnData
        self.batchDeleteRate = batchDeleteRate
        self.countFailures = countFailures
    }

    var log: [String] { calls.withLock { $0 } }
    func note(_ call: String) { calls.withLock { $0.append(call) } }

    /// What a service channel does as a request leaves: the step is recorded as sent, or not started after a stop.
    func send() async throws {
        beforeSend?()
        try await SendWatch.current?.willSend()
    }

    func displayName(uid: String) async throws -> NameCheck { try await SendWatch.current?.willSend(readOnly: true); note("lookup \(uid)"); return .empty }
    func setDisplayName(uid: String, name: String) async throws { try await send(); note("name \(uid)") }
    func revokeApple(_ token: StoredAppleToken, now: Int64, resent: Bool) async throws -> StepResult {
        try await send()
        note("apple \(token.token.value)")
        if failApple.contains(token.token.value) { throw ConnectorError.rejected(service: "apple", code: "invalid_request", message: "") }
        return .done("revoked or already invalid")
    }
    func revokeFacebook(appScopedId: String) async throws { try await send(); note("facebook \(appScopedId)") }
    func revokeSessions(uid: String, validSince: Int64) async throws {
        try await send()
        if gone.contains(uid) { throw ConnectorError.rejected(service: "identitytoolkit", code: "USER_NOT_FOUND", message: "") }
        note("sessions \(uid)")
    }
    func deleteData(uid: String, idempotencyKey: String, run: String) async throws {
        beforeData?(uid)
        try await send()
        if let errorOnData { throw errorOnData }
        note("data \(uid)")
        onData?(uid)
    }
    func countPaths(_ kind: ActionKind, uid: String) async throws -> [PathCount] {
        note("count \(uid)")
        if let error = countFailures[uid] { throw error }
        return [PathCount(template: "users/{uid}", count: 2)]
    }
    func deletePaths(_ kind: ActionKind, uid: String) async throws -> [PathCount] {
        try await send()
        note("\(kind.rawValue) \(uid)")
        return [PathCount(template: "users/{uid}", count: 2)]
    }
    func deleteAccounts(_ uids: [String]) async throws -> [String: String] {
        for uid in uids { note("delete \(uid)") }
        return [:]
    }
    func traffic() -> [ServiceTraffic] { [] }
}

@Suite struct ApplyRunnerTests {
    static let start = ContinuousClock.now
    let asOf = Timestamp.parseRFC3339("2026-11-21T00:00:00Z")!

    /// 30 accounts linked to Apple and Facebook; every third is disabled and so selected for deletion.
    func plannedStore(policy: String = "delete", firestore: Bool = false) throws -> (StateStore, SideInputs) {
        let pipeline = try PipelineDefinition.parse(yaml: """
            version: 1
            name: t
            source: {path: x.json}
            select: {disabled: true}
            stages:
              revoke: true
              delete: {data_webhook: "https://example.com/hook", when_not_revocable: \(policy)\(firestore ? ", firestore: {paths: [\"users/{uid}\"]}" : "")}
            """, file: "t.yaml")
        var credentials = KeyedRows<StoredCredentials>()
        let accounts = (0..<30).map { index in
            let uid = "u\(index)"
            if index % 2 == 0 {
                credentials[uid] = StoredCredentials(apple: StoredAppleToken(kind: .refreshToken, token: Secret(value: "t\(index)", fingerprint: "f\(index)"), capturedAt: 0))
            }
            return Account(localId: uid, disabled: index % 3 == 0, providers: [
                ProviderLink(providerId: "apple.com", rawId: "001.\(index)"), ProviderLink(providerId: "facebook.com", rawId: "9\(index)"),
            ])
        }
        let sideInputs = SideInputs(credentials: credentials)
        let store = try StateStore()
        let runner = PlanRunner(pipeline: pipeline, processor: AccountProcessor(pipeline: pipeline, sideInputs: sideInputs, asOf: asOf), store: store,
                                workers: 2, logger: Logger(label: "test"))
        let record = RunRecord(pipelineName: "t", pipelinePath: "t.yaml", pipelineSHA256: "p", asOf: asOf, createdAt: 0, status: .planning,
                               sourcePath: "list", sourceFormat: "list", sourceSize: 30, sideInputSHA256: [:])
        _ = try runner.plan(run: record, openSource: { ListSource(accounts, from: $0) }, fingerprint: FixedFingerprint(), sink: nil, clock: { 0 })
        return (store, sideInputs)
    }

    func runner(_ store: StateStore, _ sideInputs: SideInputs, _ effects: RecordingEffects, cap: Int? = nil,
                failing: NotRevocablePolicy = .keep, queueLimit: Int? = nil) -> ApplyRunner {
        var settings = ApplySettings(policy: DeletionPolicy(whenNotRevocable: .delete, whenRevocationFails: failing), deletionCap: cap,
                                     accountsInFlight: 4, runKey: "k")
        if let queueLimit { settings.deletionQueueLimit = queueLimit }
        return ApplyRunner(store: store, effects: effects, credentials: sideInputs.credentials, settings: settings,
                    clock: { 1_800_000_000_000 }, monotonic: { let elapsed = ContinuousClock.now - Self.start
                        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18 }, logger: Logger(label: "test"))
    }

    /// A runner whose effects stop it as a signal would, from where `make` calls the stop it is given.
    func runner(_ store: StateStore, _ sideInputs: SideInputs, stoppedBy make: (@escaping @Sendable () -> Void) -> RecordingEffects)
        -> (ApplyRunner, RecordingEffects) {
        let holder = Mutex<ApplyRunner?>(nil)
        let effects = make { holder.withLock { $0?.requestStop() } }
        let apply = runner(store, sideInputs, effects)
        holder.withLock { $0 = apply }
        return (apply, effects)
    }

    func states(_ store: StateStore) throws -> [String: String] {
        var result: [String: String] = [:]
        try store.actions(limit: nil) { result["\($0.uid) \($0.kind)"] = $0.state }
        return result
    }

    @Test func revocationsComeBeforeTheDeletionAndNothingIsSentTwice() async throws {
        let (store, sideInputs) = try plannedStore()
        let effects = RecordingEffects()
        let (outcome, resent) = try await runner(store, sideInputs, effects).apply(command: "test")
        #expect(outcome == .completed(failed: 0))
        #expect(resent == 0)
        let log = effects.log
        for index in stride(from: 0, to: 30, by: 3) {
            let uid = "u\(index)"
            let deletion = try #require(log.firstIndex(of: "delete \(uid)"), "\(uid) deleted")
            #expect(try #require(log.firstIndex(of: "facebook 9\(index)")) < deletion)
            #expect(try #require(log.firstIndex(of: "data \(uid)")) < deletion)
            if index % 2 == 0 { #expect(try #require(log.firstIndex(of: "apple t\(index)")) < deletion) }
        }
        #expect(log.filter { $0.hasPrefix("delete ") }.count == 10)
        #expect(!log.contains { $0.hasPrefix("sessions ") }, "a deleted account's sessions end with it")
        #expect(Set(log).count == log.count, "each call once")

        let again = RecordingEffects()
        let (second, _) = try await runner(store, sideInputs, again).apply(command: "test")
        #expect(second == .completed(failed: 0))
        #expect(again.log.isEmpty)
    }

    /// The app's webhook has answered before a store's paths are deleted (sent together, a hook that read the user's
    /// documents raced their deletion), however slow it is; a hook that fails leaves the stores' data with the account,
    /// for the hook to find when it is sent again.
    @Test(arguments: [false, true]) func theWebhookAnswersBeforeTheStoresAreDeleted(hookFails: Bool) async throws {
        let (store, sideInputs) = try plannedStore(firestore: true)
        let effects = RecordingEffects(errorOnData: hookFails ? .rejected(service: "data-webhook", code: "HTTP 409", message: "") : nil,
                                       beforeData: { _ in Thread.sleep(forTimeInterval: 0.02) })  // a slow hook
        _ = try await runner(store, sideInputs, effects).apply(command: "test")
        let log = effects.log
        let firestore = log.filter { $0.hasPrefix("delete-firestore ") }
        #expect(firestore.count == (hookFails ? 0 : 10), "\(log)")
        // (A failed hook records no "data" line.)
        for line in firestore where !hookFails {
            let uid = line.dropFirst("delete-firestore ".count)
            #expect(try #require(log.firstIndex(of: "data \(uid)")) < log.firstIndex(of: line)!, "\(uid)")
        }
        if hookFails {
            let states = try states(store)
            #expect(states.filter { $0.key.hasSuffix(" delete-data") }.values.allSatisfy { $0 == "failed" })
            let held = states.filter { $0.key.hasSuffix(" delete-firestore") || $0.key.hasSuffix(" delete-account") }
            #expect(held.count == 20 && held.values.allSatisfy { $0 == "blocked" }, "\(held)")
        }
    }

    /// A stop that comes while an account's data is deleted leaves its account deletion planned, for resume: it is a
    /// step of its own, which a stop does not start (it was queued once the data went, and sent).
    @Test func aStopDuringTheDataDeletionLeavesTheAccountDeletionPlanned() async throws {
        let (store, sideInputs) = try plannedStore()
        let (apply, effects) = runner(store, sideInputs, stoppedBy: { stop in RecordingEffects(onData: { _ in stop() }) })
        #expect(try await apply.apply(command: "test").outcome == .interrupted)
        let states = try states(store)
        let dataDone = states.filter { $0.key.hasSuffix(" delete-data") && $0.value == "done" }.keys.map { String($0.split(separator: " ")[0]) }
        #expect(!dataDone.isEmpty)
        for uid in dataDone { #expect(states["\(uid) delete-account"] == "planned", "\(uid)") }
        #expect(!effects.log.contains { $0.hasPrefix("delete ") }, "\(effects.log)")
    }

    /// A stop that comes while steps wait for their turn (a rate limit: 64 accounts in flight at 2 updates a second)
    /// starts none of them: they stay planned, not `sent`, and resume sends each once, with nothing counted as sent
    /// again. They were marked sent before the wait, and sent after the stop (60 updates over 30 s after a SIGTERM).
    @Test func stepsWaitingForTheirTurnAtAStopAreNotStarted() async throws {
        let (store, sideInputs) = try plannedStore()
        // The first data deletion to reach its turn finds the run stopped by a signal while it waited.
        let (apply, effects) = runner(store, sideInputs, stoppedBy: { stop in RecordingEffects(beforeData: { _ in stop() }) })
        let planned = try states(store)
        #expect(try await apply.apply(command: "test").outcome == .interrupted)
        #expect(!effects.log.contains { $0.hasPrefix("data ") || $0.hasPrefix("delete ") }, "\(effects.log)")
        let stopped = try states(store)
        #expect(!stopped.values.contains("sent"), "\(stopped)")
        let waiting = stopped.filter { $0.key.hasSuffix(" delete-data") && $0.value == "planned" }
        #expect(!waiting.isEmpty)
        // Only the accounts something was done for are counted (their revocations): none twice, none that only waited.
        let acted = Set(stopped.filter { $0.value != planned[$0.key] }.keys.map { $0.split(separator: " ")[0] })
        #expect(apply.progress.accounts == acted.count, "\(apply.progress.accounts) counted, \(acted.count) acted on")
        let rest = RecordingEffects()
        let (outcome, resent) = try await runner(store, sideInputs, rest).apply(command: "test")
        #expect(outcome == .completed(failed: 0) && resent == 0)
        for uid in waiting.keys.map({ String($0.split(separator: " ")[0]) }) {
            #expect(rest.log.filter { $0 == "data \(uid)" }.count == 1 && rest.log.contains("delete \(uid)"), "\(uid)")
        }
    }

    /// Ctrl-C after the deletion cap stopped the run still stops the steps: the outcome stays the cap's, and `stopping`
    /// read only an interrupted outcome, so steps went on being started.
    @Test func aStopAfterTheCapStillStopsTheSteps() throws {
        let (store, sideInputs) = try plannedStore()
        let apply = runner(store, sideInputs, RecordingEffects(), cap: 1)
        apply.halt(.stoppedByGuard("the deletion cap of 1"))
        #expect(!apply.stopping)
        apply.requestStop()
        #expect(apply.stopping)
    }

    /// A stop before anything was sent: no account is counted as done something for (it said "23 accounts" for 23
    /// accounts that only waited), and none of their actions is sent.
    @Test func accountsThatOnlyWaitedAreNotCounted() async throws {
        let (store, sideInputs) = try plannedStore()
        let (apply, effects) = runner(store, sideInputs, stoppedBy: { stop in RecordingEffects(beforeSend: stop) })
        let planned = try states(store)
        #expect(try await apply.apply(command: "test").outcome == .interrupted)
        #expect(effects.log.isEmpty, "\(effects.log)")
        #expect(try states(store) == planned)
        #expect(apply.progress.accounts == 0)
    }

    /// Ending the sessions of an account deleted since the plan is not possible, not a failure (which made the run exit 1).
    @Test func sessionsOfAnAccountGoneSinceThePlanAreNotPossibleToEnd() async throws {
        let (store, sideInputs) = try plannedStore(policy: "keep")
        let planned = try states(store).filter { $0.key.hasSuffix(" revoke-sessions") }.keys.map { String($0.split(separator: " ")[0]) }.sorted()
        #expect(planned.count >= 2)
        let effects = RecordingEffects(gone: [planned[0]])
        _ = try await runner(store, sideInputs, effects).apply(command: "test")
        let states = try states(store)
        #expect(states["\(planned[0]) revoke-sessions"] == "not-possible" && states["\(planned[1]) revoke-sessions"] == "done", "\(states)")
    }

    /// Ctrl-C while producers wait on a full deletion queue and the deletions sleep until their next slot: the run
    /// ends (interrupted) instead of waiting forever for a queue nobody takes from.
    @Test func aCancelWhileTheDeletionQueueIsFullEndsTheRun() async throws {
        let (store, sideInputs) = try plannedStore()
        let effects = RecordingEffects(batchDeleteRate: 0.1)  // one batch, then the next slot is 10 s away
        let apply = runner(store, sideInputs, effects, queueLimit: 1)
        let run = Task { try await apply.apply(command: "test").outcome }
        while !effects.log.contains(where: { $0.hasPrefix("delete ") }) { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(300))  // the other accounts reach the full queue and wait there
        run.cancel()
        let once = FirstOf()
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<ApplyOutcome?, Never>) in
            Task { let outcome = try? await run.value; if once.claim() { continuation.resume(returning: outcome) } }
            // 8 s counted in 160 steps of 50 ms, each of which needs a thread of the shared pool, as the run does: under
            // `make test`, other tests' synchronous waits hold the pool's threads for seconds (the delete above came after
            // 16 s, where alone it takes milliseconds), and 8 s of the clock ran out before the run was given a thread.
            Task {
                for _ in 0..<160 { try? await Task.sleep(for: .milliseconds(50)) }
                if once.claim() { continuation.resume(returning: nil) }
            }
        }
        #expect(outcome == .interrupted, "the run did not end within 8 s of the cancel (counted while the pool ran)")
    }

    @Test(arguments: [(NotRevocablePolicy.keep, "blocked"), (.delete, "done")])
    func aFailedRevocationHoldsTheDeletionUnlessThePipelineSaysOtherwise(policy: NotRevocablePolicy, expected: String) async throws {
        let (store, sideInputs) = try plannedStore()
        let effects = RecordingEffects(failApple: ["t6"])
        let (outcome, _) = try await runner(store, sideInputs, effects, failing: policy).apply(command: "test")
        #expect(outcome == .completed(failed: 1))
        let states = try states(store)
        #expect(states["u6 revoke-apple"] == "failed")
        #expect(states["u6 delete-account"] == expected)
        #expect(states["u6 delete-data"] == expected)
        #expect(effects.log.contains("delete u6") == (policy == .delete))
        var policyText = ""
        try store.actions(limit: nil) { if $0.uid == "u6" && $0.kind == "delete-account" { policyText = $0.policy ?? "" } }
        #expect(policyText.hasPrefix("when_revocation_fails: \(policy.rawValue)"))
    }

    @Test func anActionLeftSentByACrashIsSentAgainAndCounted() async throws {
        let (store, sideInputs) = try plannedStore()
        let pending = try await store.pendingAccounts(after: -1, limit: 1)
        let target = try #require(pending.first?.action(.revokeFacebook)?.id)
        try await store.record([ActionUpdate(id: target, state: .sent, at: 1)])
        let effects = RecordingEffects()
        let (_, resent) = try await runner(store, sideInputs, effects).apply(command: "test")
        #expect(resent == 1)
        #expect(effects.log.contains("facebook 90"))
        let summary = try #require(try store.applySummary())
        #expect(summary.resent == 1)
        var attempts = 0
        try store.actions(limit: nil) { if $0.uid == "u0" && $0.kind == "revoke-facebook" { attempts = $0.attempts } }
        #expect(attempts == 2)
    }

    @Test func aKilledSessionCountsUntilItsOwnLastRecord() async throws {
        let (store, _) = try plannedStore()
        let ids = try await store.pendingAccounts(after: -1, limit: 2).flatMap { $0.actions.map(\.id) }
        _ = try await store.beginApplySession(command: "apply", at: 1_000)
        try await store.record([ActionUpdate(id: ids[0], state: .sent, at: 2_000)])
        // Killed here: no end recorded. The next session starts later and ends.
        let (second, _) = try await store.beginApplySession(command: "resume", at: 5_000)
        try await store.record([ActionUpdate(id: ids[1], state: .sent, at: 6_000)])
        try await store.endApplySession(second, at: 7_000, outcome: "completed")
        let summary = try #require(try store.applySummary())
        #expect(summary.sessions.map(\.endedAt) == [2_000, 7_000])
        #expect(summary.seconds == 3)
        // Each session keeps the idpipe that ran it (evidence of what carried the deletions out); one of an idpipe before
        // 0.5.0 has none, and says so.
        #expect(summary.sessions.map(\.ranBy) == ["idpipe \(IdPipeVersion.text)", "idpipe \(IdPipeVersion.text)"])
        var old = summary.sessions[0]
        old.idpipeVersion = nil
        #expect(old.ranBy == "before 0.5.0 (not recorded)")
    }

    @Test func theCapStopsBeforeTheFirstDeletionBeyondIt() async throws {
        let (store, sideInputs) = try plannedStore()
        let effects = RecordingEffects()
        let (outcome, _) = try await runner(store, sideInputs, effects, cap: 3).apply(command: "test")
        guard case .stoppedByGuard = outcome else { Issue.record("\(outcome)"); return }
        #expect(effects.log.filter { $0.hasPrefix("delete ") }.count == 3)
        #expect(effects.log.filter { $0.hasPrefix("data ") }.count == 3)
        // Nothing is sent for an account the cap holds back: the accounts in flight when it was reached had their
        // tokens revoked (4 at a time here), and were kept.
        #expect(effects.log.filter { $0.hasPrefix("facebook ") }.count == 3, "\(effects.log)")
        // The same cap in a later session counts the deletions already done: nothing more goes.
        let later = RecordingEffects()
        let (again, _) = try await runner(store, sideInputs, later, cap: 3).apply(command: "test")
        guard case .stoppedByGuard = again else { Issue.record("\(again)"); return }
        #expect(!later.log.contains { $0.hasPrefix("delete ") || $0.hasPrefix("data ") })
        #expect(!later.log.contains { $0.hasPrefix("facebook ") || $0.hasPrefix("apple ") }, "\(later.log)")
    }

    /// A configuration error, a service gone down midway (it answered before, and no attempt of a request reached
    /// it), or one that keeps failing (a request's retries spent on 5xx), stops the run: the action stays sent, nothing
    /// is failed for it, no other step is started, and resume finishes the run. A webhook answering 500 to every call
    /// failed each account in turn for good, after its stores were emptied, and resume found nothing to do.
    @Test(arguments: [ConnectorError.configuration(service: "data-webhook", message: "HTTP 401"),
                      .unavailable(service: "data-webhook", message: "cannot connect (8 attempts), though it answered earlier"),
                      .exhausted(service: "data-webhook", attempts: 8, last: "HTTP 500")])
    func aConfigurationErrorStopsTheRunAndLeavesTheActionToResend(error: ConnectorError) async throws {
        let (store, sideInputs) = try plannedStore()
        let effects = RecordingEffects(errorOnData: error)
        let (outcome, _) = try await runner(store, sideInputs, effects).apply(command: "test")
        guard case .stoppedByConfiguration(let why) = outcome else { Issue.record("\(outcome)"); return }
        if case .exhausted = error {
            #expect(why.contains("data-webhook: unavailable: gave up after 8 attempts (last: HTTP 500): the service keeps failing"), "\(why)")
        } else {
            #expect(why == error.description)
        }
        let states = try states(store)
        #expect(states.values.contains("sent"), "the refused action stays sent, to be sent again")
        #expect(!states.values.contains("failed"))
        #expect(!effects.log.contains { $0.hasPrefix("delete ") }, "\(effects.log)")
        let (resumed, _) = try await runner(store, sideInputs, RecordingEffects()).apply(command: "test")
        #expect(resumed == .completed(failed: 0))
    }

    /// A count that gave up on passing faults is tried again by the next survey (the next plan or resume); one the
    /// service refused is not. Within one survey nothing is counted twice.
    @Test func countsThatGaveUpOnFaultsAreTriedAgainLater() async throws {
        let (store, _) = try plannedStore(firestore: true)
        let planned = try store.uncountedPathActionCount()
        #expect(planned == 10, "every third of 30 accounts is selected")
        let faulty = RecordingEffects(countFailures: [
            "u0": .exhausted(service: "firestore", attempts: 8, last: "HTTP 503"),
            "u3": .rejected(service: "firestore", code: "PERMISSION_DENIED", message: ""),
        ])
        let first = try await DataSurvey(store: store, effects: faulty, concurrency: 4).run(total: planned)
        #expect(first.counted == 8 && first.failed == 2)
        #expect(faulty.log.filter { $0.hasPrefix("count ") }.count == 10)
        #expect(try store.uncountedPathActionCount() == 0)
        #expect(try store.recountableActionCount() == 1)

        #expect(try store.reopenRecountableActions() == 1)
        let healthy = RecordingEffects()
        let second = try await DataSurvey(store: store, effects: healthy, concurrency: 4).run(total: try store.uncountedPathActionCount())
        #expect(second.counted == 1 && second.failed == 0)
        #expect(healthy.log == ["count u0"])
        #expect(try store.recountableActionCount() == 0)
        var details: [String: String] = [:]
        try store.actions(limit: nil) { action in
            if action.kind == ActionKind.deleteFirestore.rawValue { details[action.uid] = action.wouldDelete.map { "\($0)" } ?? action.counted ?? "-" }
        }
        #expect(details["u0"] == "2")
        #expect(details["u3"] == "not counted: firestore: PERMISSION_DENIED")
    }
}

extension ApplyRunnerTests {
    /// A survey told to stop starts no count, writes those it finished, and says it stopped; the next one counts only
    /// the rest. All the counts of a window of 500 were written at its end: a stop lost every one, and they were made
    /// again.
    @Test func aStoppedSurveyKeepsWhatItCounted() async throws {
        let (store, _) = try plannedStore(firestore: true)
        let planned = try store.uncountedPathActionCount()
        let effects = RecordingEffects()
        let first = try await DataSurvey(store: store, effects: effects, concurrency: 2).run(total: planned, shouldStop: {
            effects.log.filter { $0.hasPrefix("count ") }.count >= 4
        })
        #expect(first.stopped && first.counted >= 4 && first.counted < planned, "\(first)")
        #expect(try store.uncountedPathActionCount() == planned - first.counted)
        let rest = RecordingEffects()
        let second = try await DataSurvey(store: store, effects: rest, concurrency: 2).run(total: try store.uncountedPathActionCount())
        #expect(!second.stopped && second.counted == planned - first.counted)
        #expect(Set(rest.log).isDisjoint(with: Set(effects.log)), "nothing counted twice")
        #expect(try store.uncountedPathActionCount() == 0)
        // Asked to stop once everything was counted (a signal during the last answers): nothing is left, so it did not stop.
        let (late, _) = try plannedStore(firestore: true)
        let all = try late.uncountedPathActionCount()
        let counting = RecordingEffects()
        let third = try await DataSurvey(store: late, effects: counting, concurrency: 2).run(total: all, shouldStop: {
            counting.log.filter { $0.hasPrefix("count ") }.count >= all
        })
        #expect(!third.stopped && third.counted == all, "\(third)")
    }
}

/// A missing client is named the same way for every kind of action: the pipeline keys to add, and the action.
@Test(arguments: [(ActionKind.deleteFirestore, "stages.delete.firestore and services.google"), (.revokeApple, "services.apple")])
func aMissingClientNamesThePipelineKeys(kind: ActionKind, missing: String) {
    #expect(throws: Never.self) { try required(1 as Int?, for: kind, missing: missing) }
    let error = #expect(throws: ConnectorError.self) { try required(nil as Int?, for: kind, missing: missing) }
    #expect(error?.description == "idpipe: configuration error: \(missing) must be configured for \(kind.rawValue) actions")
}

@Suite struct DeletionPolicyTests {
    func action(_ kind: ActionKind, _ state: ActionState, _ reason: String? = nil) -> PendingAction {
        PendingAction(id: 1, kind: kind, state: state, detail: "", reason: reason)
    }

    @Test(arguments: [
        ([ActionState.done, .done], NotRevocablePolicy.keep, NotRevocablePolicy.keep, "allow revocations done"),
        ([.done, .notPossible], .keep, .keep, "block when_not_revocable: keep"),
        ([.done, .notPossible], .delete, .keep, "allow when_not_revocable: delete"),
        ([.failed, .notPossible], .delete, .keep, "block when_revocation_fails: keep"),
        ([.failed, .done], .keep, .delete, "allow when_revocation_fails: delete"),
        // Both rules concern the account: keep in either keeps it.
        ([.failed, .notPossible], .keep, .delete, "block when_not_revocable: keep"),
        ([.notPossible, .failed], .keep, .delete, "block when_not_revocable: keep"),
        ([.failed, .notPossible], .delete, .delete, "allow when_revocation_fails: delete (revoke-apple failed: why); when_not_revocable: delete (revoke-facebook not possible: why)"),
        ([.sent, .done], .delete, .delete, "wait"),
        ([], .keep, .keep, "allow no revocation planned"),
    ])
    func verdicts(states: [ActionState], notRevocable: NotRevocablePolicy, fails: NotRevocablePolicy, expected: String) {
        let revocations = states.enumerated().map { action($0.offset == 0 ? .revokeApple : .revokeFacebook, $0.element, "why") }
        let verdict = DeletionPolicy(whenNotRevocable: notRevocable, whenRevocationFails: fails).verdict(revocations: revocations)
        switch verdict {
        case .allow(let policy): #expect(("allow " + policy).hasPrefix(expected))
        case .block(let policy, let reason):
            #expect(("block " + policy).hasPrefix(expected))
            #expect(reason.contains("why"))
        case .wait: #expect(expected == "wait")
        }
    }

    @Test func fixedPointNumbers() {
        #expect(FixedPoint.text(1.005, places: 2) == "1.00" || FixedPoint.text(1.005, places: 2) == "1.01")
        #expect(FixedPoint.text(12.5, places: 1) == "12.5")
        #expect(FixedPoint.text(0.04, places: 1) == "0.0")
        #expect(FixedPoint.text(-2.25, places: 3) == "-2.250")
        #expect(FixedPoint.text(7, places: 0) == "7")
    }
}

/// An in-memory account source: one batch of 8 accounts at a time.
final class ListSource: AccountSource {
    let path = "list"
    let accounts: [Account]
    var next: Int

    init(_ accounts: [Account], from checkpoint: InputCheckpoint) {
        self.accounts = accounts
        next = Int(checkpoint.offset)
    }

    var totalBytes: Int64 { Int64(accounts.count) }

    func nextBatch(records: Int, parts: Int) throws -> (any RawBatch)? {
        guard next < accounts.count else { return nil }
        let end = min(accounts.count, next + 8)
        let records = accounts[next..<end].enumerated().map { DecodedRecord.account($0.element, SourcePosition(file: "list", line: next + $0.offset + 1)) }
        next = end
        return OneBatch(records: records, checkpoint: InputCheckpoint(offset: Int64(end), line: end + 1))
    }
}

struct OneBatch: RawBatch {
    let records: [DecodedRecord]
    let checkpoint: InputCheckpoint
    var partCount: Int { 1 }
    func decode(part: Int, each: (consuming DecodedRecord) -> Void) { records.forEach(each) }
}

final class FixedFingerprint: InputFingerprint {
    func advance(to offset: Int64) throws -> String { "f\(offset)" }
}


/// True for the first caller only.
final class FirstOf: Sendable {
    private let taken = Mutex(false)
    func claim() -> Bool { taken.withLock { taken in defer { taken = true }; return !taken } }
}
