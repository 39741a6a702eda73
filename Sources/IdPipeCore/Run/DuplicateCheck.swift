/// The plan's duplicate-id check, in memory that stops growing at `limit` ids.
///
/// Up to `limit` accepted ids it holds the hash of every one (`IdHashSet`, 11 to 21 bytes an id). Past that, when the
/// input can be read a second time, it surveys the rest of the input once (`PlanRunner.surveyIds`): the ids accepted so
/// far and the ids of every record still to come go through a scratch file, and what comes back is the few hashes that
/// occur more than once among them, with those of them already accepted. Every other id of the rest of the input occurs
/// once in all of it, so it cannot be a duplicate, and nothing needs to be kept of it. The check then holds only the
/// repeated hashes: memory grows with the number of duplicates, not of accounts. The survey reads every record's id,
/// rows the plan will quarantine for something else included: a hash counted twice for nothing is only kept for nothing.
/// That the second reading found the records the plan read is checked at the plan's end, from the accepted ids in the
/// store (`PlanRunner.unmatchedAfterSurvey`).
final class DuplicateCheck {
    /// The default `limit`: the set of 2M hashes takes 22 to 42 MB.
    static let defaultLimit = 2_000_000

    let limit: Int
    /// Every id accepted so far, until the survey.
    private var all: IdHashSet? = IdHashSet()
    /// After the survey: the hashes that occur more than once among the ids accepted before it and the rest of the
    /// input's, and those of them accepted since the plan began.
    private var repeated = IdHashSet()
    private var repeatedAccepted = IdHashSet()

    init(limit: Int = defaultLimit) {
        self.limit = limit
    }

    /// How many ids the set of every id holds (0 after the survey).
    var count: Int { all?.count ?? 0 }
    /// Whether the set of every id has grown past `limit` (and no survey gave up: `keepEveryId`).
    var isFull: Bool { !keepsEveryId && count > limit }
    private var keepsEveryId = false

    /// After a survey that could not read the input to its end: the check goes on holding every id, as it did.
    func keepEveryId() {
        keepsEveryId = true
    }

    /// Takes the ids accepted by committed batches, as a resumed plan reads them back: `count` of them, in batches.
    func restore(count: Int, from batches: ((([UInt64]) throws -> Void)) throws -> Void) rethrows {
        if let all, all.count == 0 { self.all = IdHashSet(capacity: count) }
        try batches { hashes in for hash in hashes { _ = insert(hash) } }
    }

    /// True when no earlier accepted id has this hash; the id is accepted then.
    @inline(__always)
    func insert(_ hash: UInt64) -> Bool {
        if let all { return all.insert(hash) }
        return !repeated.contains(hash) || repeatedAccepted.insert(hash)
    }

    /// Whether an id with this hash was accepted already; nothing is accepted. (After the survey, only the hashes that repeat
    /// are held: any other is no earlier account's.)
    func contains(_ hash: UInt64) -> Bool {
        all?.contains(hash) ?? repeatedAccepted.contains(hash)
    }

    /// Reads ahead what inserting these will read (`IdHashSet.warm`).
    func warm(_ upcoming: some Sequence<UInt64>) {
        all?.warm(upcoming)
    }

    /// The set of every accepted id, while the check holds it (nil after the survey).
    var acceptedIds: IdHashSet? { all }

    /// Hands over every accepted id's hash (before the survey).
    func forEachAccepted(_ body: (UInt64) throws -> Void) rethrows {
        try all?.forEach(body)
    }

    /// Gives up the set of every id for what the survey found.
    func narrow(to survey: HashSpill.Repeats) {
        all = nil
        repeated = survey.repeated
        repeatedAccepted = survey.accepted
    }
}

/// Where the survey puts the hashes it reads (`HashSpill`): bytes appended, then read back from anywhere. A file with no
/// name beside the state store (IdPipeExtract's `ScratchFile`), or memory in tests.
public protocol ScratchSpace: AnyObject {
    /// Writes the bytes after those written before, and returns the offset they start at.
    func append(_ bytes: UnsafeRawBufferPointer) throws -> Int64
    /// Fills `buffer` with the bytes from `offset`.
    func read(into buffer: UnsafeMutableRawBufferPointer, from offset: Int64) throws
}

/// Hashes written to scratch space in 256 partitions by their top byte, each marked accepted or not, and read back a
/// partition at a time to find the ones that occur more than once: a partition of a 10M-account plan is 40,000 hashes.
final class HashSpill {
    /// What the partitions held more than once, and which of those were marked accepted.
    struct Repeats {
        var repeated = IdHashSet()
        var accepted = IdHashSet()
    }

    private static let partitions = 256
    /// Hashes a partition gathers before they are written (16 KB; 4 MB for all of them).
    private static let chunk = 2048

    private let space: any ScratchSpace
    /// Partition p gathers its hashes in `buffers[p * chunk ..< p * chunk + filled[p]]`. Raw memory: an array of arrays
    /// cost a uniqueness check and an exclusivity check on each hash added (3 % of a plan that surveys its whole input).
    private let buffers = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: partitions * chunk)
    private let filled = UnsafeMutableBufferPointer<Int>.allocate(capacity: partitions)
    /// Where each partition's written chunks are: offset in the space and count of hashes.
    private var chunks: [[(offset: Int64, count: Int)]] = Array(repeating: [], count: partitions)

    init(_ space: any ScratchSpace) {
        self.space = space
        filled.initialize(repeating: 0)
    }

    deinit {
        buffers.deallocate()
        filled.deallocate()
    }

    private func buffer(_ partition: Int) -> UnsafeMutableBufferPointer<UInt64> {
        UnsafeMutableBufferPointer(rebasing: buffers[partition * Self.chunk..<partition * Self.chunk + filled[partition]])
    }

    /// Adds a hash, marked `accepted` or not. The partition keeps the other 56 bits, shifted up past the mark.
    @inline(__always)
    func add(_ hash: UInt64, accepted: Bool) throws {
        let partition = Int(truncatingIfNeeded: hash >> 56)
        buffers[partition * Self.chunk + filled[partition]] = hash << 8 | (accepted ? 1 : 0)
        filled[partition] += 1
        if filled[partition] == Self.chunk { try flush(partition) }
    }

    private func flush(_ partition: Int) throws {
        let offset = try space.append(UnsafeRawBufferPointer(buffer(partition)))
        chunks[partition].append((offset, filled[partition]))
        filled[partition] = 0
    }

    /// Reads each partition back, sorted, and keeps the hashes found more than once.
    func repeats() throws -> Repeats {
        let found = Repeats()
        for partition in 0..<Self.partitions {
            var values = [UInt64](repeating: 0, count: chunks[partition].reduce(0) { $0 + $1.count })
            var read = 0
            try values.withUnsafeMutableBytes { bytes in
                for (offset, count) in chunks[partition] {
                    try space.read(into: UnsafeMutableRawBufferPointer(rebasing: bytes[read * 8..<(read + count) * 8]), from: offset)
                    read += count
                }
            }
            values.append(contentsOf: buffer(partition))
            filled[partition] = 0
            values.sort()
            var index = 0
            while index < values.count {
                let key = values[index] >> 8
                var end = index + 1
                var accepted = values[index] & 1
                while end < values.count && values[end] >> 8 == key {
                    accepted |= values[end] & 1
                    end += 1
                }
                if end - index > 1 {
                    let hash = UInt64(partition) << 56 | key
                    _ = found.repeated.insert(hash)
                    if accepted != 0 { _ = found.accepted.insert(hash) }
                }
                index = end
            }
        }
        return found
    }
}

extension PlanRunner {
    /// Reads the input from `start` to its end once, for its records' ids only, and finds with the ids accepted before
    /// `start` the hashes that occur more than once (`DuplicateCheck`). The records are read as the plan reads them and
    /// decoded by its decoders for their ids alone (`RawBatch.decodeIds`), on its workers (behind the parts already
    /// queued), two batches at a time; a batch that does not
    /// start where the one before it ended is read again, as the plan does. `progress` gets the offset reached after each
    /// batch, and may throw to stop. Throws `SurveyIncomplete` when a record cannot be read, a batch read again does not
    /// follow either, or reading ends before the end of the file: the main pass decides what that means, and the check
    /// keeps every id.
    func surveyIds(from start: InputCheckpoint, makeScratch: () throws -> any ScratchSpace,
                   openSource: (InputCheckpoint) throws -> any AccountSource, queue: PartQueue,
                   accepted: ((UInt64) throws -> Void) throws -> Void, progress: (Int64) throws -> Void) throws -> HashSpill.Repeats {
        let spill = HashSpill(try makeScratch())
        try accepted { try spill.add($0, accepted: true) }
        let source = try openSource(start)
        let (records, parts) = (batchRecords, workers * 4)
        func read() throws -> PendingBatch<SurveyedPart>? {
            guard let batch = try source.nextBatch(records: records, parts: parts) else { return nil }
            let pending = PendingBatch(batch) { batch, part in Self.idHashes(batch, part: part) }
            queue.start(pending)
            return pending
        }
        var readAgainFrom: Int64 = -1
        var reached = start
        var current = try read()
        while let batch = current {
            let upcoming = try read()
            for part in batch.takeParts() {
                guard let hashes = part.hashes else {
                    _ = upcoming?.takeParts()
                    throw SurveyIncomplete(reason: "a record after line \(reached.line) cannot be read")
                }
                for hash in hashes { try spill.add(hash, accepted: false) }
            }
            reached = batch.batch.checkpoint
            try progress(reached.offset)
            guard let upcoming, !source.follows(upcoming.batch, after: batch.batch) else {
                current = upcoming
                continue
            }
            // Read after a wrong guess of where `batch` ends: its parts are waited for and dropped.
            _ = upcoming.takeParts()
            guard reached.offset != readAgainFrom else {
                throw SurveyIncomplete(reason: "the batch read again after line \(reached.line) does not follow either")
            }
            readAgainFrom = reached.offset
            source.readAgain(after: batch.batch)
            current = try read()
        }
        if source.totalBytes > 0 && reached.offset != source.totalBytes {
            throw SurveyIncomplete(reason: "reading ended at byte \(reached.offset) of \(source.totalBytes)")
        }
        return try spill.repeats()
    }

    /// A survey that could not read the rest of the input as the plan reads it.
    struct SurveyIncomplete: Error {
        var reason: String
    }

    /// One part's ids, nil when a record could not be read (`.fatal`: the part stops there).
    struct SurveyedPart: Sendable {
        var hashes: [UInt64]?
    }

    /// The hashes of the ids of one part's records, in order: every record with an id, whatever the plan makes of it.
    static func idHashes(_ batch: any RawBatch, part: Int) -> SurveyedPart {
        var hashes: [UInt64] = []
        var readable = true
        batch.decodeIds(part: part, each: { record in
            switch consume record {
            case .account(let account, _), .normalized(let account, _): hashes.append(IdHash.of(account.localId))
            case .malformed: break
            case .fatal: readable = false
            }
        }, plain: { record in hashes.append(record.account.idHash) })
        return SurveyedPart(hashes: readable ? hashes : nil)
    }
}
