import IdPipeCore
import IdPipeStore
import Synchronization

/// Records action state changes with group commit: each caller waits until its change is in the store, and
/// every change that arrives while one transaction is being written goes into the next one. Under load this
/// writes hundreds of changes per transaction; alone, a change is written at once.
final class Journal: Sendable {
    private struct State {
        var pending: [ActionUpdate] = []
        var waiters: [CheckedContinuation<Void, any Error>] = []
        var flushing = false
    }

    private let store: StateStore
    private let state = Mutex(State())

    init(store: StateStore) {
        self.store = store
    }

    func write(_ updates: [ActionUpdate]) async throws {
        guard !updates.isEmpty else { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let start = state.withLock { state -> Bool in
                state.pending.append(contentsOf: updates)
                state.waiters.append(continuation)
                if state.flushing { return false }
                state.flushing = true
                return true
            }
            if start { Task { await self.flush() } }
        }
    }

    private func flush() async {
        while true {
            let next = state.withLock { state -> ([ActionUpdate], [CheckedContinuation<Void, any Error>])? in
                guard !state.pending.isEmpty else {
                    state.flushing = false
                    return nil
                }
                defer { state.pending = []; state.waiters = [] }
                return (state.pending, state.waiters)
            }
            guard let (updates, waiters) = next else { return }
            do {
                try await store.record(updates)
                for waiter in waiters { waiter.resume() }
            } catch {
                for waiter in waiters { waiter.resume(throwing: error) }
            }
        }
    }
}

/// Accounts ready for `accounts:batchDelete`, waiting for the next slot of the batch-delete quota.
/// Producers wait when it holds `highWater` accounts, so memory stays bounded however fast revocations go.
final class DeleteQueue: Sendable {
    struct Item: Sendable {
        var actionId: Int64
        var uid: String
        var policy: String
    }

    private struct State {
        var items: [Item] = []
        var closed = false
        var consumer: CheckedContinuation<Void, Never>?
        var producers: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    let highWater: Int

    init(highWater: Int) {
        self.highWater = highWater
    }

    func push(_ item: Item) async {
        while true {
            let admitted = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                guard state.items.count < highWater || state.closed else { return (false, nil) }
                state.items.append(item)
                defer { state.consumer = nil }
                return (true, state.consumer)
            }
            if admitted.0 {
                admitted.1?.resume()
                return
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wake = state.withLock { state -> Bool in
                    if state.items.count < highWater || state.closed { return true }
                    state.producers.append(continuation)
                    return false
                }
                if wake { continuation.resume() }
            }
        }
    }

    /// Up to `max` accounts, waiting for at least one; nil once closed and empty.
    func take(max: Int) async -> [Item]? {
        while true {
            let taken = state.withLock { state -> ([Item]?, [CheckedContinuation<Void, Never>], Bool) in
                if !state.items.isEmpty {
                    let batch = Array(state.items.prefix(max))
                    state.items.removeFirst(batch.count)
                    let producers = state.producers
                    state.producers = []
                    return (batch, producers, false)
                }
                return (nil, [], state.closed)
            }
            for producer in taken.1 { producer.resume() }
            if let batch = taken.0 { return batch }
            if taken.2 { return nil }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wake = state.withLock { state -> Bool in
                    if !state.items.isEmpty || state.closed { return true }
                    state.consumer = continuation
                    return false
                }
                if wake { continuation.resume() }
            }
        }
    }

    /// No more accounts will come: the consumer drains what is queued, then stops.
    func close() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            defer { state.consumer = nil; state.producers = [] }
            return state.producers + (state.consumer.map { [$0] } ?? [])
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Empties the queue without sending (a stop): the accounts stay planned for the next run.
    func drop() {
        state.withLock { $0.items = [] }
    }
}
