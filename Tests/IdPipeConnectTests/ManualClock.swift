import IdPipeConnect
import Synchronization

/// A clock that moves only when told to, or when something sleeps on it (time jumps to the wake-up).
/// Records every sleep so tests can check the waits a limiter or a retry asked for.
final class ManualClock: ServiceClock {
    private struct State {
        var now: Double
        var unix: Int64
        var sleeps: [Double] = []
    }

    private let state: Mutex<State>

    init(now: Double = 0, unixTime: Int64 = 1_795_264_796) {
        state = Mutex(State(now: now, unix: unixTime))
    }

    func now() -> Double { state.withLock { $0.now } }

    func unixTime() -> Int64 { state.withLock { $0.unix + Int64($0.now) } }

    func sleep(seconds: Double) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.sleeps.append(seconds)
            if seconds > 0 { state.now += seconds }
        }
    }

    func advance(by seconds: Double) {
        state.withLock { $0.now += seconds }
    }

    var sleeps: [Double] { state.withLock { $0.sleeps } }
}
