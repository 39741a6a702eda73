import Foundation
import Synchronization
import Testing
@testable import IdPipeCore

@Suite struct WorkerPoolTests {
    /// Runs 12 slow items and returns the results and the most items that ran at once.
    private func run(width: Int) -> (results: [Int], mostAtOnce: Int) {
        let running = Mutex((now: 0, most: 0))
        let results = WorkerPool(width: width).map(12) { index in
            running.withLock { state in
                state.now += 1
                state.most = max(state.most, state.now)
            }
            Thread.sleep(forTimeInterval: 0.01)
            running.withLock { $0.now -= 1 }
            return index * index
        }
        return (results, running.withLock { $0.most })
    }

    @Test(arguments: [1, 2])
    func runsAtMostWidthAtOnceAndKeepsTheOrder(width: Int) {
        let (results, mostAtOnce) = run(width: width)
        #expect(results == (0..<12).map { $0 * $0 })
        // `--workers 1` ran on every core before: `concurrentPerform` does not know the width.
        #expect(mostAtOnce <= width)
        #expect(mostAtOnce >= 1)
    }

    @Test func handlesNoneAndOne() {
        #expect(WorkerPool(width: 4).map(0) { $0 }.isEmpty)
        #expect(WorkerPool(width: 4).map(1) { $0 + 7 } == [7])
    }
}
