import Testing
@testable import IdPipeCore

/// The duplicate check past its limit: the hashes that occur more than once are found exactly (`HashSpill`), and with
/// them the check answers every id as the set of all ids would have (`DuplicateCheck`).
@Suite struct DuplicateCheckTests {
    /// Scratch space in memory, read back through the same calls as the file.
    final class MemoryScratch: ScratchSpace {
        var bytes: [UInt8] = []
        struct PastTheEnd: Error {}

        func append(_ data: UnsafeRawBufferPointer) throws -> Int64 {
            defer { bytes.append(contentsOf: data) }
            return Int64(bytes.count)
        }

        func read(into buffer: UnsafeMutableRawBufferPointer, from offset: Int64) throws {
            let start = Int(offset)
            guard start + buffer.count <= bytes.count else { throw PastTheEnd() }
            bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[start..<start + buffer.count])) }
        }
    }

    /// An id stream with the cases the spill must keep apart: hash 0, hashes equal in their low 56 bits in other
    /// partitions (the partition keeps only those bits), one partition large enough to be written in many chunks, and
    /// ids repeated at random, some of them many times.
    static func stream(count: Int, seed: UInt64) -> [UInt64] {
        // Deterministic and well spread: the ids' own hash of a counter.
        var counter = 0
        func next() -> UInt64 {
            counter += 1
            return IdHash.of("\(seed)-\(counter)")
        }
        var stream: [UInt64] = [0, 5, 1 << 56 | 5, 0xFF << 56 | 5, UInt64.max]
        while stream.count < count {
            let roll = next()
            switch roll % 10 {
            case 0: stream.append(stream[Int((roll >> 8) % UInt64(stream.count))])
            case 1: stream.append(0x42 << 56 | (next() & 0x00FF_FFFF_FFFF_FFFF))
            default: stream.append(next())
            }
        }
        stream.append(contentsOf: [0, 1 << 56 | 5, UInt64.max])
        return stream
    }

    @Test func theSpillFindsExactlyTheHashesThatRepeat() throws {
        let stream = Self.stream(count: 40_000, seed: 3)
        // The accepted ids hold no repeats (the plan accepts an id once): the first 10,000 distinct ones.
        var accepted: [UInt64] = []
        var acceptedSet = Set<UInt64>()
        for hash in stream where accepted.count < 10_000 && acceptedSet.insert(hash).inserted { accepted.append(hash) }
        let rest = Array(stream.suffix(30_000))
        let spill = HashSpill(MemoryScratch())
        for hash in accepted { try spill.add(hash, accepted: true) }
        for hash in rest { try spill.add(hash, accepted: false) }
        let found = try spill.repeats()

        var counts: [UInt64: Int] = [:]
        for hash in accepted + rest { counts[hash, default: 0] += 1 }
        #expect(counts.values.contains { $0 > 2 })
        #expect(rest.filter { $0 >> 56 == 0x42 }.count > 2048, "one partition is written in several chunks")
        var repeats = 0
        for (hash, count) in counts {
            #expect(found.repeated.contains(hash) == (count > 1), "hash \(hash) occurs \(count) times")
            #expect(found.accepted.contains(hash) == (count > 1 && acceptedSet.contains(hash)), "hash \(hash)")
            if count > 1 { repeats += 1 }
        }
        #expect(found.repeated.count == repeats)
        #expect(found.repeated.contains(0) && found.repeated.contains(1 << 56 | 5) && !found.repeated.contains(2 << 56 | 5))
    }

    /// A store that holds only accepted ids, a batch's at a time.
    final class SeenStore: PlanStore {
        let batches: [[UInt64]]
        init(_ batches: [[UInt64]]) { self.batches = batches }
        func loadRun() throws -> RunRecord? { nil }
        func saveRun(_ run: RunRecord) throws {}
        func loadCheckpoint() throws -> PlanCheckpoint? { nil }
        func seenIdCount() throws -> Int { batches.reduce(0) { $0 + $1.count } }
        func forEachSeenIdHashes(_ body: ([UInt64]) throws -> Void) throws { for batch in batches { try body(batch) } }
        func forEachImportKeyHashes(_ body: ([UInt64]) throws -> Void) throws {}
        func quarantinedIds() throws -> Set<String> { [] }
        func plannedDeletionsOfRepeatedIds() -> Int { 0 }
        func commit(_ batch: consuming PlanBatch) throws {}
    }

    /// The unmatched ids of a side input are counted, and the first ten named in the file's order (the protected ids,
    /// a set, in sorted order), so a reviewer can look for a mistyped one.
    @Test func theFirstUnmatchedIdsAreNamedInTheFilesOrder() {
        let request = DeletionRequest(requestedAt: 0, source: "test")
        var requests = KeyedRows<DeletionRequest>()
        for index in (1...12).reversed() { requests["r\(index)"] = request }
        requests["kept"] = request
        let inputs = SideInputs(deletionRequests: requests, protectedIds: ["p2", "kept", "p1"])
        let unmatched = PlanRunner.unmatched(inputs) { $0 == IdHash.of("kept") }
        #expect(unmatched?["deletion_requests"] == .init(count: 12, first: (3...12).reversed().map { "r\($0)" }))
        #expect(unmatched?["protected_accounts"] == .init(count: 2, first: ["p1", "p2"]))
        #expect(unmatched?.count == 2)
        #expect(PlanRunner.unmatched(inputs) { _ in true } == nil)
        // The pipeline's protected uids as written: an address there protects nobody, and the reviewer is told.
        let withConfig = PlanRunner.unmatched(inputs, protectUids: ["boss@corp.example", "kept"]) { $0 == IdHash.of("kept") }
        #expect(withConfig?["select.protect.uids"] == .init(count: 1, first: ["boss@corp.example"]))
    }

    /// Past a survey, the accepted ids are read back from the store at the plan's end: the side inputs' ids that no
    /// accepted account has are counted from them, and an id accepted twice (the input read a second time held other
    /// records than the plan read) fails the plan.
    @Test func theAcceptedIdsAreCheckedOnceMoreFromTheStore() throws {
        let inputs = SideInputs(deletionRequests: ["a": DeletionRequest(requestedAt: 0, source: "test"), "gone": DeletionRequest(requestedAt: 0, source: "test")],
                                protectedIds: ["b", "also-gone", "c"])
        let accepted = [[IdHash.of("a"), IdHash.of("b")], [IdHash.of("c"), IdHash.of("d")]]
        let unmatched = try PlanRunner.unmatchedAfterSurvey(inputs, store: SeenStore(accepted), scratch: MemoryScratch(), path: "accounts.json", limit: 3)
        #expect(unmatched == ["deletion_requests": .init(count: 1, first: ["gone"]), "protected_accounts": .init(count: 1, first: ["also-gone"])])
        #expect(try PlanRunner.unmatchedAfterSurvey(SideInputs(), store: SeenStore(accepted), scratch: MemoryScratch(), path: "accounts.json", limit: 3) == nil)
        do {
            _ = try PlanRunner.unmatchedAfterSurvey(inputs, store: SeenStore(accepted + [[IdHash.of("e"), IdHash.of("b")]]), scratch: MemoryScratch(),
                                                    path: "accounts.json", limit: 3)
            Issue.record("an id accepted twice must fail the plan")
        } catch let error as PlanError {
            #expect(error.description.hasPrefix("accounts.json: 1 ids were accepted twice"), "\(error)")
        }
    }

    /// The plan's use: ids accepted one by one; past the limit, the ids accepted so far and the rest of the stream go
    /// through the spill, and the check goes on with what it found. Every answer equals the one a set of all ids gives.
    @Test(arguments: [0, 1, 999, 20_000])
    func aSurveyedCheckAnswersAsTheSetOfAllIds(surveyAt: Int) throws {
        let stream = Self.stream(count: 30_000, seed: 8)
        var all = Set<UInt64>()
        let expected = stream.map { all.insert($0).inserted }
        let check = DuplicateCheck(limit: surveyAt)
        var answers: [Bool] = []
        for (index, hash) in stream.enumerated() {
            if index == surveyAt {
                #expect(check.acceptedIds != nil)
                let spill = HashSpill(MemoryScratch())
                try check.forEachAccepted { try spill.add($0, accepted: true) }
                for later in stream[index...] { try spill.add(later, accepted: false) }
                check.narrow(to: try spill.repeats())
                #expect(check.acceptedIds == nil)
            }
            answers.append(check.insert(hash))
        }
        #expect(answers == expected)
    }
}
