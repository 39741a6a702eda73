import Foundation
import Synchronization

/// Time as the rate limiters and retries see it. Tests drive a `ManualClock` instead of sleeping.
public protocol ServiceClock: Sendable {
    /// Seconds since an arbitrary fixed origin.
    func now() -> Double
    func sleep(seconds: Double) async throws
    /// Wall-clock Unix time in seconds, for JWT `iat`/`exp` and `validSince`.
    func unixTime() -> Int64
}

public struct SystemServiceClock: ServiceClock {
    private let origin = ContinuousClock.now

    public init() {}

    public func now() -> Double {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    public func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return }
        try await Task.sleep(for: .nanoseconds(Int64(seconds * 1e9)))
    }

    public func unixTime() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec)
    }
}

/// A clock that moves only when told to, or when something sleeps on it (time jumps to the wake-up).
/// Records every sleep so tests can check the waits a limiter or a retry asked for.
public final class ManualClock: ServiceClock {
    private struct State {
        var now: Double
        var unix: Int64
        var sleeps: [Double] = []
    }

    private let state: Mutex<State>

    public init(now: Double = 0, unixTime: Int64 = 1_795_264_796) {
        state = Mutex(State(now: now, unix: unixTime))
    }

    public func now() -> Double { state.withLock { $0.now } }

    public func unixTime() -> Int64 { state.withLock { $0.unix + Int64($0.now) } }

    public func sleep(seconds: Double) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.sleeps.append(seconds)
            if seconds > 0 { state.now += seconds }
        }
    }

    public func advance(by seconds: Double) {
        state.withLock { $0.now += seconds }
    }

    public var sleeps: [Double] { state.withLock { $0.sleeps } }
}
