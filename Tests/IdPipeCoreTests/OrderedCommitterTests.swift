import Foundation
import Synchronization
import Testing
@testable import IdPipeCore

/// The plan's writer: batches are written in the order submitted, one being written and one waiting for it at most;
/// a failed write is reported, and no batch after it is written.
@Suite struct OrderedCommitterTests {
    /// Records the batches it is given (by their next sequence number), slowly, and fails the one it is told to.
    final class SlowStore: PlanStore {
        let failing: Int64?
        let written = Mutex<[Int64]>([])
        init(failing: Int64?) { self.failing = failing }
        func loadRun() throws -> RunRecord? { nil }
        func saveRun(_ run: RunRecord) throws {}
        func loadCheckpoint() throws -> PlanCheckpoint? { nil }
        func seenIdCount() throws -> Int { 0 }
        func forEachSeenIdHashes(_ body: ([UInt64]) throws -> Void) throws {}
        func forEachImportKeyHashes(_ body: ([UInt64]) throws -> Void) throws {}
        func quarantinedIds() throws -> Set<String> { [] }
        func plannedDeletionsOfRepeatedIds() -> Int { 0 }
        func commit(_ batch: consuming PlanBatch) throws {
            Thread.sleep(forTimeInterval: 0.005)
            struct Refused: Error {}
            if batch.checkpoint.nextSequence == failing { throw Refused() }
            written.withLock { $0.append(batch.checkpoint.nextSequence) }
        }
    }

    static func batch(_ number: Int64) -> PlanBatch {
        PlanBatch(checkpoint: PlanCheckpoint(input: InputCheckpoint(offset: number, line: 1, records: number, state: nil), inputPrefixSHA256: "",
                                             tally: Tally(), nextSequence: number, importFileLength: 0))
    }

    @Test func writesInOrder() throws {
        let store = SlowStore(failing: nil)
        let committer = OrderedCommitter(store: store)
        for number in 1...12 { committer.submit(Self.batch(Int64(number))) }
        try committer.drain()
        #expect(store.written.withLock { $0 } == (1...12).map(Int64.init))
    }

    @Test func stopsAtAFailedWrite() {
        let store = SlowStore(failing: 3)
        let committer = OrderedCommitter(store: store)
        for number in 1...8 { committer.submit(Self.batch(Int64(number))) }
        #expect(throws: (any Error).self) { try committer.drain() }
        #expect(store.written.withLock { $0 } == [1, 2])
    }
}
