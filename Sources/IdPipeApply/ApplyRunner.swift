import IdPipeConnect
import IdPipeCore
import IdPipeCrypto
import IdPipeStore
import Logging
import Synchronization

/// How an apply session ended.
public enum ApplyOutcome: Sendable, Equatable {
    /// Every action reached a final state; `failed` of them failed.
    case completed(failed: Int)
    /// A deletion cap was reached: nothing beyond it was deleted.
    case stoppedByGuard(String)
    /// Credentials or endpoints are wrong: every account would fail the same way. Actions in flight stay `sent`.
    case stoppedByConfiguration(String)
    /// Interrupted (SIGINT/SIGTERM): resumable.
    case interrupted
}

public struct ApplyProgress: Sendable {
    public var accounts: Int
    public var actionsDone: Int
    public var actionsFailed: Int
    public var deleted: Int
    public var elapsedSeconds: Double
}

public struct ApplySettings: Sendable {
    public var policy: DeletionPolicy
    /// The most accounts whose deletion may start in this run (counting earlier sessions); nil: no cap.
    public var deletionCap: Int?
    public var accountsInFlight: Int
    /// Identifies the run in webhook idempotency keys (stable across sessions of one run).
    public var runKey: String
    public var window = 1000
    /// Accounts waiting for a batch-delete slot before producers wait (5 batches).
    public var deletionQueueLimit = 5 * IdentityToolkitClient.maxBatch

    public init(policy: DeletionPolicy, deletionCap: Int?, accountsInFlight: Int, runKey: String) {
        self.policy = policy
        self.deletionCap = deletionCap
        self.accountsInFlight = accountsInFlight
        self.runKey = runKey
    }
}

/// Carries out a recorded plan: names, then per account its revocations, then its data, then its account
/// through the batch-delete queue. Every remote call is preceded by a durable `sent` record and followed by
/// a durable `done`/`failed`/`not-possible` record; after a crash, `sent` actions are sent again (each is
/// idempotent) and final ones never are.
public final class ApplyRunner: Sendable {
    let store: StateStore
    let effects: any RemoteEffects
    let credentials: KeyedRows<StoredCredentials>
    let settings: ApplySettings
    let clock: @Sendable () -> Int64
    let monotonic: @Sendable () -> Double
    let logger: Logger
    let journal: Journal
    private let stop = Mutex<ApplyOutcome?>(nil)
    /// No step is started any more (`stopping`): set by any stop but the cap's, whatever stopped the run first (a Ctrl-C
    /// after the cap had stopped it kept the cap's outcome, and steps went on being started).
    private let noNewSteps = Atomic<Bool>(false)
    private let counters = Mutex(ApplyProgress(accounts: 0, actionsDone: 0, actionsFailed: 0, deleted: 0, elapsedSeconds: 0))
    private let budget = Mutex<Int?>(nil)
    /// The run's deletions begun before this session, which the cap counts (said when it stops the run).
    private let startedBefore = Mutex(0)
    /// A migration's import (`stages.import`), sent first in the session: its names are in the accounts it imports.
    let importer: ImportRunner?

    public init(store: StateStore, effects: any RemoteEffects, credentials: KeyedRows<StoredCredentials>, settings: ApplySettings,
                clock: @escaping @Sendable () -> Int64, monotonic: @escaping @Sendable () -> Double, logger: Logger,
                importer: ImportRunner? = nil) {
        self.importer = importer
        self.store = store
        self.effects = effects
        self.credentials = credentials
        self.settings = settings
        self.clock = clock
        self.monotonic = monotonic
        self.logger = logger
        journal = Journal(store: store)
    }

    public var progress: ApplyProgress { counters.withLock { $0 } }

    /// Runs until every action is final, a guard or configuration error stops it, or the task is cancelled. The import
    /// comes first, `onImport(done, total)` after each of its requests.
    public func apply(command: String, onProgress: (@Sendable (ApplyProgress) -> Void)? = nil,
                      onImport: @escaping @Sendable (Int, Int) -> Void = { _, _ in }) async throws -> (outcome: ApplyOutcome, resent: Int) {
        let started = monotonic()
        let (session, resent) = try await store.beginApplySession(command: command, at: clock())
        if resent > 0 { logger.info("sending again \(resent) actions that were in flight when the last run stopped") }
        if let cap = settings.deletionCap {
            let counted = try await store.deletionsStarted()
            budget.withLock { $0 = cap - counted }
            startedBefore.withLock { $0 = counted }
        }
        let queue = DeleteQueue(highWater: settings.deletionQueueLimit)
        var outcome: ApplyOutcome
        do {
            if let importer {
                switch try await importer.run(shouldStop: { [self] in halted }, progress: onImport) {
                case .completed:
                    // Every request is done: the name updates went in with the accounts (or failed with them).
                    let closed = try await store.closeNameUpdatesByImport(at: clock())
                    if closed > 0 { logger.info("\(closed) name updates went in with the imported accounts; none is sent on its own") }
                case .interrupted: halt(.interrupted)
                case .stopped(let why): halt(.stoppedByConfiguration(why))
                }
            }
            if !halted { try await runActions(queue, started: started, session: session, onProgress: onProgress) }
            outcome = try await finalOutcome()
        } catch is CancellationError {
            queue.drop()
            outcome = stop.withLock { $0 } ?? .interrupted
        } catch let error as ConnectorError where error.stopsRun {
            queue.drop()
            outcome = stop.withLock { $0 } ?? .stoppedByConfiguration(error.description)
        }
        // Recorded even when the run was cancelled: in a task of its own, which does not inherit the cancellation
        // (the store's async writes refuse to start in a cancelled task).
        let traffic = effects.traffic(), ended = clock(), described = Self.describe(outcome), store = self.store
        try await Task {
            try await store.saveTraffic(session: session, traffic)
            try await store.endApplySession(session, at: ended, outcome: described)
        }.value
        return (outcome, resent)
    }

    /// The accounts' actions: names, revocations and data per account, the accounts through the deletion queue.
    private func runActions(_ queue: DeleteQueue, started: Double, session: Int64, onProgress: (@Sendable (ApplyProgress) -> Void)?) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // However the deletions end (a cancel ends them mid-sleep), producers parked on a full queue must wake.
                defer { queue.close() }
                try await self.runDeletions(queue)
            }
            group.addTask {
                defer { queue.close() }
                try await self.feed(queue, started: started, session: session, onProgress: onProgress)
            }
            try await group.waitForAll()
        }
    }

    static func describe(_ outcome: ApplyOutcome) -> String {
        switch outcome {
        case .completed(let failed): failed == 0 ? "completed" : "completed with \(failed) failed actions"
        case .stoppedByGuard(let why): "stopped by a guard: \(why)"
        case .stoppedByConfiguration(let why): "stopped: \(why)"
        case .interrupted: "interrupted"
        }
    }

    private func finalOutcome() async throws -> ApplyOutcome {
        if let stopped = stop.withLock({ $0 }) { return stopped }
        let open = try await store.pendingAccounts(after: -1, limit: 1)
        if !open.isEmpty { return .stoppedByConfiguration("actions are still open after the last account (see the log)") }
        let failed = try store.actionStates().values.reduce(0) { $0 + ($1[.failed] ?? 0) }
        return .completed(failed: failed)
    }

    func halt(_ outcome: ApplyOutcome) {
        switch outcome {
        case .interrupted, .stoppedByConfiguration: noNewSteps.store(true, ordering: .relaxed)
        case .completed, .stoppedByGuard: break
        }
        stop.withLock { current in
            if current == nil { current = outcome }
        }
    }

    private var halted: Bool { stop.withLock { $0 != nil } }

    /// Ctrl-C or SIGTERM: no account is started and no step of one begun after this; the requests in flight get their
    /// answers recorded (cancelling them left them `sent`, for resume to send again), and the deletions already queued
    /// are sent. The run then ends as interrupted.
    public func requestStop() {
        halt(.interrupted)
    }

    /// No step is started: a signal came, or the run stopped on a configuration error or a service that keeps failing
    /// (its other accounts in flight went on revoking and emptying stores, their deletions then held back). A stop at
    /// the deletion cap lets the accounts in flight, which hold places under it, go on.
    var stopping: Bool { noNewSteps.load(ordering: .relaxed) }

    // MARK: - Feeding accounts

    private func feed(_ queue: DeleteQueue, started: Double, session: Int64, onProgress: (@Sendable (ApplyProgress) -> Void)?) async throws {
        var after: Int64 = -1
        var lastTraffic = monotonic()
        try await withThrowingTaskGroup(of: Void.self) { group in
            var running = 0
            var lastReport = 0.0
            while !halted && !Task.isCancelled {
                let window = try await store.pendingAccounts(after: after, limit: settings.window)
                guard let last = window.last else { break }
                after = last.sequence
                for account in window {
                    if running >= settings.accountsInFlight {
                        try await group.next()
                        running -= 1
                    }
                    // A stop (one that came while waiting for room too) starts no more accounts; those running end first.
                    if halted || Task.isCancelled { break }
                    group.addTask { try await self.process(account, queue) }
                    running += 1
                    let now = monotonic()
                    if now - lastReport >= 0.25, let onProgress {
                        lastReport = now
                        onProgress(counters.withLock { $0.elapsedSeconds = now - started; return $0 })
                    }
                }
                if monotonic() - lastTraffic > 5 {
                    lastTraffic = monotonic()
                    try await store.saveTraffic(session: session, effects.traffic())
                }
            }
            try await group.waitForAll()
        }
        try Task.checkCancellation()
    }

    // MARK: - One account

    private func process(_ account: PendingAccount, _ queue: DeleteQueue) async throws {
        if stopping { return }
        var actions = account.actions
        func index(_ kind: ActionKind) -> Int? { actions.firstIndex { $0.kind == kind } }
        // Counted when something was done for it: an account the cap held back, or a stop left as it was, is not
        // ("apply, interrupted: 23 accounts, 7 actions done" after a stop that 16 of them waited through).
        var didSomething = false
        defer {
            if didSomething || zip(actions, account.actions).contains(where: { $0.state != $1.state }) { counters.withLock { $0.accounts += 1 } }
        }

        // The cap counts accounts whose deletion starts; one already started in an earlier session is counted. Its place
        // is taken before anything is sent for the account: a canary of 5 deletions revoked the tokens of 23 accounts
        // (those in flight when the cap was reached), and a resume at the same cap 7 more, all of them kept.
        let alreadyStarted = account.actions.contains { $0.kind.isDeletion && ($0.state == .sent || $0.state == .done || $0.state == .failed) }
        var reserved = false
        if account.selected, !alreadyStarted, actions.contains(where: { $0.kind.isDeletion && $0.isOpen }) {
            guard reserveDeletion() else { return }
            reserved = true
        }
        // The place under the cap goes back when the account's deletion does not start in this run.
        func giveBackReservation() {
            if reserved { releaseDeletion() }
        }

        if let i = index(.updateName), actions[i].isOpen {
            let uid = account.uid, name = actions[i].value ?? ""
            actions[i] = try await perform(actions[i]) { _ in
                switch try await self.effects.displayName(uid: uid) {
                case .missing: return .notPossible("the account no longer exists")
                // The planned name already there: set by this run before an interruption (or by someone else): done.
                case .present(let current) where current == name: return .done("display name set")
                case .present: return .notPossible("it has a display name now (set since the plan): left as it is")
                case .empty:
                    try await self.effects.setDisplayName(uid: uid, name: name)
                    return .done("display name set")
                }
            }
        }

        // A stop between the steps of an account: the rest stay planned, for resume.
        if stopping { return giveBackReservation() }
        try await Self.concurrently(&actions, where: { $0.kind.isRevocation }) { action in try await self.revoke(action, account: account) }

        let open = actions.filter { $0.kind.isDeletion && $0.isOpen }
        guard !open.isEmpty else { return }
        guard account.selected else {
            didSomething = true
            try await close(open, .blocked, reason: "the account is not selected for cleanup in this plan", policy: "selection")
            return
        }
        switch settings.policy.verdict(revocations: actions.filter { $0.kind.isRevocation }) {
        case .wait:
            giveBackReservation()  // a revocation is still open (a stop came in between): the next run decides
        case .block(let policy, let reason):
            giveBackReservation()
            didSomething = true
            try await close(open, .blocked, reason: reason, policy: policy)
        case .allow(let policy):
            if stopping { return giveBackReservation() }
            // The app's webhook first, then each configured store at once, once the hook has deleted the app's data: sent
            // together, a hook that reads the user's documents (a billing customer's id) raced their deletion. The account
            // only once all of them are done.
            try await Self.concurrently(&actions, where: { $0.kind == .deleteData }) { action in
                try await self.deleteData(action, uid: account.uid, policy: policy)
            }
            // A hook that did not (failed, or not possible): the stores keep their data, with the account, so that the
            // hook, sent again by a later plan, finds what it reads.
            if let hook = actions.first(where: { $0.kind == .deleteData }), !hook.isOpen, hook.state != .done {
                let stores = actions.indices.filter { actions[$0].isOpen && actions[$0].kind.isDataDeletion }
                if !stores.isEmpty {
                    let reason = "not sent: the data webhook did not delete the app's data (\(hook.state.rawValue)), so the stores keep theirs, with the account"
                    didSomething = true
                    try await close(stores.map { actions[$0] }, .blocked, reason: reason, policy: policy)
                    for i in stores {
                        actions[i].state = .blocked
                        actions[i].reason = reason
                    }
                }
            }
            // (A stop after the hook leaves the stores planned, for resume.)
            if !stopping {
                try await Self.concurrently(&actions, where: { $0.kind.isDataDeletion && $0.kind != .deleteData }) { action in
                    try await self.deleteData(action, uid: account.uid, policy: policy)
                }
            }
            if actions.contains(where: { $0.kind.isDataDeletion && $0.isOpen }) {
                // A stop kept one from starting: it stays planned with the account's deletion, for resume (the place
                // under the cap stays taken if another began).
                if !actions.contains(where: { $0.kind.isDataDeletion && !$0.isOpen }) { giveBackReservation() }
                return
            }
            let undone = actions.filter { $0.kind.isDataDeletion && $0.state != .done }
            if !undone.isEmpty, let j = index(.deleteAccount), actions[j].isOpen {
                let why = undone.map { "\($0.kind.rawValue) \($0.state.rawValue): \($0.reason ?? "")" }.joined(separator: "; ")
                didSomething = true
                try await close([actions[j]], .blocked, reason: why, policy: policy)
                return
            }
            // A stop while the data went: the account's deletion is a step of its own, not started after a stop; it stays
            // planned for resume (its place under the cap stays taken: its deletion has begun).
            if stopping { return }
            if let i = index(.deleteAccount), actions[i].isOpen {
                didSomething = true
                await queue.push(DeleteQueue.Item(actionId: actions[i].id, uid: account.uid, policy: policy))
            }
        }
    }

    /// Runs `step` at once on each open action that `matches`, and puts what it returns in the action's place.
    private static func concurrently(_ actions: inout [PendingAction], where matches: (PendingAction) -> Bool,
                                     _ step: @escaping @Sendable (PendingAction) async throws -> PendingAction) async throws {
        let indices = actions.indices.filter { actions[$0].isOpen && matches(actions[$0]) }
        guard !indices.isEmpty else { return }
        let snapshot = actions
        let results = try await withThrowingTaskGroup(of: (Int, PendingAction).self) { group in
            for i in indices {
                let action = snapshot[i]
                group.addTask { (i, try await step(action)) }
            }
            var results: [(Int, PendingAction)] = []
            for try await result in group { results.append(result) }
            return results
        }
        for (i, action) in results { actions[i] = action }
    }

    private func deleteData(_ action: PendingAction, uid: String, policy: String) async throws -> PendingAction {
        let kind = action.kind
        if kind == .deleteData {
            let key = idempotencyKey(uid)
            return try await perform(action, policy: policy) { _ in
                try await self.effects.deleteData(uid: uid, idempotencyKey: key, run: self.settings.runKey)
                return .done("data deleted by the webhook")
            }
        }
        return try await perform(action, policy: policy) { _ in
            let counts = try await self.effects.deletePaths(kind, uid: uid)
            // The count goes in its own column: after a crash, a repeat finds only what the first send left.
            return .deleted("every configured path emptied", count: PathCount.total(counts))
        }
    }

    private func revoke(_ action: PendingAction, account: PendingAccount) async throws -> PendingAction {
        let uid = account.uid
        switch action.kind {
        case .revokeApple:
            guard let token = credentials[uid]?.apple else {
                return try await closeOne(action, .notPossible, reason: "no stored Apple token at apply time (the stored-tokens file has none for this account)")
            }
            let resent = action.firstSentAt != nil
            return try await perform(action) { now in try await self.effects.revokeApple(token, now: now, resent: resent) }
        case .revokeFacebook:
            guard let id = action.value, !id.isEmpty else {
                return try await closeOne(action, .notPossible, reason: "no Facebook app-scoped id recorded")
            }
            return try await perform(action) { _ in
                try await self.effects.revokeFacebook(appScopedId: id)
                return .done("permissions removed")
            }
        case .revokeSessions:
            return try await perform(action) { now in
                do {
                    // The first send time, so a send after a crash asks for exactly the same change.
                    try await self.effects.revokeSessions(uid: uid, validSince: (action.firstSentAt ?? now) / 1000)
                } catch ConnectorError.rejected(_, "USER_NOT_FOUND", _) {
                    // Gone since the plan: no session is left to end (its name update says the same). A failure made
                    // the run exit 1 for an account nobody can act on.
                    return .notPossible("the account no longer exists")
                }
                return .done("sessions ended (validSince set)")
            }
        default:
            return action
        }
    }

    private func reserveDeletion() -> Bool {
        let allowed = budget.withLock { remaining -> Bool in
            guard let left = remaining else { return true }
            guard left > 0 else { return false }
            remaining = left - 1
            return true
        }
        if !allowed {
            // The cap is of the whole run: a resume given a cap below what earlier sessions deleted read as one reached now.
            let before = startedBefore.withLock { $0 }
            halt(.stoppedByGuard("the deletion cap of \(settings.deletionCap ?? 0) accounts for this run is reached"
                + (before > 0 ? " (it counts the \(before) accounts whose deletion earlier sessions began)" : "") + "; the remaining deletions stay planned"))
        }
        return allowed
    }

    /// Gives back the place of an account whose deletion did not start after all (its policy kept it).
    private func releaseDeletion() {
        budget.withLock { remaining in remaining = remaining.map { $0 + 1 } }
    }

    func idempotencyKey(_ uid: String) -> String {
        String(SHA256Hasher.hexDigest("idpipe delete-data \(settings.runKey) \(uid)").prefix(32))
    }

    // MARK: - Recording

    /// Runs one step and records its end. It is recorded `sent` just before its first request that changes something
    /// leaves (`SendWatch`); a stop that comes before then leaves it as it was, for resume. A configuration error or a
    /// cancellation leaves the action `sent` (the next run sends it again); any other error fails this action only.
    private func perform(_ action: PendingAction, policy: String? = nil, _ step: @Sendable (Int64) async throws -> StepResult) async throws -> PendingAction {
        let now = clock()
        var updated = action
        updated.firstSentAt = action.firstSentAt ?? now
        let journal = self.journal
        let watch = SendWatch(mayStart: { [self] in !stopping }, beforeFirst: {
            try await journal.write([ActionUpdate(id: action.id, state: .sent, at: now)])
        })
        let update: ActionUpdate
        do {
            let firstSentAt = updated.firstSentAt!
            switch try await SendWatch.$current.withValue(watch, operation: { try await step(firstSentAt) }) {
            case .done(let result):
                update = ActionUpdate(id: action.id, state: .done, result: result, policy: policy, at: clock())
            case .deleted(let result, let count):
                update = ActionUpdate(id: action.id, state: .done, result: result, policy: policy, at: clock(), count: count)
            case .notPossible(let reason):
                update = ActionUpdate(id: action.id, state: .notPossible, reason: reason, policy: policy, at: clock())
            }
        } catch is SendWatch.NotStarted where !watch.started {
            return action
        } catch is SendWatch.NotStarted {
            // A later request of a step that has sent one (requests of a step at once): it stays `sent`, for resume.
            updated.state = .sent
            return updated
        } catch {
            update = ActionUpdate(id: action.id, state: .failed, reason: try failure(error), policy: policy, at: clock())
        }
        try await journal.write([update])
        count(update.state)
        updated.state = update.state
        updated.reason = update.reason ?? updated.reason
        return updated
    }

    /// The reason an action failed; rethrows what must not fail one action: a configuration error or spent retries (they
    /// stop the run) and a cancellation (the action stays `sent`, to be sent again by the next run).
    private func failure(_ error: any Error) throws -> String {
        if let error = error as? ConnectorError, error.stopsRun {
            halt(.stoppedByConfiguration(error.description))
            throw error
        }
        // Its retries spent, a minute or so of 5xx, 429 or timeouts: the service keeps failing. Failed one by one, every
        // account in flight was left half done for good (tokens revoked, stores emptied, the webhook failed, the account
        // kept) and resume had nothing to send; the run stops, and the action stays `sent` for resume.
        if case .exhausted(let service, let attempts, let last)? = error as? ConnectorError {
            let stopped = ConnectorError.unavailable(service: service, message: "gave up after \(attempts) attempts (last: \(last)): the service keeps failing")
            halt(.stoppedByConfiguration(stopped.description))
            throw stopped
        }
        if error is CancellationError { throw error }
        return "\(error)"
    }

    private func closeOne(_ action: PendingAction, _ state: ActionState, reason: String) async throws -> PendingAction {
        try await close([action], state, reason: reason, policy: nil)
        var updated = action
        updated.state = state
        updated.reason = reason
        return updated
    }

    private func close(_ actions: [PendingAction], _ state: ActionState, reason: String, policy: String?) async throws {
        let now = clock()
        try await journal.write(actions.map { ActionUpdate(id: $0.id, state: state, reason: reason, policy: policy, at: now) })
        for _ in actions { count(state) }
    }

    private func count(_ state: ActionState) {
        counters.withLock { counters in
            switch state {
            case .done: counters.actionsDone += 1
            case .failed: counters.actionsFailed += 1
            default: break
            }
        }
    }

    // MARK: - Batch deletion

    /// Takes what the queue holds at each slot of the batch-delete quota, up to 1000 accounts a call.
    private func runDeletions(_ queue: DeleteQueue) async throws {
        let interval = 1 / max(effects.batchDeleteRate, 0.001)
        var nextSlot = monotonic()
        try await withThrowingTaskGroup(of: Void.self) { group in
            while true {
                let wait = nextSlot - monotonic()
                if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
                // After a configuration stop, nothing more is sent: the queued accounts stay planned.
                if case .stoppedByConfiguration = stop.withLock({ $0 }) { break }
                guard let batch = await queue.take(max: IdentityToolkitClient.maxBatch) else { break }
                nextSlot = monotonic() + interval
                group.addTask { try await self.deleteBatch(batch) }
            }
            try await group.waitForAll()
        }
    }

    private func deleteBatch(_ batch: [DeleteQueue.Item]) async throws {
        let sentAt = clock()
        try await journal.write(batch.map { ActionUpdate(id: $0.actionId, state: .sent, at: sentAt) })
        var updates: [ActionUpdate] = []
        do {
            let failures = try await effects.deleteAccounts(batch.map(\.uid))
            let now = clock()
            for item in batch {
                if let message = failures[item.uid] {
                    updates.append(ActionUpdate(id: item.actionId, state: .failed, reason: message, policy: item.policy, at: now))
                } else {
                    updates.append(ActionUpdate(id: item.actionId, state: .done, result: "deleted (or already gone)", policy: item.policy, at: now))
                }
            }
        } catch {
            let reason = try failure(error)
            let now = clock()
            updates = batch.map { ActionUpdate(id: $0.actionId, state: .failed, reason: reason, policy: $0.policy, at: now) }
        }
        try await journal.write(updates)
        counters.withLock { counters in
            for update in updates {
                if update.state == .done { counters.actionsDone += 1; counters.deleted += 1 } else { counters.actionsFailed += 1 }
            }
        }
    }
}
