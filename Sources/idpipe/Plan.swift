import ArgumentParser
import IdPipeCore
import IdPipeExtract
import IdPipeStore
import Logging
#if canImport(Glibc)
import Glibc
#endif

struct Plan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Dry run: read the accounts, plan every action, write the report. Changes nothing.",
        discussion: """
            Writes OUT/plan.md (for a reviewer), OUT/plan.json (for machines), OUT/ledger.csv (one line per planned action) \
            and, for migrations, the auth:import file. Interrupted (Ctrl-C, kill -9, power loss), the same command \
            resumes from the last checkpoint and ends with the same report.
            """)

    @Argument(help: "The pipeline file (YAML).")
    var pipeline: String

    @OptionGroup var location: RunLocationOptions
    @OptionGroup var reportOptions: ReportOptions

    @Option(name: .long, help: ArgumentHelp("Plan as of this moment (RFC 3339) instead of now; for reproducible reports.", valueName: "time"))
    var asOf: String?

    @Option(name: .long, help: ArgumentHelp("Worker threads. Default: the number of cores.", valueName: "n"))
    var workers: Int?

    @Flag(name: .long, help: "Log progress details to stderr.")
    var verbose = false

    func validate() throws {
        if let asOf, Timestamp.parseRFC3339(asOf) == nil { throw ValidationError("--as-of '\(asOf)' is not an RFC 3339 time (e.g. 2026-11-21T00:00:00Z)") }
        if let workers, workers < 1 { throw ValidationError("--workers must be at least 1") }
    }

    func run() throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .info : .warning
            return handler
        }
        let logger = Logger(label: "idpipe")
        let context: PipelineContext
        do { context = try PipelineContext(path: pipeline) } catch { throw fail("\(error)") }
        let out = location.out ?? "out/\(context.definition.name)"
        let statePath = location.state ?? "\(out)/state.sqlite"
        do {
            try makeDirectory(out)
            let started = wallClockSeconds()
            let outcome = try PlanExecution(context: context, statePath: statePath, out: out, asOf: asOf.flatMap(Timestamp.parseRFC3339),
                                            workers: workers ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), logger: logger).run()
            Console.endProgress()
            let store = try StateStore(path: statePath)
            let written = try ReportWriter(store: store, out: out, reveal: reportOptions.revealPersonalData || context.definition.report.revealPersonalData,
                                           listLimit: context.definition.report.listLimit).writeAll()
            let tally = outcome.tally
            let elapsed = wallClockSeconds() - started
            if outcome.alreadyPlanned { Console.out("The state store already holds a finished plan; the reports were written again.") }
            if outcome.resumed { Console.out("Resumed an interrupted plan.") }
            Console.out("\(tally["accounts.read"]) accounts read, \(tally["accounts.quarantined"]) quarantined, in \(formatSeconds(elapsed)).")
            for path in written { Console.out("report: \(path)") }
            if let output = context.definition.output.importJSON { Console.out("import file: \(out)/\(output)") }
            Console.out("state: \(statePath)")
            if let verdict = outcome.run.guardVerdict {
                Console.error("idpipe: stopped by a guard: \(verdict)")
                throw Exit.stoppedByGuard
            }
            if tally["accounts.quarantined"] > 0 {
                Console.error("idpipe: \(tally["accounts.quarantined"]) input rows were quarantined; see the Quarantine section of \(out)/plan.md")
                throw Exit.doneWithFailures
            }
        } catch let code as ExitCode {
            throw code
        } catch {
            Console.endProgress()
            throw fail("\(error)")
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

    func run() throws -> PlanResult {
        let definition = context.definition
        let live = definition.source.format == .identityToolkit
        let services = live ? try Services(context, logger: logger) : nil
        defer { services?.shutdown() }
        let sourcePath = live ? "identitytoolkit:projects/\(services?.projectId ?? "")" : context.sourcePath
        guard live || fileExists(sourcePath) else { throw CommandError("\(context.path): source.path: the input \(sourcePath) does not exist") }
        var sideDigests: [String: String] = [:]
        for (role, path) in context.sideInputPaths {
            guard fileExists(path) else { throw CommandError("\(context.path): inputs.\(role): \(path) does not exist") }
            sideDigests[role] = try FileFingerprint.digest(of: path)
        }
        let store = try StateStore(path: statePath)
        let existing = try store.loadRun()
        let planAsOf = existing?.asOf ?? asOf ?? epochMilliseconds()
        let sideInputs = try SideInputReader.load(definition.inputs, relativeTo: context.folder)
        let run = RunRecord(
            pipelineName: definition.name, pipelinePath: context.path, pipelineSHA256: try FileFingerprint.digest(of: context.path),
            asOf: planAsOf, createdAt: epochMilliseconds(), status: .planning, sourcePath: sourcePath,
            sourceFormat: definition.source.format.rawValue, sourceSize: live ? 0 : Int64(fileSize(sourcePath)), sideInputSHA256: sideDigests)
        let processor = AccountProcessor(pipeline: definition, sideInputs: sideInputs, asOf: planAsOf)
        let runner = PlanRunner(pipeline: definition, processor: processor, store: store, pool: WorkerPool(width: workers), logger: logger)
        if let stop = ProcessEnvironment.value("IDPIPE_STOP_AFTER_BATCHES").flatMap(Int.init) { runner.stopAfterBatches = stop }
        if let size = ProcessEnvironment.value("IDPIPE_BATCH_RECORDS").flatMap(Int.init) { runner.batchRecords = size }
        runner.progress = { progress in
            let percent = progress.totalBytes > 0 ? " · \(Int(progress.bytes * 100 / progress.totalBytes)) %" : ""
            let rate = progress.elapsedSeconds > 0 ? Int(Double(progress.records) / progress.elapsedSeconds) : 0
            Console.progress("plan: \(progress.records) accounts\(percent) · \(rate)/s · \(progress.quarantined) quarantined")
        }
        let sink = try definition.output.importJSON.map { try ImportJSONWriter(path: "\(out)/\($0)") }
        let fingerprint: any InputFingerprint = live ? LiveSourceFingerprint(project: services?.projectId ?? "") : try FileFingerprint(path: sourcePath)
        return try runner.plan(run: run, openSource: { try context.openSource($0, services: services) }, fingerprint: fingerprint, sink: sink,
                               clock: wallClockSeconds)
    }
}

enum ProcessEnvironment {
    static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
}
