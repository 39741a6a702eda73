import Foundation
import Synchronization
import Testing
import IdPipeTestSupport
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

@Suite struct IdHashSetTests {
    /// Against `Set<UInt64>`: random hashes, the hash 0, repeats, and hashes equal in their low bits (long probes).
    @Test func agreesWithASet() {
        var random = SeededGenerator(seed: 11)
        let ours = IdHashSet()
        var reference = Set<UInt64>()
        var disagreements: [UInt64] = []
        var inserted: [UInt64] = []
        for step in 0..<300_000 {
            let hash: UInt64 = switch step % 4 {
            case 0: random.next()
            case 1: UInt64.random(in: 0...50, using: &random)
            case 2: UInt64.random(in: 0...1000, using: &random) << 20
            default: inserted.randomElement(using: &random) ?? 0
            }
            // Warming the table ahead of inserts (as the plan's merge does) reads it and changes nothing.
            if step % 7 == 0 { ours.warm([hash, hash &+ 1, 0]) }
            if ours.insert(hash) != reference.insert(hash).inserted { disagreements.append(hash) }
            inserted.append(hash)
        }
        #expect(disagreements.isEmpty)
        #expect(ours.count == reference.count)
        // Every hash is still found after the set grew (a repeat is refused), and an unseen one is taken.
        for hash in reference.prefix(1000) {
            let added = ours.insert(hash)
            #expect(!added)
        }
        let unseen = ours.insert(12_345_678_901)
        #expect(unseen == !reference.contains(12_345_678_901))
    }

    @Test func startsFromTheHashesOfACheckpoint() {
        /// As a resumed plan fills it: sized for the hashes its store holds, then each inserted.
        func restored(_ saved: [UInt64]) -> IdHashSet {
            let set = IdHashSet(capacity: saved.count)
            for hash in saved { _ = set.insert(hash) }
            return set
        }
        let saved: [UInt64] = [0, 5, 1 << 40, 5]
        let set = restored(saved)
        #expect(set.count == 3)
        #expect(!set.insert(0) && !set.insert(1 << 40) && set.insert(6))

        // Enough hashes that the tables start larger than the smallest, some all in one table (the same top byte).
        var random = SeededGenerator(seed: 5)
        let many = (0..<60_000).map { index -> UInt64 in index % 3 == 0 ? UInt64(index) << 8 | 0xAB : random.next() }
        let large = restored(many + [0])
        #expect(large.count == Set(many + [0]).count)
        #expect(many.allSatisfy(large.contains) && large.contains(0))
        #expect(!large.contains(0xDEAD_BEEF_0000_0001) && large.insert(0xDEAD_BEEF_0000_0001) && large.contains(0xDEAD_BEEF_0000_0001))
    }
}

@Suite struct HashSlotsTests {
    /// The filter never turns away a hash a row has (added one by one or placed again when the table grew), and
    /// turns away most hashes no row has: about 1 in 10 gets through at this fill (1 in 8 when the table is half
    /// full, just before it grows), and each of those costs a probe.
    @Test func filterKeepsEveryRowAndTurnsMostOthersAway() {
        var random = SeededGenerator(seed: 5)
        var hashes: ContiguousArray<UInt64> = []
        var slots = HashSlots()
        #expect(!slots.mayContain(random.next()))
        for _ in 0..<100_000 {
            let hash = random.next()
            let (slot, found) = slots.find(hash) { hashes[$0] == hash }
            guard found == nil else { continue }
            hashes.append(hash)
            slots.add(hashes, at: slot)
        }
        #expect(hashes.allSatisfy(slots.mayContain))
        let through = (0..<100_000).filter { _ in slots.mayContain(random.next()) }.count
        #expect(through < 15_000, "\(through) of 100,000 absent hashes got through")
    }

    /// Rows whose hashes share the high half (the slot's tag) and the low bits (the first slot): the owner's
    /// `matches` tells them apart, and every row is found again after the table grew.
    @Test func sameTagRowsAreToldApartByTheOwner() {
        var hashes: ContiguousArray<UInt64> = []
        var slots = HashSlots()
        slots.rebuild(hashes)
        let shared: UInt64 = 0xABCD_1234_0000_0000
        for row in 0..<100 {
            let hash = shared | UInt64(row) << 16 | UInt64(row % 3)
            let (slot, found) = slots.find(hash) { hashes[$0] == hash }
            #expect(found == nil)
            hashes.append(hash)
            slots.add(hashes, at: slot)
        }
        for (row, hash) in hashes.enumerated() {
            #expect(slots.find(hash) { hashes[$0] == hash }.row == row)
        }
        #expect(slots.find(shared | 0xFFFF) { hashes[$0] == shared | 0xFFFF }.row == nil)
    }
}
