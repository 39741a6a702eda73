import Dispatch
import Foundation
import Synchronization

/// The plan's decoding workers: `width` threads that take the parts of the batches in the order they were queued, one
/// batch after the other with no wait in between. Each batch used to be decoded with `WorkerPool.map`, which returns
/// when the batch's last part is done: while that part was decoded the other core had no part to take, and the
/// reading thread waited about 0.1 s of a 1M-account plan there. Now the next batch's parts are queued behind it.
/// `finish` stops the threads (after the parts queued before it, which it skips when asked to cancel).
final class PartQueue: Sendable {
    private let width: Int
    private let jobs = Mutex<[(@Sendable () -> Void)?]>([])
    private let queued = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()
    /// Parts queued under an earlier generation are skipped (`dropQueued`).
    private let generation = Atomic<Int>(0)

    init(width: Int) {
        self.width = max(1, width)
        for _ in 0..<self.width {
            stopped.enter()
            Thread.detachNewThread { [self] in
                while true {
                    queued.wait()
                    guard let job = jobs.withLock({ $0.removeFirst() }) else { break }
                    job()
                }
                stopped.leave()
            }
        }
    }

    /// Queues the parts of `batch`, for `merge` to take (`PendingBatch.takeParts`) once they are all decoded.
    func start<Part>(_ batch: PendingBatch<Part>) {
        let current = generation.load(ordering: .relaxed)
        jobs.withLock { jobs in
            for part in 0..<batch.batch.partCount {
                jobs.append { [self] in batch.decode(part, skip: generation.load(ordering: .relaxed) != current) }
            }
        }
        for _ in 0..<batch.batch.partCount { queued.signal() }
    }

    /// Skips the parts queued so far that no worker has started: their batches will not be merged (the plan stopped, or
    /// reads again from an earlier place). Such a batch counts as decoded, with no parts to take.
    func dropQueued() {
        generation.add(1, ordering: .relaxed)
    }

    /// Waits until the threads have stopped. With `cancel`, the parts still queued are skipped (`dropQueued`).
    func finish(cancel: Bool) {
        if cancel { dropQueued() }
        jobs.withLock { jobs in jobs.append(contentsOf: repeatElement(nil, count: width)) }
        for _ in 0..<width { queued.signal() }
        stopped.wait()
    }
}

/// A batch read, whose parts the workers decode and process (`PartQueue`), waiting to be merged. A class, so that the
/// merge can take the parts out (`takeParts`) and own the only reference to them: handed on in a struct, the array
/// stayed shared with the copy the read-ahead held, and the merge's first change to each part (taking its kept
/// accounts out) copied the part's whole array of kept accounts, retaining every string in it, on the thread every
/// batch waits for.
final class PendingBatch<Part: Sendable>: Sendable {
    let batch: any RawBatch
    private let make: @Sendable (any RawBatch, Int) -> Part
    private let parts: Mutex<[Part?]>
    private let remaining: Atomic<Int>
    private let done = DispatchGroup()

    /// `make` decodes and processes one part of a batch (this one, or the rest of it that `RawBatch.remainder` gives).
    init(_ batch: any RawBatch, make: @escaping @Sendable (any RawBatch, Int) -> Part) {
        self.batch = batch
        self.make = make
        parts = Mutex([Part?](repeating: nil, count: batch.partCount))
        remaining = Atomic(batch.partCount)
        done.enter()
        if batch.partCount == 0 { done.leave() }
    }

    /// Decodes part `part` (on a worker). The worker that finishes the batch's last part also reads its remainder, if any.
    fileprivate func decode(_ part: Int, skip: Bool) {
        if !skip {
            let processed = make(batch, part)
            parts.withLock { $0[part] = processed }
        }
        guard remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        if !skip, let (after, rest) = batch.remainder() {
            let processed = make(rest, 0)
            parts.withLock { parts in
                parts.removeSubrange((after + 1)...)
                parts.append(processed)
            }
        }
        done.leave()
    }

    /// The parts, once, when they are all decoded: the batch keeps none of them.
    func takeParts() -> [Part] {
        done.wait()
        return parts.withLock { parts in
            var taken: [Part?] = []
            swap(&taken, &parts)
            return taken.map { part in
                guard let part else { preconditionFailure("a part of a batch dropped before it was decoded was taken") }
                return part
            }
        }
    }
}
