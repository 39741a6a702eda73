import Dispatch
import Foundation
import Synchronization

/// Runs a producer on a thread of its own, a few chunks ahead of the consumer on the calling thread, in order: a
/// plan reads and decodes its next batch while the one before is merged; a report reads rows out of the store while
/// the ones before are rendered. The producer has stopped when `run` returns.
/// An error on either side stops both: the producer's after the consumer has had everything produced before it,
/// the consumer's after the producer has stopped.
public final class ReadAhead<Item: Sendable>: Sendable {
    private enum Chunk {
        case items([Item])
        case end((any Error)?)
    }

    private struct Stopped: Error {}

    private let chunkSize: Int
    private let free: DispatchSemaphore
    private let filled = DispatchSemaphore(value: 0)
    private let queue = Mutex<[Chunk]>([])
    private let stop = Atomic<Bool>(false)

    /// At most `depth` chunks of `chunkSize` items wait for the consumer.
    public init(chunkSize: Int = 256, depth: Int = 4) {
        self.chunkSize = chunkSize
        free = DispatchSemaphore(value: depth)
    }

    public func run(produce: @escaping @Sendable (_ emit: (Item) throws -> Void) throws -> Void, consume: (Item) throws -> Void) throws {
        Thread.detachNewThread { [self] in
            var pending: [Item] = []
            pending.reserveCapacity(chunkSize)
            do {
                try produce { item in
                    pending.append(item)
                    guard pending.count == chunkSize else { return }
                    guard !stop.load(ordering: .relaxed) else { throw Stopped() }
                    put(.items(pending))
                    pending = []
                    pending.reserveCapacity(chunkSize)
                }
                if !pending.isEmpty { put(.items(pending)) }
                put(.end(nil))
            } catch is Stopped {
                put(.end(nil))
            } catch {
                // What was produced before the error still reaches the consumer, ahead of the error.
                if !pending.isEmpty { put(.items(pending)) }
                put(.end(error))
            }
        }
        var failure: (any Error)?
        while true {
            filled.wait()
            let chunk = queue.withLock { $0.removeFirst() }
            free.signal()
            switch chunk {
            case .items(let items):
                guard failure == nil else { continue }
                do {
                    for item in items { try consume(item) }
                } catch {
                    failure = error
                    stop.store(true, ordering: .relaxed)
                }
            case .end(let producerFailure):
                if let error = failure ?? producerFailure { throw error }
                return
            }
        }
    }

    private func put(_ chunk: Chunk) {
        free.wait()
        queue.withLock { $0.append(chunk) }
        filled.signal()
    }
}
