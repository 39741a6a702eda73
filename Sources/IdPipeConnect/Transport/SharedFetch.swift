/// A value fetched once and shared (an access token): concurrent callers wait for the one fetch in flight,
/// and the value is reused while `isFresh` says so.
public actor SharedFetch<Value: Sendable> {
    private var current: Value?
    private var pending: Task<Value, any Error>?

    public init() {}

    public func get(isFresh: @Sendable (Value) -> Bool = { _ in true },
                    fetch: @escaping @Sendable () async throws -> Value) async throws -> Value {
        if let current, isFresh(current) { return current }
        if let pending { return try await pending.value }
        let task = Task { try await fetch() }
        pending = task
        defer { pending = nil }
        let fresh = try await task.value
        current = fresh
        return fresh
    }

    /// Forgets the value if `matches` (the service refused it), so the next `get` fetches again.
    public func invalidate(where matches: @Sendable (Value) -> Bool) {
        if let current, matches(current) { self.current = nil }
    }
}
