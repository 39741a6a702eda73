import Dispatch
import Synchronization

/// The one worker pool: `DispatchQueue.concurrentPerform` over the cores. Call it from synchronous code
/// (never from an async context, where a blocking wait would stall the cooperative pool).
public struct WorkerPool: Sendable {
    public let width: Int

    public init(width: Int) {
        self.width = max(1, width)
    }

    /// Runs `body` for 0..<count concurrently and returns the results in index order.
    public func map<T: Sendable>(_ count: Int, _ body: @Sendable (Int) -> T) -> [T] {
        if count == 1 { return [body(0)] }
        let results = Mutex<[Int: T]>([:])
        DispatchQueue.concurrentPerform(iterations: count) { index in
            let value = body(index)
            results.withLock { $0[index] = value }
        }
        return results.withLock { dict in (0..<count).map { dict[$0]! } }
    }
}
