import Dispatch
import Logging
import Synchronization

/// Hashes an input as it is read, so a resumed or applied run can prove the input did not change.
public protocol InputFingerprint: AnyObject {
    /// Hashes the input's bytes up to `offset` (from where it stopped) and returns the SHA-256 so far.
    func advance(to offset: Int64) throws -> String
    /// The same, given the input's bytes from offset `start` as a batch holds them: those it needs are hashed where
    /// they are, not read again.
    func advance(to offset: Int64, holding bytes: [UInt8], from start: Int64) throws -> String
}

extension InputFingerprint {
    public func advance(to offset: Int64, holding _: [UInt8], from _: Int64) throws -> String {
        try advance(to: offset)
    }
}

/// Receives the cleaned accounts, in input order (the `auth:import` file of a migration).
public protocol CleanedAccountSink: AnyObject {
    /// Cuts the output back to `length` (where the last checkpoint left it).
    func truncate(to length: Int64) throws
    /// Appends user objects (`ImportJSON.render`) joined by `,\n`: one or more.
    func write(objects: [UInt8]) throws
    /// The output's length so far, recorded with each checkpoint.
    var length: Int64 { get }
    /// Ends the output; it is not yet where its readers look.
    func finish() throws
    /// Puts the finished output where its readers look, once the plan is recorded as finished (a plan killed between
    /// the two does it when run again). `recordedLength`: the last checkpoint's length. `required`: whether having
    /// nothing finished of that length to publish is an error (false when it may have been published already).
    func publish(recordedLength: Int64, required: Bool) throws
    /// The SHA-256 of the finished output (after `finish`, before `publish`).
    func digest() throws -> String
}

/// Progress after each batch, for the progress line.
public struct PlanProgress: Sendable {
    public var records: Int64
    public var bytes: Int64
    public var totalBytes: Int64
    public var quarantined: Int
    public var elapsedSeconds: Double
    /// While the duplicate check reads the rest of the input for its ids (`DuplicateCheck`): the offset it reached.
    public var surveyedBytes: Int64?
}

public struct PlanResult: Sendable {
    public var run: RunRecord
    public var tally: Tally
    /// True when the store already held a finished plan and nothing was read.
    public var alreadyPlanned: Bool
    /// True when this call continued an interrupted plan.
    public var resumed: Bool
    /// True when it stopped before the end of the input (asked to, after a committed batch); running it again continues.
    public var interrupted = false
    /// True when `PlanRunner.reportFollower` got every batch of the plan, from its first: the reports' bodies it
    /// rendered are whole.
    public var reportBodiesComplete = false
}

public enum PlanError: Error, CustomStringConvertible {
    case changedSinceInterruptedRun(String)
    /// The store holds a finished plan, made from other inputs.
    case changedSinceFinishedPlan(String)
    /// The store holds a plan of another pipeline (planning into it said the pipeline file had changed).
    case otherPipeline(name: String, path: String)
    /// The store holds an interrupted plan that another idpipe started (`RunRecord.plannedBy`).
    case interruptedByOtherVersion(plannedBy: String)
    case input(InputError)

    public var description: String {
        switch self {
        case .changedSinceInterruptedRun(let what): "cannot resume: \(what) changed since the interrupted run; start a new state store"
        case .changedSinceFinishedPlan(let what):
            "the state store holds a finished plan, and \(what) changed since it was made; to plan again, give a new state store (--state, or --out)"
        case .otherPipeline(let name, let path):
            "the state store holds a plan of another pipeline, '\(name)' (\(path)); give this one a state store of its own (--state, or --out)"
        case .interruptedByOtherVersion(let plannedBy):
            "cannot resume: the interrupted plan was started by \(plannedBy), and this is idpipe \(IdPipeVersion.text); its report would "
                + "mix what each planned; plan again into a new state store (--state, or --out), or finish this one with the idpipe that started it"
        case .input(let error): error.description
        }
    }
}

/// The dry run: reads the input in batches, runs the offline stages on its worker threads, and commits each
/// batch with its checkpoint. Killed at any moment, it starts again from the last checkpoint and ends with
/// the same store, and so the same report, as an uninterrupted run.
public final class PlanRunner {
    public let pipeline: PipelineDefinition
    public let processor: AccountProcessor
    public let store: any PlanStore
    /// How many threads decode the batches (`PartQueue`).
    public let workers: Int
    /// Records per batch for sources that count records (the live API); export files are cut by size instead
    /// (`ExportJSONSource.defaultBatchBytes`, `CSVSource.defaultBatchBytes`).
    public var batchRecords = 1024
    public var logger: Logger
    public var progress: ((PlanProgress) -> Void)?
    /// Asked after each batch is handed to the store, and after each batch the duplicate check's survey reads, with the
    /// count of batches handed so far: true stops there, as an interruption (Ctrl-C, or a test's stop after N batches).
    public var shouldStop: ((Int) -> Bool)?
    /// Whether decoders may take the fast path for accounts that need nothing (`AccountProcessor.fastPath`). Off, every
    /// account goes the full way: the same plan, more slowly (tests compare the two).
    public var fastPath = true
    /// Tests: called once the plan is recorded as finished, before the import file takes its name (a kill there).
    public var beforePublishing: (() -> Void)?
    /// Gets each batch before it is committed, when the plan starts from the beginning of its input (a resumed plan
    /// has batches it never saw).
    public var reportFollower: (any PlanReportFollower)?
    /// How many accepted ids the duplicate check holds before it surveys the rest of the input (`DuplicateCheck`).
    public var idsInMemory = DuplicateCheck.defaultLimit
    /// Makes the space the survey writes its hashes to; without it, the duplicate check holds every id however many.
    public var scratchSpace: (() throws -> any ScratchSpace)?

    public init(pipeline: PipelineDefinition, processor: AccountProcessor, store: any PlanStore, workers: Int, logger: Logger) {
        self.pipeline = pipeline
        self.processor = processor
        self.store = store
        self.workers = workers
        self.logger = logger
    }

    /// `run` is the record for a new plan; when the store already holds one, it must match (same pipeline and inputs).
    public func plan(
        run newRun: RunRecord, openSource: (InputCheckpoint) throws -> any AccountSource, fingerprint: any InputFingerprint,
        sink: (any CleanedAccountSink)?, clock: () -> Double
    ) throws -> PlanResult {
        var run = newRun
        var checkpoint = PlanCheckpoint(input: InputCheckpoint(), inputPrefixSHA256: "", tally: Tally(), nextSequence: 0, importFileLength: 0)
        var resumed = false
        if let existing = try store.loadRun() {
            try Self.checkPlannable(existing, pipelineName: newRun.pipelineName)
            do {
                try Self.checkSameRun(existing, newRun)
            } catch PlanError.changedSinceInterruptedRun(let what) where existing.status != .planning {
                throw PlanError.changedSinceFinishedPlan(what)
            }
            run = existing
            if existing.status != .planning {
                let saved = try store.loadCheckpoint()
                // Killed after the plan was recorded, before its import file took its name: it takes it now.
                if let saved { try sink?.publish(recordedLength: saved.importFileLength, required: false) }
                return PlanResult(run: existing, tally: saved?.tally ?? Tally(), alreadyPlanned: true, resumed: false)
            }
            if let saved = try store.loadCheckpoint() {
                checkpoint = saved
                resumed = true
                let digest = try fingerprint.advance(to: saved.input.offset)
                guard digest == saved.inputPrefixSHA256 else {
                    throw PlanError.changedSinceInterruptedRun("the input \(run.sourcePath) (its first \(saved.input.offset) bytes)")
                }
            }
        } else {
            try store.saveRun(run)
        }
        if resumed { logger.info("resuming an interrupted plan", metadata: ["records": "\(checkpoint.input.records)"]) }
        // The input is opened first: one refused as it opens (a table's bad header, classic Mac line ends) left the import
        // file of an earlier plan in the same folder cut to its first line.
        let source = try openSource(checkpoint.input)
        try sink?.truncate(to: checkpoint.importFileLength)
        // Batch N is written, and batch N + 1 waits for it, while batch N + 2 is merged, N + 3 waits for the merge and N + 4
        // is read and decoded; the writes stay in order, each with its checkpoint. A stop drops the batches read after
        // the last one merged (a resume reads them again).
        let follower = resumed ? nil : reportFollower
        let reportMasking = follower?.masking
        var reportEntries = 0
        let committer = OrderedCommitter(store: store, follower: follower)
        defer { _ = try? committer.drain() }
        let duplicates = DuplicateCheck(limit: idsInMemory)
        // A migration keeps its import file free of two accounts for one email, phone number or federated sign-in.
        let imports = sink == nil ? nil : ImportPart(emails: !pipeline.output.allowDuplicateEmails)
        let importKeys = imports.map { _ in ImportKeys() }
        var tally = checkpoint.tally
        let started = clock()
        var batches = 0
        let processor = self.processor
        // The import file needs every account whole: a migration takes the full path for all.
        let fastPath = self.fastPath && sink == nil
        let (width, batchRecords) = (self.workers, self.batchRecords)
        let reading = UncheckedSource(source)
        let partQueue = PartQueue(width: width)
        // Runs after the read-ahead has stopped: parts still queued then belong to batches that will not be merged.
        defer { partQueue.finish(cancel: true) }
        // The duplicate check may read the input a second time (`DuplicateCheck`) given scratch space and a file.
        let surveyScratch = source.rereadable ? scratchSpace : nil
        /// Reads the rest of the input from `start` for the duplicate check (`surveyIds`), its progress shown as the plan's.
        /// Asked to stop (`shouldStop`), it stops after a batch: the plan stops, as interrupted, and the next one reads the
        /// rest again. False when it could not read the input to its end: the check then keeps every id, as it says.
        func survey(from start: InputCheckpoint, after count: Int, accepted: ((UInt64) throws -> Void) throws -> Void,
                    into makeScratch: () throws -> any ScratchSpace) throws -> Bool {
            logger.info("""
                \(count) ids accepted, more than the \(duplicates.limit) the duplicate check holds: reading the rest of the input \
                once for its ids, so that it holds only those that repeat
                """)
            do {
                let found = try surveyIds(from: start, makeScratch: makeScratch, openSource: openSource, queue: partQueue, accepted: accepted) { offset in
                    try committer.check()
                    progress?(PlanProgress(records: checkpoint.input.records, bytes: checkpoint.input.offset, totalBytes: source.totalBytes,
                                           quarantined: tally.quarantineRows, elapsedSeconds: clock() - started, surveyedBytes: offset))
                    if shouldStop?(batches) == true { throw StopReading() }
                }
                duplicates.narrow(to: found)
                return true
            } catch let incomplete as SurveyIncomplete {
                logger.warning("the duplicate check goes on holding every id: reading the rest of the input for its ids stopped short (\(incomplete.reason))")
                duplicates.keepEveryId()
                return false
            }
        }
        if resumed {
            let count = try store.seenIdCount()
            let restore = { try duplicates.restore(count: count, from: self.store.forEachSeenIdHashes) }
            if let surveyScratch, count > duplicates.limit {
                if source.totalBytes > 0 && checkpoint.input.offset >= source.totalBytes {
                    // Nothing is left to read, so no id can be a duplicate: the check holds none, and the plan's end reads the
                    // accepted ids from the store.
                    duplicates.narrow(to: HashSpill.Repeats())
                } else {
                    do {
                        let accepted: ((UInt64) throws -> Void) throws -> Void = { add in
                            try self.store.forEachSeenIdHashes { hashes in for hash in hashes { try add(hash) } }
                        }
                        if try !survey(from: checkpoint.input, after: count, accepted: accepted, into: surveyScratch) { try restore() }
                    } catch is StopReading {
                        return PlanResult(run: run, tally: tally, alreadyPlanned: false, resumed: resumed, interrupted: true)
                    }
                }
            } else {
                try restore()
            }
            if let importKeys { try store.forEachImportKeyHashes(importKeys.restore) }
        }
        // Reads the batches and queues their parts for the workers, handing each batch to `merge`.
        let read: @Sendable ((PendingBatch<ProcessedPart>) throws -> Void) throws -> Void = { emit in
            // Four parts a worker: parts take unequal time, and with one each a worker that finished early waited.
            while let batch = try reading.source.nextBatch(records: batchRecords, parts: width * 4) {
                // The workers decode, process, hash the ids (and a migration's import keys) and count; the merge only
                // checks the ids (and keys) for duplicates, numbers the records and gathers the rows to store.
                let pending = PendingBatch(batch) { batch, part in
                    ProcessedPart(batch, part: part, processor: processor, fastPath: fastPath, reports: reportMasking,
                                  imports: imports)
                }
                partQueue.start(pending)
                try emit(pending)
            }
        }
        // The batch merged last: the next must start where its decoding stopped (`AccountSource.follows`).
        var merged: (any RawBatch)?
        func merge(_ pending: PendingBatch<ProcessedPart>) throws {
            try committer.check()
            let batch = pending.batch
            // Known as soon as the batch is read: no need to wait for its parts.
            if let merged, !source.follows(batch, after: merged) { throw ReadAgain() }
            merged = batch
            var parts = pending.takeParts()
            var next = PlanBatch(checkpoint: checkpoint)
            next.accounts.reserveCapacity(parts.reduce(0) { $0 + $1.noteworthy })
            var counter = TallyCounter()
            // The user objects of the batch's accounts in the import file, joined by `,\n` (`CleanedAccountSink`).
            var imported: [UInt8] = []
            var sequence = checkpoint.nextSequence
            for index in parts.indices {
                duplicates.warm(parts[index].idHashes)
                if let imports = parts[index].imports { importKeys?.warm(imports.allKeys) }
                // The part's kept accounts, made and rendered in order: the k-th kept entry is `kept[k]` and fragment k.
                var fragment = 0
                counter.merge(parts[index].counter)
                for entry in parts[index].entries {
                    switch entry {
                    case .fatal(let error):
                        throw PlanError.input(error)
                    case .quarantined(let entry):
                        var row = parts[index].quarantine[entry]
                        // A row with an earlier account's id: that comes first, its own problems after it. Fixed, they would
                        // only have met this one next; and the guard on ids given twice sees it (`repeatedIdVerdict`).
                        if let id = row.localId, duplicates.contains(IdHash.of(id)) {
                            counter.count(row, by: -1)
                            row = QuarantineEntry(position: row.position, localId: id, field: "localId", reason: Self.repeatedIdReason,
                                                  otherIssues: [RecordIssue(field: row.field, reason: row.reason)] + row.otherIssues)
                            counter.count(row)
                        }
                        next.quarantine.append((sequence, row))
                    case .plain(let entry, let hash):
                        if duplicates.insert(hash) {
                            next.newIdHashes.append(hash)
                        } else {
                            let duplicate = parts[index].duplicate(entry)
                            counter.count(parts[index].plains[entry].account, by: -1)
                            counter.count(duplicate)
                            next.quarantine.append((sequence, duplicate))
                        }
                    case .account(let entry, let hash, let kept):
                        defer { if kept { fragment += 1 } }
                        // A repeated id; or in a migration, an email, phone number or federated sign-in of an account before it.
                        var refusal: ImportKeys.Clash?
                        if !duplicates.insert(hash) {
                            refusal = ImportKeys.Clash(field: "localId", reason: PlanRunner.repeatedIdReason)
                        } else {
                            // Accepted even when the import file refuses the account: a later row with its id is it again.
                            next.newIdHashes.append(hash)
                            if let refused = parts[index].imports?.refusal(entry) {
                                refusal = refused.clash
                                counter.countRefusedByTheAPI(refused.what)
                            } else if let importKeys, let keys = parts[index].imports?.keys(entry),
                               let clash = importKeys.admit(keys.hashes, kinds: keys.kinds, adding: &next.newImportKeyHashes) {
                                refusal = clash
                                counter.countLeftOutOfImport(field: clash.field)
                            }
                        }
                        if let refusal {
                            let outcome = parts[index].outcomes[entry]
                            let duplicate = QuarantineEntry(position: outcome.position, localId: outcome.account.localId, field: refusal.field,
                                                            reason: refusal.reason)
                            counter.count(outcome, by: -1)
                            // Its worker counted it as imported.
                            if parts[index].imports != nil { counter.countImported(Self.importable(outcome), by: -1) }
                            counter.count(duplicate)
                            next.quarantine.append((sequence, duplicate))
                        } else {
                            if let imports = parts[index].imports {
                                if !imported.isEmpty { imported.put(",\n") }
                                imported.append(contentsOf: imports.object(entry))
                            }
                            if kept {
                                if let reports = parts[index].reports {
                                    reports.append(fragment, entry: reportEntries, sequence: sequence, to: &next)
                                    reportEntries += 1
                                }
                                let account = parts[index].takeKept(fragment, sequence: sequence)
                                follower?.gather(account)
                                next.accounts.append(account)
                            }
                        }
                    }
                    sequence += 1
                }
            }
            if let sink, !imported.isEmpty { try sink.write(objects: imported) }
            tally.merge(counter.tally())
            var input = batch.checkpoint
            input.records = checkpoint.input.records + (sequence - checkpoint.nextSequence)
            // The input's digest up to this batch's end, taken here, where the batches come in order: from the bytes
            // the batch holds, which are freed then (held until written, they raised the plan's peak memory).
            let digest = try batch.inputBytes.map { try fingerprint.advance(to: input.offset, holding: $0.bytes, from: $0.start) }
                ?? fingerprint.advance(to: input.offset)
            checkpoint = PlanCheckpoint(input: input, inputPrefixSHA256: digest, tally: tally, nextSequence: sequence,
                                        importFileLength: sink?.length ?? 0)
            next.checkpoint = checkpoint
            committer.submit(next)
            batches += 1
            // Not past the last batch: with nothing left to read, the set already holds every id the plan accepts.
            if let surveyScratch, duplicates.isFull, input.offset < source.totalBytes {
                _ = try survey(from: input, after: duplicates.count, accepted: duplicates.forEachAccepted, into: surveyScratch)
            }
            progress?(PlanProgress(records: input.records, bytes: input.offset, totalBytes: source.totalBytes,
                                   quarantined: tally.quarantineRows, elapsedSeconds: clock() - started))
            if shouldStop?(batches) == true {
                throw StopReading()
            }
        }
        do {
            // Where reading last started again, and how many times in a row from there. Again from the same place is
            // right when a record there is longer than the batch, which the source then reads twice as long (after a
            // long record skipped past a batch's end, the next one may be long too); without end, it would go on for ever.
            var readAgainFrom: Int64 = -1
            var readAgainRepeats = 0
            while true {
                do {
                    if source.readsAhead {
                        // The next batches are read (on a thread of its own) and decoded (by the workers) while this one is
                        // merged here: with the merge in between, one core was often idle. One batch waits, and the one after
                        // it waits to be handed over, so up to two are ahead of the merge, their parts queued (the memory
                        // figures count them).
                        try ReadAhead<PendingBatch<ProcessedPart>>(chunkSize: 1, depth: 1).run(produce: read, consume: merge)
                    } else {
                        try read(merge)
                    }
                    break
                } catch is ReadAgain {
                    // Reading has stopped, so the source can be set back: the batches read after the last one merged are
                    // dropped (their parts not yet decoded are skipped), and read again from where its decoding stopped.
                    let end = merged!.checkpoint
                    readAgainRepeats = end.offset == readAgainFrom ? readAgainRepeats + 1 : 0
                    guard readAgainRepeats < 40 else {
                        throw PlanError.input(InputError(path: source.path, message: "cannot read on after line \(end.line): "
                            + "the batch read from there does not start where the one before it ended"))
                    }
                    readAgainFrom = end.offset
                    partQueue.dropQueued()
                    source.readAgain(after: merged!)
                    logger.info("reading again from line \(end.line): a batch ended elsewhere than its bytes suggested (a broken quote?)")
                }
            }
        } catch is StopReading {
            try committer.drain()
            return PlanResult(run: run, tally: tally, alreadyPlanned: false, resumed: resumed, interrupted: true)
        }
        // Counted while the store writes the last batches (about 6 ms of a 1M-account plan, on one core, after them); from
        // the ids the store holds, once written, when the check no longer holds them all (it narrowed: `surveyScratch`).
        let protectUids = processor.pipeline.selection.protectedIds
        let counted = duplicates.acceptedIds.map { Self.unmatched(processor.sideInputs, protectUids: protectUids, accepted: $0.contains) }
        try committer.drain()
        let unmatched: [String: Unmatched]?
        if let counted {
            unmatched = counted
        } else {
            unmatched = try Self.unmatchedAfterSurvey(processor.sideInputs, protectUids: protectUids, store: store, scratch: try surveyScratch!(),
                                                      path: source.path, limit: duplicates.limit)
        }
        // A file is read to its end: a source set back to the wrong place (`readAgain`) must not end a plan early in silence.
        // (A table that holds only its header has no batch: reading ended where it started, at the end.)
        if source.totalBytes > 0 && max(checkpoint.input.offset, source.start.offset) != source.totalBytes {
            throw PlanError.input(InputError(path: source.path, message: "reading ended at byte \(checkpoint.input.offset) of "
                + "\(source.totalBytes) (line \(checkpoint.input.line)), before the end of the file; the plan is incomplete"))
        }
        let recordedLength = sink?.length ?? 0
        try sink?.finish()
        run.unmatchedSideInputIds = unmatched?.mapValues(\.count)
        run.unmatchedSideInputIdsFirst = unmatched?.mapValues(\.first)
        if unmatched?["deletion_requests"] != nil, case let quarantined = try store.quarantinedIds(), !quarantined.isEmpty {
            let requests = Self.requestsOfQuarantined(processor.sideInputs, quarantined: quarantined, accepted: duplicates.acceptedIds?.contains)
            run.deletionRequestsOfQuarantined = requests.map(\.count)
            run.deletionRequestsOfQuarantinedFirst = requests.map(\.first)
        }
        run.sourceSHA256 = try fingerprint.advance(to: source.totalBytes)
        // Apply imports the file that was reviewed, or refuses (`stages.import`); recorded with the finished plan.
        if pipeline.stages.importAccounts != nil, let sink {
            run.importFileSHA256 = try sink.digest()
            run.importFileSize = sink.length
        }
        run.guardVerdict = try Guards.verdict(pipeline.guards, tally: tally) ?? Self.repeatedIdVerdict(store.plannedDeletionsOfRepeatedIds())
        run.status = run.guardVerdict == nil ? .planned : .stoppedByGuard
        try store.saveRun(run)
        beforePublishing?()
        try sink?.publish(recordedLength: recordedLength, required: true)
        return PlanResult(run: run, tally: tally, alreadyPlanned: false, resumed: resumed, reportBodiesComplete: follower != nil)
    }

    /// Whether the store's run may be planned into by `pipelineName`, known before the new run's inputs are read (the
    /// command asks before it writes to the store): it is that pipeline's, and an interrupted plan is resumed only by the
    /// idpipe that started it, its first batches having been planned by that one's rules.
    public static func checkPlannable(_ existing: RunRecord, pipelineName: String) throws {
        if existing.pipelineName != pipelineName { throw PlanError.otherPipeline(name: existing.pipelineName, path: existing.pipelinePath) }
        if existing.status == .planning && !existing.resumesHere { throw PlanError.interruptedByOtherVersion(plannedBy: existing.plannedBy) }
    }

    /// The rest of the run must be the same: its pipeline file and inputs (after `checkPlannable`).
    static func checkSameRun(_ existing: RunRecord, _ new: RunRecord) throws {
        if existing.pipelineSHA256 != new.pipelineSHA256 {
            throw PlanError.changedSinceInterruptedRun("the pipeline file \(new.pipelinePath)")
        }
        if existing.sourcePath != new.sourcePath || existing.sourceSize != new.sourceSize {
            throw PlanError.changedSinceInterruptedRun("the input \(new.sourcePath) (its size or path)")
        }
        for (role, digest) in new.sideInputSHA256 where existing.sideInputSHA256[role] != digest {
            throw PlanError.changedSinceInterruptedRun("the side input '\(role)'")
        }
    }
}

/// Writes plan batches to the store on one background thread, in the order they were submitted, one at a time:
/// `submit` waits while four batches are still to be written (one being written, three waiting), so at most five are
/// held. The writer gets little of the CPU while both cores decode, and falls behind by a few batches at times. When
/// `submit` waited as soon as one batch was to be written, the reading thread spent about 0.4 s of a 1M-account plan
/// waiting while the other core had nothing to do; with two, about 0.1 s; four take 4 % less of the plan's wall time
/// than two, for about 4 MB more. A failed write stops the ones after it; `check` and `drain` rethrow it.
final class OrderedCommitter: Sendable {
    private let store: any PlanStore
    private let follower: (any PlanReportFollower)?
    private let queue = DispatchQueue(label: "idpipe.plan.commit")
    private let writing = DispatchSemaphore(value: 4)
    private let failure = Mutex<(any Error)?>(nil)

    init(store: any PlanStore, follower: (any PlanReportFollower)? = nil) {
        self.store = store
        self.follower = follower
    }

    func submit(_ batch: consuming PlanBatch) {
        writing.wait()
        let handed = Handover(batch)
        queue.async { [self] in
            defer { writing.signal() }
            // The only reference to the batch from here on, so that the store can move its accounts out.
            let batch = handed.take()
            guard failure.withLock({ $0 == nil }) else { return }
            do {
                try follower?.add(batch)
                try store.commit(consume batch)
            } catch { failure.withLock { $0 = error } }
        }
    }

    /// Hands a batch to the writing thread without keeping a reference to it.
    private final class Handover: @unchecked Sendable {
        private var batch: PlanBatch?
        init(_ batch: consuming PlanBatch) { self.batch = batch }
        func take() -> PlanBatch { batch.take()! }
    }

    /// Rethrows a failed write.
    func check() throws {
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Waits until every submitted batch is written.
    func drain() throws {
        queue.sync {}
        try check()
    }
}

/// The source, read only by the thread that reads ahead while the plan runs.
private final class UncheckedSource: @unchecked Sendable {
    let source: any AccountSource
    init(_ source: any AccountSource) { self.source = source }
}

/// Thrown by the merge to stop reading ahead (the plan was asked to stop).
private struct StopReading: Error {}

/// Thrown by the merge when a batch does not start where the one before it ended: the source guessed wrong.
private struct ReadAgain: Error {}

/// What a worker made of one part of a batch: its records in order, counted, with the ids hashed.
struct ProcessedPart: Sendable {
    enum Entry: Sendable {
        /// `kept`: whether the store keeps a row for it (`AccountOutcome.isNoteworthy`, or repaired in a migration; asked
        /// once, here).
        case account(Int, idHash: UInt64, kept: Bool)
        /// An account the fast path took: counted, never kept.
        case plain(Int, idHash: UInt64)
        case quarantined(Int)
        case fatal(InputError)
    }

    /// Where a plain account is, for the quarantine should it be a duplicate; its id is `plainIds[idStart..<idEnd]`.
    struct Plain: Sendable {
        var account: PlainAccount
        var line: Int
        var byteOffset: Int64
        var idStart: Int
        var idEnd: Int
    }

    var entries: [Entry] = []
    /// The processed accounts and the quarantined rows, which `entries` point into.
    var outcomes: [AccountOutcome] = []
    var quarantine: [QuarantineEntry] = []
    var plains: [Plain] = []
    /// The ids of the plain accounts, one after the other (a String each would cost an allocation each).
    var plainIds: [UInt8] = []
    /// The file the plain accounts come from.
    var plainFile = ""
    var counter = TallyCounter()
    /// How many of the outcomes the store keeps (so the batch reserves room for them once).
    var noteworthy = 0
    /// The outcomes the store keeps, as it keeps them, in order.
    var kept: [KeptAccount] = []
    /// The kept outcomes rendered for the reports, in order, when a follower renders them as the plan goes.
    var reports: ReportFragments?
    /// In a migration, each outcome's import keys and user object, indexed as `outcomes`.
    var imports: ImportPart?

    /// The id hashes of the accounts, in order.
    var idHashes: some Sequence<UInt64> {
        entries.lazy.compactMap { entry in
            switch entry {
            case .account(_, let hash, _), .plain(_, let hash): hash
            default: nil
            }
        }
    }

    /// Kept account `index`, numbered `sequence`, moved out (the part is dropped after the merge).
    mutating func takeKept(_ index: Int, sequence: Int64) -> KeptAccount {
        var account = kept[index].take()
        account.number(sequence)
        return account
    }

    /// A plain account as a duplicate's quarantine row names it.
    func duplicate(_ index: Int) -> QuarantineEntry {
        let plain = plains[index]
        return QuarantineEntry(position: SourcePosition(file: plainFile, line: plain.line, byteOffset: plain.byteOffset),
                               localId: String(decoding: plainIds[plain.idStart..<plain.idEnd], as: UTF8.self), field: "localId",
                               reason: PlanRunner.repeatedIdReason)
    }

    /// Decodes and processes part `part` of `batch`, one record at a time; with `fastPath`, plain accounts are only
    /// counted (`AccountProcessor.fastPath`).
    /// With `imports`, makes each outcome's share of the import file, and counts it as imported.
    init(_ batch: any RawBatch, part: Int, processor: AccountProcessor, fastPath: Bool = false, reports masking: Masking? = nil,
         imports: ImportPart? = nil) {
        reports = masking.map(ReportFragments.init)
        self.imports = imports
        guard fastPath else {
            batch.decode(part: part) { record in take(record, processor: processor) }
            return
        }
        batch.decode(part: part, fastPath: processor, each: { record in take(record, processor: processor) }, plain: { record in
            counter.count(record.account)
            entries.append(.plain(plains.count, idHash: record.account.idHash))
            if plains.isEmpty { plainFile = record.file }
            let start = plainIds.count
            plainIds.append(contentsOf: record.localId)
            plains.append(Plain(account: record.account, line: record.line, byteOffset: record.byteOffset, idStart: start, idEnd: plainIds.count))
        })
    }

    /// Processes one record the full way.
    private mutating func take(_ record: consuming DecodedRecord, processor: AccountProcessor) {
        let outcome: RecordOutcome
        var idHash: UInt64 = 0
        switch consume record {
        case .account(let account, let position): outcome = processor.process(account, position: position, sequence: 0, idHash: &idHash)
        case .normalized(let account, let position):
            outcome = processor.process(account, position: position, sequence: 0, idHash: &idHash, normalized: true)
        case .malformed(let entry): outcome = .quarantined(entry)
        case .fatal(let error):
            entries.append(.fatal(error))
            return
        }
        switch consume outcome {
        case .account(let processed):
            counter.count(processed)
            // A migration's import file carries the repaired values: its reports list the accounts they change.
            let migration = imports != nil
            let kept = processed.isNoteworthy || migration && !processed.repairs.isEmpty
            entries.append(.account(outcomes.count, idHash: idHash, kept: kept))
            if kept {
                noteworthy += 1
                // Rendered before it is stored: read back from the array while `reports` changed, it was copied (a
                // retain and a release of each of its strings).
                let account = KeptAccount(processed, withRepairs: migration)
                reports?.add(account)
                self.kept.append(account)
            }
            if imports != nil {
                let account = PlanRunner.importable(processed)
                imports!.add(account)
                counter.countImported(account)
            }
            outcomes.append(processed)
        case .quarantined(let entry):
            counter.count(entry)
            entries.append(.quarantined(quarantine.count))
            quarantine.append(entry)
        }
    }
}

/// A stable 64-bit hash of an account id (FNV-1a with a final avalanche), for duplicate detection.
/// Two different ids share a hash with odds of about n²/2⁶⁵ (3·10⁻⁸ for a million accounts).
public enum IdHash {
    @inlinable public static func of(_ id: String) -> UInt64 {
        // On the string's own storage when it has one: iterating the UTF-8 view costs more than the hash.
        id.withUTF8Bytes(of)
    }

    @inlinable public static func of(_ bytes: some Collection<UInt8>) -> UInt64 {
        finish(feed(bytes, into: start))
    }

    /// The same hash taken over several pieces: `finish(feed(b, into: feed(a, into: start)))` is the hash of a then b.
    @inlinable public static var start: UInt64 { 0xcbf2_9ce4_8422_2325 }

    @inlinable public static func feed(_ bytes: some Collection<UInt8>, into start: UInt64) -> UInt64 {
        var hash = start
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    @inlinable public static func finish(_ fed: UInt64) -> UInt64 {
        var hash = fed
        hash ^= hash >> 33
        hash &*= 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash &*= 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return hash
    }
}

/// The deletion guards, judged on the plan's totals.
public enum Guards {
    /// Counts the accounts whose data or account the plan deletes, as apply's cap does: counting account deletions
    /// only passed a data-only plan that apply then cut short at the same guard.
    public static func verdict(_ guards: GuardsConfig, tally: Tally) -> String? {
        let deletions = tally["accounts.deletions-planned"]
        let accounts = tally["accounts.processed"]
        if let max = guards.maxDeletions, deletions > max {
            return "the plan deletes the data or the account of \(deletions) accounts; guards.max_deletions allows \(max)"
        }
        if let share = guards.maxDeletionShare, accounts > 0, Double(deletions) / Double(accounts) > share {
            return "the plan deletes the data or the account of \(deletions) of \(accounts) accounts (\(percent(deletions, of: accounts)) %); "
                + "guards.max_deletion_share allows \(GuardsConfig.percent(share)) %"
        }
        return nil
    }

    /// `part` of `whole` as a percentage to one decimal, as the guard's messages show it.
    public static func percent(_ part: Int, of whole: Int) -> Double {
        (Double(part) * 1000 / Double(whole)).rounded() / 10
    }
}

extension PlanRunner {
    /// The quarantine's reason for a row whose id an earlier row has.
    public static let repeatedIdReason = "duplicate: an earlier row has the same id"

    /// The plan stops as a guard stops it when an id the input gives twice has a deletion planned: the plan acted on
    /// the first row, and the second, quarantined, may say otherwise (an address at a protected domain, another
    /// account altogether). The export is to be fixed first; apply refuses such a plan.
    static func repeatedIdVerdict(_ count: Int) -> String? {
        guard count > 0 else { return nil }
        return "the input gives \(count) \(count == 1 ? "id" : "ids") twice with a deletion planned for the first row, while the second "
            + "(quarantined) may say otherwise, a protection for one; fix the export and plan again"
    }

    /// The ids of a side input that are no processed account's: how many, and the first few in the file's order.
    public struct Unmatched: Sendable, Equatable {
        public var count = 0
        public var first: [String] = []
        /// How many ids the reports name for each side input.
        public static let named = 10

        /// Counts `id`, and names it while fewer than `named` are, unless it may be a secret: a line of another file
        /// given as the side input (a token, a key) is no uid mistyped. Not named: an id longer than a Firebase uid can
        /// be (128 characters), one with a run of 40 token characters (as `Redaction` takes a credential), and one of
        /// `secrets` (the stored tokens the run reads).
        mutating func add(_ id: @autoclosure () -> String, naming: Bool = true, secrets: () -> Set<String> = { [] }) {
            count += 1
            guard naming, first.count < Self.named else { return }
            let text = id()
            if !Self.mayBeSecret(text, secrets()) { first.append(text) }
        }

        static func mayBeSecret(_ id: String, _ secrets: Set<String>) -> Bool {
            guard id.utf8.count <= 128 else { return true }
            var run = 0
            for byte in id.utf8 {
                run = TextScan.isASCIILetterOrDigit(byte) || "_~+=-".utf8.contains(byte) ? run + 1 : 0
                if run >= 40 { return true }
            }
            return secrets.contains(id)
        }
    }

    /// The ids of each side input that are no processed account's: an id missing from the export, a quarantined
    /// account, or a mistyped id. Such a deletion request or protection does nothing, which the reviewer is told, with
    /// the first ids to look for (a protected id mistyped leaves the account it meant unprotected). The pipeline's own
    /// `select.protect.uids` are counted too, under that name (an address written there for a uid protected nobody, and
    /// nothing said so).
    static func unmatched(_ inputs: SideInputs, protectUids: [String] = [], accepted: (UInt64) -> Bool) -> [String: Unmatched]? {
        var result: [String: Unmatched] = [:]
        // The stored tokens' values: a file of them given as another side input would have them named. Gathered once, when
        // an id is first to be named: a plan with nothing to name builds no set of every token.
        var gathered: Set<String>?
        func secrets() -> Set<String> {
            if let gathered { return gathered }
            var found: Set<String> = []
            for stored in inputs.credentials.allRows {
                if let token = stored.apple?.token.value { found.insert(token) }
                if let token = stored.facebook?.accessToken?.value { found.insert(token) }
            }
            gathered = found
            return found
        }
        for (role, hashes, id) in sideInputIds(inputs, protectUids: protectUids) {
            var unmatched = Unmatched()
            // The stored tokens' ids are counted, never named: with the fields of a line mixed up, the uid holds a token,
            // and it went into the reports and the state store.
            let names = role != Self.storedTokensRole
            for index in hashes.indices where !accepted(hashes[index]) { unmatched.add(id(index), naming: names, secrets: secrets) }
            if unmatched.count > 0 { result[role] = unmatched }
        }
        return result.isEmpty ? nil : result
    }

    /// The deletion requests whose id is a quarantined row's (`PlanStore.quarantinedIds`), and, when the ids are known
    /// (`accepted`; not past a survey), no processed account's: an owner's request was dropped in silence when their row
    /// had a bad email, say, among the ids "not in the export".
    static func requestsOfQuarantined(_ inputs: SideInputs, quarantined: Set<String>, accepted: ((UInt64) -> Bool)?) -> Unmatched? {
        var found = Unmatched()
        let requests = inputs.deletionRequests
        for index in requests.keys.indices where quarantined.contains(requests.keys[index]) && accepted?(requests.hashes[index]) != true {
            found.add(requests.keys[index])
        }
        return found.count > 0 ? found : nil
    }

    /// The same after a survey (`DuplicateCheck`), from the accepted ids the store holds, which are checked on the way:
    /// no id may have been accepted twice. One that was means the input read a second time held other records than the
    /// plan read (a file changed while the plan ran), and the plan fails rather than pass a duplicate in silence.
    static func unmatchedAfterSurvey(_ inputs: SideInputs, protectUids: [String] = [], store: any PlanStore, scratch: any ScratchSpace,
                                     path: String, limit: Int) throws -> [String: Unmatched]? {
        let named = IdHashSet()
        for (_, hashes, _) in sideInputIds(inputs, protectUids: protectUids) { for hash in hashes { _ = named.insert(hash) } }
        let matched = IdHashSet()
        let spill = HashSpill(scratch)
        try store.forEachSeenIdHashes { hashes in
            for hash in hashes {
                try spill.add(hash, accepted: true)
                if named.contains(hash) { _ = matched.insert(hash) }
            }
        }
        let twice = try spill.repeats().repeated.count
        guard twice == 0 else {
            throw PlanError.input(InputError(path: path, message: """
                \(twice) ids were accepted twice: the input, read a second time for the duplicate check past \(limit) ids, held other \
                records than the plan read (did the file change while the plan ran?); the plan is not finished: plan again into a \
                new state store
                """))
        }
        return unmatched(inputs, protectUids: protectUids, accepted: matched.contains)
    }

    /// Each side input's id hashes, by role, and its ids by the same index: in the file's order (the protected ids,
    /// a set, sorted); the pipeline's protected uids as written.
    private static func sideInputIds(_ inputs: SideInputs, protectUids: [String]) -> [(String, ContiguousArray<UInt64>, (Int) -> String)] {
        let protected = inputs.protectedIds.sorted()
        return [("legacy_names", inputs.legacyNames.hashes, { inputs.legacyNames.keys[$0] }),
                ("deletion_requests", inputs.deletionRequests.hashes, { inputs.deletionRequests.keys[$0] }),
                (Self.storedTokensRole, inputs.credentials.hashes, { inputs.credentials.keys[$0] }),
                ("protected_accounts", ContiguousArray(protected.map(IdHash.of)), { protected[$0] }),
                (Self.protectUidsRole, ContiguousArray(protectUids.map(IdHash.of)), { protectUids[$0] })]
    }

    /// The name the pipeline's protected uids are counted under, among the side inputs' roles.
    public static let protectUidsRole = "select.protect.uids"
    /// The stored tokens' role: its unmatched ids are counted, never named.
    public static let storedTokensRole = "stored_tokens"

    /// The account as the import file gets it: cleaned, with the name the plan fills in (a migration carries the
    /// backfilled names to the project it imports into; the plan's update-name action is for the source project).
    static func importable(_ outcome: AccountOutcome) -> Account {
        guard case .fill(let update)? = outcome.name else { return outcome.account }
        var account = outcome.account
        account.displayName = update.name
        return account
    }
}
