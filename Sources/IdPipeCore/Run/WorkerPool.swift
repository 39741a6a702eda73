import Dispatch
import Synchronization

/// A worker pool for a few jobs at once: `DispatchQueue.concurrentPerform` over the cores, at most `width` threads at a
/// time (the side inputs, the report formats). A plan's batches are decoded by its own threads (`PartQueue`), `width`
/// of them.
/// Call it from synchronous code (never from an async context, where a blocking wait would stall the
/// cooperative pool).
public struct WorkerPool: Sendable {
    public let width: Int

    public init(width: Int) {
        self.width = max(1, width)
    }

    /// Runs `body` for 0..<count, on up to `width` threads, and returns the results in index order.
    public func map<T: Sendable>(_ count: Int, _ body: @Sendable (Int) -> T) -> [T] {
        if count <= 1 || width == 1 { return (0..<count).map(body) }
        // `concurrentPerform` alone would use every core whatever the width (`--workers 1` ran on all of them):
        // `width` runners take the indices in turn instead.
        let next = Mutex(0)
        let results = Mutex([T?](repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: min(width, count)) { _ in
            while true {
                let index = next.withLock { index in
                    defer { index += 1 }
                    return index
                }
                guard index < count else { return }
                let value = body(index)
                results.withLock { $0[index] = value }
            }
        }
        return results.withLock { slots in slots.map { $0! } }
    }
}
