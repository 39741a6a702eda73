import ArgumentParser
import Dispatch
import Synchronization
import IdPipeCore
import IdPipeExtract
import IdPipeStore
import Logging
#if canImport(Glibc)
import Glibc
#endif

struct Plan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Dry run: read the accounts, plan every action, count the data it would delete, write the report. Changes nothing.",
        discussion: """
            With Firestore, Realtime Database or Storage paths in stages.delete, it reads each planned path (with \
            services.google's credentials) and reports how many documents, nodes and objects each would delete. \
            Writes OUT/plan.md (for a reviewer), OUT/plan.json (for machines), OUT/ledger.csv (one line per planned action), \
            OUT/quarantine.csv (one line per problem of each quarantined input row) and, for migrations, the auth:import \
            file. Interrupted (Ctrl-C, kill -9), the same command (of the same idpipe version) resumes from the last \
            checkpoint and ends with the same report. The plan leaves syncing its state store to the system until it is \
            whole; after a power loss or a crash of the system before that, the same command plans again \
            from the start.
            """)

    @Argument(help: "The pipeline file (YAML).")
    var pipeline: String

    @OptionGroup var location: RunLocationOptions
    @OptionGroup var reportOptions: ReportOptions

    @Option(name: .long, help: ArgumentHelp("Plan as of this moment instead of now, for reproducible reports: an RFC 3339 time (2026-11-21T00:00:00Z), or a date alone for its midnight UTC.", valueName: "time"))
    var asOf: String?

    // Unconditional, so `--workers -1` reaches validate() instead of being taken for an option.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Worker threads, 1 to \(Self.maxWorkers). Default: the number of cores.", valueName: "n"))
    var workers: Int?

    @Flag(name: .long, help: "Log progress details to stderr.")
    var verbose = false

    static let maxWorkers = 256

    func validate() throws {
        try validateAsOf(asOf)
        // A thread each: a slip of the keyboard (100000) took every process slot of the machine.
        if let workers, !(1...Self.maxWorkers).contains(workers) { throw ValidationError("--workers must be between 1 and \(Self.maxWorkers)") }
    }

    func run() throws {
        let context: PipelineContext
        do { context = try PipelineContext(path: pipeline) } catch { throw fail("\(error)") }
        let out = location.out ?? "out/\(context.definition.name)"
        if let code = try planStage(context: context, statePath: location.state ?? "\(out)/state.sqlite", out: out,
                                    asOf: asOf.flatMap(Timestamp.parseRFC3339), reveal: reportOptions.revealPersonalData, verbose: verbose,
                                    workers: workers, requestApply: false, command: "plan") {
            throw code
        }
    }
}

func formatSeconds(_ seconds: Double) -> String {
    seconds < 10 ? "\((seconds * 100).rounded() / 100) s" : "\(Int(seconds.rounded())) s"
}

/// Builds the live pieces for a plan and runs it.
struct PlanExecution {
    let context: PipelineContext
    let statePath: String
    let out: String
    let asOf: Int64?
    let workers: Int
    let logger: Logger
    /// `run --yes`: recorded from the start, so a `resume` after a crash during planning goes on to apply.
    var applyRequested = false
    /// `run --yes --max-deletions N`: recorded from the start too, so that apply keeps to it.
    var maxDeletions: Int?
    /// `--reveal-personal-data`: recorded with the run, so a resumed plan's reports, and `report`, show what the plan's
    /// reports showed.
    var reveal = false
    /// Asked after each committed batch, and after each batch the duplicate check's survey reads: true stops the plan
    /// there (Ctrl-C).
    var shouldStop: (() -> Bool)?
    /// Renders the reports' bodies as the batches are committed.
    var reportFollower: StreamedReports?

    /// The plan's outcome, and its store, open with the durability the plan chose (the plan stage writes on in it).
    func run() throws -> (result: PlanResult, store: StateStore) {
        let definition = context.definition
        let live = definition.source.format == .identityToolkit
        // The services read their keys and secrets here, before anything is recorded (no request is sent), when the run
        // will use them: the live source, the data counts (`countData`), an apply that follows. A key file's path mistyped
        // failed the plan once recorded, as its data were to be counted, and the pipeline file, corrected, was then
        // refused as a change to the finished plan. Only the live source uses them in the plan itself.
        var services: Services?
        if context.planUsesServices || applyRequested { services = try Services(context, logger: logger) }
        if !applyRequested && definition.services != ServicesConfig() {
            // A dry run still says what its apply will meet (the plan would be made again, as a corrected pipeline file is
            // a changed one): the services it does not use itself, and a migration's signer key, which only apply reads.
            do {
                let checked = try services ?? Services(context, logger: logger)
                defer { if services == nil { checked.shutdown() } }
                _ = try checked.passwordHash(definition.stages.importAccounts?.passwordHash)
            } catch {
                Console.error("idpipe: warning: apply will not be able to set up the services: \(error); correct it before this plan is reviewed, "
                    + "as apply refuses a plan whose pipeline file changed")
            }
        }
        defer { services?.shutdown() }
        let sourcePath = live ? "identitytoolkit:projects/\(services?.projectId ?? "")" : context.sourcePath
        var sourceSize: Int64 = 0
        if !live {
            switch FileInfo.kind(sourcePath) {
            case .stream:
                throw CommandError("\(context.path): source.path: the input \(sourcePath) is a pipe; the plan reads the export by position, "
                    + "so that a stopped run resumes where it stopped, and a pipe cannot be read so: save the export to a file first")
            case .file(let size): sourceSize = size
            case .device: throw CommandError("\(context.path): source.path: the input \(sourcePath) is a device, not a file; save the export to a file first")
            case let kind:
                if let problem = kind.problem { throw CommandError("\(context.path): source.path: the input \(sourcePath) \(problem)") }
            }
        }
        try context.captureSideInputs()
        // A Ctrl-C while a streamed side input was copied may have cut the stream short (its producer is stopped
        // too): nothing is recorded then, so that the same command, given the whole stream, starts afresh.
        if shouldStop?() == true { throw StoppedBeforeRecording() }
        // The side inputs' digests are taken while the side inputs are read, one a core, the largest alone on its
        // core: on the other, after the smaller ones (about 20 ms of a 1M-account plan, before, while one core waited).
        let digesting = BackgroundJob { [context] in try context.sideInputDigests() }
        if try StateStore.discardUnsyncedPlan(at: statePath) {
            Console.error("idpipe: the system restarted before the plan in \(statePath) was all on the disk; it may have lost some of it, "
                + "so the plan starts over (nothing was applied from it)")
        }
        let store = try StateStore(path: statePath)
        let existing = try store.loadRun()
        // Refused before anything is written (the mark of a plan not yet synced), as the plan itself would refuse them.
        if let existing { try PlanRunner.checkPlannable(existing, pipelineName: definition.name) }
        // An interrupted migration goes on with the import file it left in its plan's folder (given another --out, it
        // found none there and refused the run as changed).
        if let existing, existing.status == .planning || StateStore.hasUnsyncedWrites(at: statePath),
           let name = definition.output.importJSON, let folder = existing.reportFolder, FileInfo.identity(folder) != FileInfo.identity(out),
           !fileExists("\(out)/\(name).\(existing.stagingToken).partial") {  // a folder moved, its staged file in it
            throw CommandError("\(statePath) holds an interrupted plan whose import file (\(name)) is in \(folder): continue it there, "
                + "with --out \(folder) (or without --out)")
        }
        // A new or unfinished plan is written without syncing; a finished one, perhaps applied since, is not planned
        // again, and what is still written is synced.
        if existing?.status ?? .planning == .planning { try store.deferSyncing() }
        let planAsOf = existing?.asOf ?? asOf ?? epochMilliseconds()
        let loadStarted = wallClockSeconds()
        let loaded = Result { try SideInputReader.load(definition.inputs, relativeTo: context.folder) }
        let sideDigests = try digesting.wait()
        let sideInputs = try loaded.get()
        // A side input given and empty (a decryption that failed into `<(…)`, a file truncated) made every account "no
        // stored Apple token", deleted unrevoked, without a word.
        let rows = ["legacy_names": sideInputs.legacyNames.count, "deletion_requests": sideInputs.deletionRequests.count,
                    PlanRunner.storedTokensRole: sideInputs.credentials.count, "protected_accounts": sideInputs.protectedIds.count]
        for (role, path) in context.sideInputPaths where rows[role] == 0 {
            Console.error("idpipe: warning: inputs.\(role) (\(path)) has no rows" + (role == PlanRunner.storedTokensRole
                ? ": no revocation that needs a stored token is possible (was the file cut short, or its command failed?)" : ""))
        }
        if sideInputs.repeatedDeletionRequests > 0, let path = context.sideInputPaths.first(where: { $0.0 == "deletion_requests" })?.1 {
            let repeats = sideInputs.repeatedDeletionRequests
            Console.error("idpipe: warning: inputs.deletion_requests (\(path)): \(Console.count(repeats, "row")) ask\(repeats == 1 ? "s" : "") "
                + "for an account an earlier row asks for; each account's earliest request counts")
        }
        for warning in context.warnings() { Console.error("idpipe: warning: " + warning) }
        // --verbose: what the plan starts from (the progress line says how it goes).
        let resuming = existing?.status == .planning ? ", resuming the plan in \(statePath)" : ""
        logger.info("""
            side inputs read in \(formatSeconds(wallClockSeconds() - loadStarted)): \(sideInputs.legacyNames.count) legacy names, \
            \(sideInputs.deletionRequests.count) deletion requests, \(sideInputs.credentials.count) accounts with stored tokens, \
            \(sideInputs.protectedIds.count) protected ids
            """)
        logger.info("""
            reading \(sourcePath) (\(definition.source.format.rawValue), \(sourceSize) bytes) on \(workers) workers, as of \
            \(Timestamp.formatRFC3339(planAsOf))\(resuming)
            """)
        // The store of a plan by idpipe 0.7.0 or before names the input as it was joined ("Pipelines/../Samples/a.json"):
        // the same file, which a plan into that store is still to be given.
        let recordedSourcePath = existing.flatMap { SideInputReader.resolve($0.sourcePath, "") == sourcePath ? $0.sourcePath : nil } ?? sourcePath
        var run = RunRecord(
            pipelineName: definition.name, pipelinePath: context.path, pipelineSHA256: context.sha256,
            asOf: planAsOf, createdAt: existing?.createdAt ?? epochMilliseconds(), status: .planning, sourcePath: recordedSourcePath,
            sourceFormat: definition.source.format.rawValue, sourceSize: sourceSize, sideInputSHA256: sideDigests)
        run.importFileToken = existing?.stagingToken ?? "\(run.createdAt)-\(String(UInt32.random(in: .min ... .max), radix: 16))"
        if applyRequested {
            run.applyRequested = true
            run.maxDeletions = maxDeletions
        }
        run.workingDirectory = currentDirectory()
        run.reportFolder = absolutePath(out)
        run.listLimit = definition.report.listLimit
        run.importTarget = definition.importTargetDescription
        run.dataUncountable = definition.stages.delete?.pathKinds.isEmpty == false && definition.services.google == nil ? true : nil
        run.importExistingAccounts = definition.stages.importAccounts?.existingAccounts.rawValue
        run.revealPersonalData = reveal || definition.report.revealPersonalData || existing?.revealPersonalData == true ? true : nil
        run.guardLimits = definition.guards.limits
        run.sourceAssumptions = definition.source.assumptions
        if definition.selection.deletionRequested {
            // One pass: requests dated after the plan, and those within the grace period.
            let until = definition.selection.requestsHonouredUntil(asOf: planAsOf)
            var later = 0, waiting = 0
            for row in sideInputs.deletionRequests.allRows {
                if row.requestedAt > planAsOf { later += 1 } else if row.requestedAt > until { waiting += 1 }
            }
            if later > 0 {
                run.deletionRequestsAfterAsOf = later
                Console.error("idpipe: warning: \(Console.count(later, "deletion request")) in inputs.deletion_requests \(later == 1 ? "is" : "are") "
                    + "dated after the plan's time (\(Timestamp.formatRFC3339(planAsOf))) and not honoured")
            }
            if let days = definition.selection.deletionGraceDays {
                run.deletionRequestsInGrace = waiting
                if waiting > 0 {
                    Console.error("idpipe: \(Console.count(waiting, "deletion request")) \(waiting == 1 ? "is" : "are") within "
                        + "select.deletion_grace_days (\(Console.count(days, "day")): made after \(Timestamp.formatRFC3339(until))) and not acted on yet")
                }
            }
        }
        let processor = AccountProcessor(pipeline: definition, sideInputs: sideInputs, asOf: planAsOf)
        let runner = PlanRunner(pipeline: definition, processor: processor, store: store, workers: workers, logger: logger)
        if let size = ProcessEnvironment.value("IDPIPE_BATCH_RECORDS").flatMap(Int.init) { runner.batchRecords = size }
        // Tests make the duplicate check survey the input after a few ids, as a plan of millions of accounts does.
        if let limit = ProcessEnvironment.value("IDPIPE_IDS_IN_MEMORY").flatMap(Int.init) { runner.idsInMemory = limit }
        // The duplicate check's scratch file goes beside the store: on the disk the user gave the plan's state.
        runner.scratchSpace = { try ScratchFile(folder: folder(of: statePath)) }
        // Tests plan the same input both ways and compare: every account the full way, or plain ones counted only.
        if ProcessEnvironment.value("IDPIPE_FULL_PATH") == "1" { runner.fastPath = false }
        runner.reportFollower = reportFollower
        // Tests: the process ends as a kill would end it, the plan recorded and its import file not yet named.
        if ProcessEnvironment.value("IDPIPE_TEST_EXIT_BEFORE_PUBLISHING") == "1" { runner.beforePublishing = { _exit(137) } }
        // Tests stop after N batches, as if interrupted, or slow each batch down (milliseconds) to send a signal mid-plan.
        let stopAfter = ProcessEnvironment.value("IDPIPE_STOP_AFTER_BATCHES").flatMap(Int.init)
        let pause = ProcessEnvironment.value("IDPIPE_TEST_BATCH_DELAY_MS").flatMap(UInt32.init) ?? 0
        runner.shouldStop = { [shouldStop] batches in
            if pause > 0 { usleep(pause * 1000) }
            return stopAfter.map { batches >= $0 } == true || shouldStop?() == true
        }
        runner.progress = { progress in
            let percent = progress.totalBytes > 0 ? " · \(Int(progress.bytes * 100 / progress.totalBytes)) %" : ""
            let rate = progress.elapsedSeconds > 0 ? Int(Double(progress.records) / progress.elapsedSeconds) : 0
            if let surveyed = progress.surveyedBytes, progress.totalBytes > 0 {
                Console.progress("plan: \(progress.records) accounts\(percent) · reading the rest for repeated ids · \(Int(surveyed * 100 / progress.totalBytes)) %")
                return
            }
            Console.progress("plan: \(progress.records) accounts\(percent) · \(rate)/s · \(progress.quarantined) quarantined")
        }
        let sink = definition.output.importJSON.map { ImportJSONWriter(path: "\(out)/\($0)", token: run.stagingToken) }
        // Staged import files of other plans (stopped, or started over): unmasked accounts, left as they are (another
        // plan may resume with its own), and named.
        for other in sink?.otherStagedFiles() ?? [] {
            Console.error("idpipe: warning: \(other) is the unfinished import file of another plan, or of one given up (unmasked accounts "
                + "and password hashes): remove it unless a plan is to be resumed with it")
        }
        let fingerprint: any InputFingerprint = live ? LiveSourceFingerprint(project: services?.projectId ?? "") : FileFingerprint(path: sourcePath)
        let result = try runner.plan(run: run, openSource: { try context.openSource($0, services: services) }, fingerprint: fingerprint,
                                     sink: sink, clock: wallClockSeconds)
        return (result, store)
    }
}

/// A job on a thread of the system's pool, whose result `wait` returns (`blocking` is the same for async work, waited
/// for at once).
final class BackgroundJob<Value: Sendable>: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let result = Mutex<Result<Value, any Error>?>(nil)

    init(_ body: @escaping @Sendable () throws -> Value) {
        DispatchQueue.global().async { [self] in
            let value = Result { try body() }
            result.withLock { $0 = value }
            done.signal()
        }
    }

    func wait() throws -> Value {
        done.wait()
        return try result.withLock { $0! }.get()
    }
}

/// The plan was asked to stop before it recorded anything.
struct StoppedBeforeRecording: Error {}

enum ProcessEnvironment {
    static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
