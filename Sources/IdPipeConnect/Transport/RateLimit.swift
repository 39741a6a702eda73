import Synchronization

/// A token bucket: `rate` requests per second on average, bursts of up to `burst`. Reservations that find the
/// bucket empty go into debt and are told how long to wait, so waiters are served in order without a queue.
/// Pure arithmetic on a time value: tests drive it with any clock.
public struct TokenBucket: Sendable, Equatable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var last: Double?
    /// No request starts before this (a `Retry-After` for the whole quota class).
    private var pausedUntil: Double = -.infinity

    public init(rate: Double, burst: Double = 1) {
        precondition(rate > 0 && burst >= 1)
        self.rate = rate
        self.burst = burst
        self.tokens = burst
    }

    /// Takes one token at `now`; returns how many seconds the caller must wait before sending.
    public mutating func reserve(now: Double) -> Double {
        let start = max(now, pausedUntil)
        if let last { tokens = min(burst, tokens + max(0, start - last) * rate) }
        last = start
        tokens -= 1
        let debtWait = tokens >= 0 ? 0 : -tokens / rate
        return start - now + debtWait
    }

    /// Stops every reservation until `time` (the service said "retry after").
    public mutating func pause(until time: Double) {
        pausedUntil = max(pausedUntil, time)
    }
}

/// A token bucket shared by all workers of one quota class (e.g. Identity Toolkit account updates).
public final class RateLimiter: Sendable {
    private let bucket: Mutex<TokenBucket>
    private let clock: any ServiceClock

    /// A limiter that allows a second's worth of requests at once (services without a strict per-second quota).
    public static func perSecond(_ rate: Double, clock: any ServiceClock) -> RateLimiter {
        RateLimiter(rate: rate, burst: max(1, rate), clock: clock)
    }

    public init(rate: Double, burst: Double = 1, clock: any ServiceClock) {
        self.bucket = Mutex(TokenBucket(rate: rate, burst: burst))
        self.clock = clock
    }

    /// Waits for a turn; returns how long it waited (seconds).
    @discardableResult
    /// `watch`: the apply step the turn is for, whose wait a stop cuts short while it has sent nothing (`SendWatch`).
    public func acquire(for watch: SendWatch? = nil) async throws -> Double {
        let now = clock.now()
        let wait = bucket.withLock { $0.reserve(now: now) }
        if let watch {
            try await watch.wait(seconds: wait, on: clock)
        } else {
            try await clock.sleep(seconds: wait)
        }
        return wait
    }

    public func pause(seconds: Double) {
        let until = clock.now() + seconds
        bucket.withLock { $0.pause(until: until) }
    }
}

/// Bounds how many requests to one service are in flight at once.
public final class ConcurrencyLimit: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    public init(_ limit: Int) {
        precondition(limit >= 1)
        state = Mutex(State(available: limit))
    }

    public func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    public func withSlot<T>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }
}
