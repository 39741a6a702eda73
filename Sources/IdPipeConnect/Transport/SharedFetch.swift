/// A value fetched once and shared (an access token): concurrent callers wait for the one fetch in flight,
/// and the value is reused while `isFresh` says so.
public actor SharedFetch<Value: Sendable> {
    private var current: Value?
    private var pending: Task<Value, any Error>?

    public init() {}

    public func get(isFresh: @Sendable (Value) -> Bool = { _ in true },
                    fetch: @escaping @Sendable () async throws -> Value) async throws -> Value {
        if let current, isFresh(current) { return current }
        if let pending { return try await Self.value(of: pending) }
        let task = Task { try await fetch() }
        pending = task
        defer { pending = nil }
        let fresh = try await Self.value(of: task)
        current = fresh
        return fresh
    }

    /// Waits for the fetch. A waiter cancelled cancels the fetch (its other waiters are of the same run, which is
    /// ending): a token endpoint that hung kept a stopped apply 5 minutes past its 30 s of grace, the fetch going on
    /// through its retries, out of reach of the cancel.
    private static func value(of task: Task<Value, any Error>) async throws -> Value {
        try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    /// Forgets the value if `matches` (the service refused it), so the next `get` fetches again.
    public func invalidate(where matches: @Sendable (Value) -> Bool) {
        if let current, matches(current) { self.current = nil }
    }
}
