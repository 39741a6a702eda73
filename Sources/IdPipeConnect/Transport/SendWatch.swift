import Synchronization

/// One step of an apply, as the requests sent in its task see it (a task-local value): the step is recorded as sent
/// just before its first request that changes something leaves, not before it waits its turn, and until then every
/// request of it is refused once the run is stopping (a read before the change, as a name update's lookup, starts
/// nothing). A stop then starts no step that had not sent anything yet: with 64 accounts in flight waiting on a
/// rate of 2 updates a second, a SIGTERM was followed by 60 more updates over 30 s, and resume counted steps never
/// sent as "sent again". A step that has sent a request goes on to its end (its retries, its next request).
public final class SendWatch: Sendable {
    @TaskLocal public static var current: SendWatch?

    /// Thrown in place of a step's first request once the run is stopping: nothing of the step was sent.
    public struct NotStarted: Error, CustomStringConvertible {
        public var description: String { "not started: the run is stopping" }
    }

    private let mayStart: @Sendable () -> Bool
    private let beforeFirst: @Sendable () async throws -> Void
    private let first = Mutex<Task<Void, any Error>?>(nil)

    /// `mayStart`: false once the run is stopping. `beforeFirst`: records the step as sent; awaited by every request of
    /// the step before it leaves.
    public init(mayStart: @escaping @Sendable () -> Bool, beforeFirst: @escaping @Sendable () async throws -> Void) {
        self.mayStart = mayStart
        self.beforeFirst = beforeFirst
    }

    /// Waits a turn of a rate limit (`seconds` on `clock`). A step that has sent nothing yet stops waiting once the run is
    /// stopping, looked at every quarter second: a stopped apply ended only when the last waiter's turn came (11 s at
    /// 2 updates a second, 30 s and more with a larger queue), though none of them would be sent.
    func wait(seconds: Double, on clock: any ServiceClock) async throws {
        var left = seconds
        while left > 0 {
            // Begun, or not to begin: one look, under the lock that `willSend` starts the step under.
            let begun = try first.withLock { task throws -> Bool in
                if task != nil { return true }
                guard mayStart() else { throw NotStarted() }
                return false
            }
            if begun { return try await clock.sleep(seconds: left) }
            let slice = min(left, 0.25)
            try await clock.sleep(seconds: slice)
            left -= slice
        }
    }

    /// Whether a request of the step that changes something has left (or is leaving).
    public var started: Bool { first.withLock { $0 != nil } }

    /// Called by a channel before each attempt leaves (and by a stand-in for the services, in tests).
    public func willSend(readOnly: Bool = false) async throws {
        let recording = try first.withLock { task throws -> Task<Void, any Error>? in
            if let task { return task }
            guard mayStart() else { throw NotStarted() }
            if readOnly { return nil }
            let made = Task { try await beforeFirst() }
            task = made
            return made
        }
        try await recording?.value
    }
}
