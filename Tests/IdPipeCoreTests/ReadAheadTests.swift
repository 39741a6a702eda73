import Synchronization
import Testing
@testable import IdPipeCore

@Suite struct ReadAheadTests {
    struct Failure: Error, Equatable {
        let at: Int
    }

    /// Every item, in order, across chunk boundaries (including a last chunk that is not full, and none at all).
    @Test(arguments: [0, 1, 6, 7, 100, 1000])
    func handsOverEverythingInOrder(count: Int) throws {
        var seen: [Int] = []
        try ReadAhead<Int>(chunkSize: 7, depth: 2).run(produce: { emit in
            for item in 0..<count { try emit(item) }
        }) { seen.append($0) }
        #expect(seen == Array(0..<count))
    }

    /// The producer's error comes after the items it produced before failing.
    @Test func aProducerErrorComesAfterItsItems() {
        var seen: [Int] = []
        let error = #expect(throws: Failure.self) {
            try ReadAhead<Int>(chunkSize: 4, depth: 2).run(produce: { emit in
                for item in 0..<10 { try emit(item) }
                throw Failure(at: 10)
            }) { seen.append($0) }
        }
        #expect(error == Failure(at: 10))
        #expect(seen == Array(0..<10))
    }

    /// The consumer's error stops the producer within a few chunks, and is the one thrown.
    @Test func aConsumerErrorStopsTheProducer() {
        let produced = Atomic<Int>(0)
        let error = #expect(throws: Failure.self) {
            try ReadAhead<Int>(chunkSize: 4, depth: 2).run(produce: { emit in
                for item in 0..<100_000 {
                    produced.add(1, ordering: .relaxed)
                    try emit(item)
                }
            }) { item in
                if item == 5 { throw Failure(at: item) }
            }
        }
        #expect(error == Failure(at: 5))
        #expect(produced.load(ordering: .relaxed) < 100)
    }
}
