import Foundation

/// Time as the rate limiters and retries see it. Tests drive a manual clock instead of sleeping.
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
