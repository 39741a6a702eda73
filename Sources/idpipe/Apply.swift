import ArgumentParser
import Dispatch
import IdPipeApply
import IdPipeConnect
import IdPipeCore
import IdPipeCrypto
import IdPipeExtract
import IdPipeStore
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Options shared by the commands that change accounts (`--yes` is each command's own: it means something else to each).
struct ApplyOptions: ParsableArguments {
    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("Delete the data or account of at most this many accounts in this run (counting earlier sessions); "
                + "lowers the pipeline's guards, and is kept with the run for later sessions until another is given.", valueName: "n"))
    var maxDeletions: Int?

    @Flag(name: .long, help: "Log every retry and service detail to stderr.")
    var verbose = false

    func validate() throws {
        if let maxDeletions, maxDeletions < 0 { throw ValidationError("--max-deletions must be 0 or more") }
    }
}

/// Where an existing run is: its state store, and where its reports go.
struct ExistingRunOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The state store that `idpipe plan` (or `run`) wrote.", valueName: "db"))
    var state: String

    @Option(name: .long, help: ArgumentHelp("Folder for the reports. Default: the folder the plan wrote its reports to.", valueName: "dir"))
    var out: String?

    func validate() throws {
        try validatePaths(state: state, out: out)
    }

    /// The state store's path, or the command's failure when it does not exist.
    func existingState() throws -> String {
        guard fileExists(state) else { throw fail("the state store \(state) does not exist (run \(Console.command("plan PIPELINE", state: state)) first)") }
        return state
    }

    /// The store and the report folder as absolute paths, then into the folder the plan ran in: the pipeline and input
    /// paths the store holds are as given there (resumed from elsewhere, "cannot read the pipeline file p.yaml"). The
    /// reports go where the plan wrote its own unless --out says otherwise (resume wrote them beside the store), or
    /// beside the store when that folder is gone, or when the plan's reports are beside the store (its folder copied:
    /// the copy's apply wrote its reports over the original's).
    func enterRun() throws -> (state: String, out: String, record: RunRecord?) {
        let state = absolutePath(try existingState())
        let given = out.map(absolutePath)
        // A store that cannot be read is the command's to report, when it opens it. Read only: the command opens it
        // to write once it holds its lock (a run may be going on in it now).
        let record = try? StateStore(readingFrom: state).loadRun()
        if let folder = record?.workingDirectory, folder != currentDirectory(), chdir(folder) != 0 {
            Console.error("idpipe: the plan ran in \(folder), which cannot be entered (\(String(cString: strerror(errno)))): "
                + "its relative paths are read from here")
        }
        // A report folder that is gone (moved with its store, say) is not made again: the store's folder is used.
        let beside = folder(of: state)
        let travelled = record?.reportFolder != beside && fileExists(beside + "/plan.md")
        return (state, given ?? (travelled ? beside : record?.reportFolder.flatMap { fileExists($0) ? $0 : nil } ?? beside), record)
    }
}

struct Apply: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Carry out a reviewed plan: fill names, revoke tokens, delete data and accounts, or import a migration's accounts.",
        discussion: """
            Refuses when the pipeline file or an input changed since the plan (their SHA-256 are in the state store), \
            when the plan was stopped by a guard, or when another idpipe process uses the state store. Every remote \
            action is recorded as sent before the call and as done/failed after it; interrupted (Ctrl-C, kill -9, \
            power loss), `idpipe resume --state DB` sends again only what was in flight and never repeats a done action. \
            Writes OUT/report.md, OUT/report.json and OUT/ledger.csv with every outcome (and OUT/quarantine.csv again); \
            the plan's ledger, as reviewed, is kept as plan-ledger.csv in the plan's folder. A migration whose pipeline has \
            stages.import has its import file, as reviewed, imported into services.google's project (accounts:batchCreate), \
            its requests recorded the same way; an account whose uid the project has already is kept as it is, one whose \
            email, phone number or sign-in another account of the project has is not imported, and both are listed \
            (stages.import.existing_accounts: keep, the default; overwrite replaces the first and checks neither).
            """)

    @OptionGroup var location: ExistingRunOptions
    @Flag(name: .long, help: "Carry out the plan without asking (scheduled jobs). Without it, apply asks on a terminal and refuses otherwise.")
    var yes = false
    @OptionGroup var options: ApplyOptions
    @OptionGroup var reportOptions: ReportOptions

    func run() throws {
        let (state, out, _) = try location.enterRun()
        try ApplyCommand(statePath: state, out: out, options: options, reveal: reportOptions.revealPersonalData).run(command: "apply", confirmed: yes)
    }
}

struct RunPipeline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Plan and apply in one go, for scheduled jobs. A dry run unless --yes (or apply.unattended in the pipeline).",
        discussion: """
            Without --yes this is `idpipe plan`: the report of what would be done, and nothing changed. With it, the \
            plan is applied as soon as it is complete, unless a guard stops it (exit code 3). Interrupted, \
            `idpipe resume --state DB` (or the same command again) continues where it stopped.
            """)

    @Argument(help: "The pipeline file (YAML).")
    var pipeline: String

    @OptionGroup var location: RunLocationOptions
    @Flag(name: .long, help: "Apply the plan once it is complete, asking nothing (scheduled jobs). Without it (and without apply.unattended), run is a dry run.")
    var yes = false
    @OptionGroup var options: ApplyOptions
    @OptionGroup var reportOptions: ReportOptions

    @Option(name: .long, help: ArgumentHelp("Plan as of this moment instead of now: an RFC 3339 time (2026-11-21T00:00:00Z), or a date alone for its midnight UTC.", valueName: "time"))
    var asOf: String?

    func validate() throws {
        try validateAsOf(asOf)
    }

    func run() throws {
        let context: PipelineContext
        do { context = try PipelineContext(path: pipeline) } catch { throw fail("\(error)") }
        let out = location.out ?? "out/\(context.definition.name)"
        let statePath = location.state ?? "\(out)/state.sqlite"
        let apply = yes || context.definition.apply.unattended
        try planThenApply(context: context, statePath: statePath, out: out, asOf: asOf.flatMap(Timestamp.parseRFC3339), apply: apply,
                          options: options, reveal: reportOptions.revealPersonalData, command: "run")
    }
}

/// Plans (or finishes a plan and its data counts), then applies it when asked; `run` and `resume` end this way.
/// Quarantined input rows still make the run "done, with failures".
func planThenApply(context: PipelineContext, statePath: String, out: String, asOf: Int64?, apply: Bool, options: ApplyOptions, reveal: Bool,
                   command: String) throws {
    let planExit = try planStage(context: context, statePath: statePath, out: out, asOf: asOf, reveal: reveal, verbose: options.verbose,
                                 requestApply: apply, maxDeletions: apply ? options.maxDeletions : nil, command: command)
    guard apply else {
        if command == "run" {
            Console.out("Dry run: nothing was changed. Pass --yes (or set apply.unattended: true in the pipeline) to apply the plan.")
        }
        if let planExit { throw planExit }
        return
    }
    // Interrupted while planning, it stops there (130), and `resume` goes on: it went on to apply, which refused the
    // unfinished plan with exit 2.
    if planExit == Exit.stoppedByGuard || planExit == Exit.interrupted { throw planExit! }
    try ApplyCommand(statePath: statePath, out: out, options: options, reveal: reveal).run(command: command, confirmed: true)
    if let planExit { throw planExit }
}

struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Continue an interrupted plan, apply or run from its state store.",
        discussion: """
            An interrupted plan is read on from its last checkpoint; an interrupted apply sends again the actions that \
            were in flight (each is idempotent) and goes on with the rest. A plan started by `run --yes` is applied \
            once complete. A run whose actions are all final gets its reports written again (a kill may have come \
            before them). Refuses when the pipeline file or an input changed.
            """)

    @OptionGroup var location: ExistingRunOptions
    // Accepted, as scripts pass it: what resume does was decided by the command it continues.
    @Flag(name: .long, help: "Changes nothing: resume asks nothing. It goes on with an apply that was confirmed when it started, and applies a plan only when `run --yes` asked for that; a plan alone is only finished.")
    var yes = false
    @OptionGroup var options: ApplyOptions
    @OptionGroup var reportOptions: ReportOptions

    func run() throws {
        let (state, out, entered) = try location.enterRun()
        let record: RunRecord
        do {
            // Read once already; read again only to say why it could not be.
            guard let run = try entered ?? StateStore(path: state).loadRun() else { throw fail("\(state) holds no run") }
            record = run
        } catch let code as ExitCode { throw code } catch { throw fail("\(error)") }
        switch record.status {
        case .planning:
            try finishAndApply(record, state: state, out: out)
        case .applying, .applied:
            // An applied run too: every action is final, but the apply may have been stopped before its reports were
            // written, and apply writes them again (resume said "nothing to resume", and such a run was left without
            // report.md).
            try ApplyCommand(statePath: state, out: out, options: options, reveal: reportOptions.revealPersonalData).run(command: "resume", confirmed: true)
        case .planned:
            // A plan whose data counting stopped or gave up on faults, or a `run --yes` stopped between its plan and its apply.
            let uncounted: Int
            do { uncounted = try pathCountsToDo(StateStore(path: state)) } catch { throw fail("\(error)") }
            // Killed after the plan was recorded, before its end (the import file's name, the reports, the sync): the
            // plan stage ends now.
            guard uncounted > 0 || record.applyRequested == true || StateStore.hasUnsyncedWrites(at: state) else {
                Console.out("Nothing to resume: the plan is complete and was not applied. \(Console.command("apply", state: state)) carries it out.")
                return
            }
            try finishAndApply(record, state: state, out: out)
        case .stoppedByGuard:
            // Killed before its end, its reports not written: they are, and the guard's exit follows.
            if StateStore.hasUnsyncedWrites(at: state) { try finishAndApply(record, state: state, out: out) }
            throw fail("the plan was stopped by a guard: \(record.guardVerdict ?? "")", code: Exit.stoppedByGuard)
        }
    }
}

extension Resume {
    /// Finishes the plan (and its data counts), then applies it when `run --yes` asked for that.
    func finishAndApply(_ record: RunRecord, state: String, out: String) throws {
        let context: PipelineContext
        do { context = try PipelineContext(path: record.pipelinePath) } catch { throw fail("\(error)") }
        try planThenApply(context: context, statePath: state, out: out, asOf: nil, apply: record.applyRequested == true, options: options,
                                 reveal: reportOptions.revealPersonalData, command: "resume")
    }
}

func validateAsOf(_ asOf: String?) throws {
    if let asOf, let flaw = Timestamp.rfc3339Flaw(asOf) { throw ValidationError("--as-of '\(asOf)' is not an RFC 3339 time: \(flaw)") }
}

/// The import file must be none of the files the run writes itself: named `state.sqlite`, it replaced the state store
/// when it took its name (and `plan.md` replaced it in turn).
func refuseImportFileOverOutputs(_ importFile: String?, out: String, statePath: String, pipeline: String) throws {
    guard let importFile else { return }
    // The same name in the same folder (the folders exist by now, however their paths are spelled).
    func place(_ path: String) -> (FileInfo.Identity?, Substring) { (FileInfo.identity(folder(of: path)), path.split(separator: "/").last ?? "") }
    let target = place(importFile)
    let ours = ReportWriter.outputs(out: out, stem: "plan") + ReportWriter.outputs(out: out, stem: "report") + StateStore.files(at: statePath)
        + [statePath + "-journal"]
    for file in ours where place(file) == target && target.0 != nil {
        throw CommandError("\(pipeline): output.import_json: \(importFile) is also \(file), which this run writes; choose another name")
    }
}

/// Runs (or resumes) the plan stage for `plan`, `run` and `resume`; returns the plan's exit code when it is not 0.
func planStage(context: PipelineContext, statePath: String, out: String, asOf: Int64?, reveal: Bool, verbose: Bool, workers: Int? = nil,
               requestApply: Bool, maxDeletions: Int? = nil, command: String) throws -> ExitCode? {
    bootstrapLogging(verbose: verbose)
    do {
        if FileInfo.kind(context.path) == .stream {
            throw CommandError("\(context.path): the pipeline file is a pipe; resume and apply read it again from its path, so save it to a file first")
        }
        try makeWritableFolder(out, purpose: "the plan writes its reports there (--out)")
        if folder(of: statePath) != out { try makeWritableFolder(folder(of: statePath), purpose: "the state store goes there (--state)") }
        let importFile = context.definition.output.importJSON.map { ["\(out)/\($0)"] } ?? []
        try refuseImportFileOverOutputs(importFile.first, out: out, statePath: statePath, pipeline: context.path)
        try context.refuseOutputsOverInputs(ReportWriter.outputs(out: out, stem: "plan") + importFile
            + StateStore.files(at: statePath))
        let lock = try StateLock(statePath: statePath, command: command)
        defer { withExtendedLifetime(lock) {} }
        let endCutShort = StateStore.hasUnsyncedWrites(at: statePath)
        let started = wallClockSeconds()
        // Ctrl-C is caught while the input is read (the plan stops at its next checkpoint), and while the data is
        // counted (`countData`); while the reports are written, it has its default effect again.
        let interruption = Interruption {
            Console.error("\nidpipe: stopping once the batch in hand is recorded (again to quit at once)")
        }
        let outcome: PlanResult
        let store: StateStore
        let reveal = reveal || context.definition.report.revealPersonalData
        // The counts of a data survey change the actions after the plan: then the reports are all rendered afterwards.
        let hasDataPaths = context.definition.stages.delete?.pathKinds.isEmpty == false
        let streamed = hasDataPaths || ProcessEnvironment.value("IDPIPE_REPORTS_FROM_STORE") == "1"
            ? nil : try StreamedReports(folder: out, masking: Masking(reveal: reveal),
                                                  listLimit: context.definition.report.listLimit)
        do {
            defer { interruption.end() }
            var execution = PlanExecution(context: context, statePath: statePath, out: out, asOf: asOf,
                                          workers: workers ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), logger: Logger(label: "idpipe"),
                                          applyRequested: requestApply, maxDeletions: maxDeletions)
            execution.shouldStop = { interruption.isRaised }
            execution.reveal = reveal
            execution.reportFollower = streamed
            do {
                (outcome, store) = try execution.run()
            } catch is StoppedBeforeRecording {
                Console.error("idpipe: interrupted while reading the side inputs; nothing was recorded, so the same command can simply be run again")
                return Exit.interrupted
            }
        }
        Console.endProgress()
        // The reading's own time: the data count after it says its own.
        let read = wallClockSeconds() - started
        if outcome.interrupted || interruption.isRaised {
            Console.error("idpipe: interrupted after \(Console.count(outcome.tally["accounts.read"], "account")); "
                + "the same command, or \(Console.command(state: statePath)), continues from there")
            return Exit.interrupted
        }
        let count = outcome.run.guardVerdict == nil && hasDataPaths
            ? try countData(context: context, store: store) : (ran: false, stopped: false, signalled: false)
        // A signal stops the command even when the counts in flight were the last: `run --yes` went on to apply (and
        // delete) after a SIGTERM, and a plan to write its reports after a Ctrl-C.
        if count.stopped || count.signalled {
            let then = try Console.thenApplies(store.loadRun())
            Console.error(count.stopped
                ? "idpipe: interrupted while counting the data to delete; what was counted is kept, and the same command, or "
                    + "\(Console.command(state: statePath)), counts the rest\(then)"
                : "idpipe: interrupted once the data was counted, before the reports were written and before anything was applied; "
                    + "the same command, or \(Console.command(state: statePath)), writes them\(then)")
            return Exit.interrupted
        }
        if requestApply, var run = try store.loadRun(), run.applyRequested != true || (maxDeletions != nil && run.maxDeletions != maxDeletions) {
            run.applyRequested = true
            if let maxDeletions { run.maxDeletions = maxDeletions }
            try store.saveRun(run)
        }
        // A plan resumed without --reveal-personal-data shows what it showed when it started with it.
        var writer = ReportWriter(store: store, out: out, reveal: outcome.run.showsPersonalData(asked: reveal),
                                  listLimit: context.definition.report.listLimit)
        // A plan that ran whole in this process rendered its reports' bodies as it went (one resumed did not see the
        // batches before its start; one already planned saw none).
        if let streamed, outcome.reportBodiesComplete { writer.streamed = streamed }
        // Once apply has started, plan.md and plan.json are what the reviewer approved, and the ledger is apply's: a
        // plan (or run) into the same store wrote them again from the store, plan.md then as the apply's report.
        let applyStarted = outcome.alreadyPlanned && (outcome.run.status == .applying || outcome.run.status == .applied)
        let written = applyStarted ? [] : try writer.writeAll()
        // The plan is whole: its store goes to the disk, so a restart of the system from now on loses nothing of it.
        try store.syncDeferred()
        let tally = outcome.tally
        // A plan recorded whole whose data count stopped (Ctrl-C, or counts that gave up) was finished by this one.
        let countLeft = outcome.alreadyPlanned && count.ran
        if outcome.alreadyPlanned {
            if endCutShort {
                Console.out("The plan had been recorded but stopped before its end"
                    + (countLeft ? ", its count of the data to delete unfinished: the count was finished, and its reports" : ": its reports")
                    + "\(context.definition.output.importJSON == nil ? " were" : " and import file were") written now.")
            } else {
                // resume takes no state store of its own choosing: the advice is plan's (or run's).
                let afresh = " To plan afresh (a scheduled run, say), " + (command == "resume"
                    ? "plan into a new state store: idpipe plan with --state, or --out."
                    : "give a new state store: --state, or --out when --state is not given.")
                if applyStarted {
                    Console.out("The state store holds a plan, as of \(Timestamp.formatRFC3339(outcome.run.asOf)), that apply has \(outcome.run.status == .applied ? "carried out" : "started on"); "
                        + "its reports are left as they were reviewed, and report.md says what apply did." + afresh)
                } else {
                    Console.out("The state store already holds a finished plan, as of \(Timestamp.formatRFC3339(outcome.run.asOf)); the reports were written "
                        + "again." + afresh)
                }
            }
        }
        if outcome.resumed { Console.out("Resumed an interrupted plan.") }
        if let asOf, asOf != outcome.run.asOf, outcome.alreadyPlanned || outcome.resumed {
            Console.error("idpipe: --as-of \(Timestamp.formatRFC3339(asOf)) was not used: "
                + (outcome.resumed ? "a resumed plan keeps the time it was started with (\(Timestamp.formatRFC3339(outcome.run.asOf)))"
                    : "a finished plan keeps its own time"))
        }
        // A plan already whole read nothing now: its figures are the plan's, and no time of this call is theirs.
        Console.out("\(Console.count(tally["accounts.read"], "account")) read, \(tally["accounts.quarantined"]) quarantined"
            + (outcome.alreadyPlanned ? " by that plan." : ", in \(formatSeconds(read))."))
        // What a monitor reading the output wants first of a cleanup's dry run (it said nothing of it).
        if context.definition.stages.delete != nil {
            Console.out("deletions planned: \(Console.count(tally["accounts.deletions-planned"], "account")) (their data or their account), "
                + "of \(tally["accounts.processed"]) processed")
        }
        // An empty CSV export is a valid one (it has no header): a scheduled job is told, as an export that failed
        // may have left it so.
        if tally["accounts.read"] == 0 {
            Console.error("idpipe: warning: the input \(outcome.run.sourcePath) holds no accounts; the plan has nothing to act on")
        }
        if tally[OddTimes.accountsKey] > 0 {
            Console.error("idpipe: warning: \(Console.count(tally[OddTimes.accountsKey], "account")) \(tally[OddTimes.accountsKey] == 1 ? "has" : "have") "
                + "times that cannot be right (after the plan's time, or a last sign-in before the account was made); see the Summary of \(out)/plan.md")
        }
        for path in written { Console.out("report: \(path)") }
        if let output = context.definition.output.importJSON {
            let file = "\(out)/\(output)"
            Console.out("import file: \(file)" + (fileExists(file) ? ""
                : " (missing: removed since the plan finished; plan afresh with a new state store to write it again)"))
            // Apply imports it through the API (stages.import), which takes what the CLI refuses.
            if tally["import.cli-refused"] > 0, context.definition.stages.importAccounts == nil {
                Console.error("idpipe: \(Console.count(tally["import.cli-refused"], "account")) in it would stop `firebase auth:import` "
                    + "(links beyond google.com, facebook.com, twitter.com and github.com, or MFA); "
                    + "see the Import file section of \(out)/plan.md")
            }
            if tally["import.api-refused"] > 0 {
                Console.error("idpipe: \(Console.count(tally["import.api-refused"], "account")) left out of the import file and quarantined: each "
                    + "holds a value Identity Toolkit refuses (claims over 1000 characters or not JSON, photo URLs over 2048); "
                    + "see the Import file section of \(out)/plan.md")
            }
            if let config = context.definition.stages.importAccounts, config.passwordHash == nil, tally["import.password-hashes"] > 0 {
                Console.error("idpipe: warning: \(Console.count(tally["import.password-hashes"], "account")) in it carry a password hash, and "
                    + "stages.import gives no password_hash: apply refuses to import them without the project's hash parameters; add them "
                    + "to the pipeline and plan again into a new state store")
            }
            let leftOut = tally.group("import.left-out.").reduce(0) { $0 + $1.1 }
            if leftOut > 0 {
                Console.error("idpipe: \(Console.count(leftOut, "account")) left out of the import file and quarantined: each shares an email, a phone "
                    + "number or a federated sign-in with an account before it, and the import would create both; "
                    + "see the Import file section of \(out)/plan.md")
            }
        }
        Console.out("state: \(statePath)")
        // An owner's deletion request for a row the plan could not read was dropped in silence (a monitor sees exit 1
        // every night for the quarantine alone).
        if let requests = outcome.run.deletionRequestsOfQuarantined, requests > 0 {
            Console.error("idpipe: warning: \(Console.count(requests, "deletion request")) in inputs.deletion_requests name\(requests == 1 ? "s" : "") "
                + "accounts whose rows the plan quarantined: not acted on until those rows are fixed at the source; see \(out)/plan.md")
        }
        if let verdict = outcome.run.guardVerdict {
            Console.error("idpipe: stopped by a guard: \(verdict)")
            return Exit.stoppedByGuard
        }
        if tally.quarantineRows > 0 {
            // The input's own fault is one of the rows, and no account: said apart, so the count matches the summary's.
            let accounts = tally["accounts.quarantined"]
            let what = tally.inputEndsEarly
                ? "the input ends early (truncated?), and \(Console.count(accounts, "account")) \(accounts == 1 ? "was" : "were") quarantined"
                : Console.quarantinedRows(tally.quarantineRows)
            Console.error("idpipe: \(what); see the Quarantine section of \(out)/plan.md, or \(out)/quarantine.csv (a line per problem)")
            return Exit.doneWithFailures
        }
        return nil
    } catch {
        Console.endProgress()
        throw fail("\(error)")
    }
}

/// Path deletions whose data the dry run has still to count: never counted, or given up on passing faults.
func pathCountsToDo(_ store: StateStore) throws -> Int {
    try store.uncountedPathActionCount() + store.recountableActionCount()
}

/// The dry run's reads of the configured data paths (resumable: what is counted stays counted): whether any were left
/// to count and were counted now, and whether a signal stopped the count before the end.
/// `signalled`: a signal came, whether or not it left counts to do.
private func countData(context: PipelineContext, store: StateStore) throws -> (ran: Bool, stopped: Bool, signalled: Bool) {
    guard try pathCountsToDo(store) > 0 else { return (false, false, false) }
    guard context.definition.services.google != nil else {
        Console.out("data: not counted: the pipeline has no services.google to read the configured paths with (apply needs it too).")
        return (false, false, false)
    }
    let reopened = try store.reopenRecountableActions()
    if reopened > 0 { Console.out("data: counting again \(reopened) path deletions that gave up on passing faults last time.") }
    let total = try store.uncountedPathActionCount()
    let started = wallClockSeconds()
    let services = try Services(context, logger: Logger(label: "idpipe"))
    defer { services.shutdown() }
    let survey = DataSurvey(store: store, effects: services.effects(), concurrency: context.definition.apply.accountsInFlight)
    // Ctrl-C or SIGTERM: no count is started, those in flight are written, and the next plan or resume counts the rest
    // (the signal ended the process at once, without a word, and a count not yet written was made again).
    let interruption = Interruption {
        Console.error("\nidpipe: stopping: waiting for the counts in flight to be recorded (again to quit at once)")
    }
    defer { interruption.end() }
    let raised = interruption.raised
    let (counted, failed, stopped) = try blocking {
        try await survey.run(total: total, shouldStop: raised) { done, total in
            Console.progress("data: counted \(done) of \(total) path deletions")
        }
    }
    Console.endProgress()
    Console.out("data: counted the configured paths of \(counted) path deletions in \(formatSeconds(wallClockSeconds() - started))"
        + (failed > 0 ? "; \(failed) could not be counted (see Data to delete in the report)" : "") + (stopped ? ", then stopped" : "") + ".")
    return (true, stopped, raised())
}

private let loggingReady = Mutex(false)

/// Sets up logging once per process (swift-log allows one bootstrap).
func bootstrapLogging(verbose: Bool) {
    guard loggingReady.withLock({ ready in defer { ready = true }; return !ready }) else { return }
    LoggingSystem.bootstrap { _ in ConsoleLogHandler(logLevel: verbose ? .info : .warning) }
}

/// Log lines on stderr as idpipe's other messages read them: `idpipe: warning: …`, and with `--verbose` the info lines
/// with their time (`idpipe: 06:24:24 side inputs read in 0.26 s: …`). The stream handler's own form repeated the
/// name (`… info idpipe: [idpipe] …`). A progress line on the terminal is cleared first.
struct ConsoleLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let details = all.isEmpty ? "" : " (" + all.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
        let head: String
        if event.level >= .warning {
            head = "\(event.level): "
        } else {
            var now = time(nil), parts = tm()
            localtime_r(&now, &parts)
            head = String(format: "%02d:%02d:%02d ", parts.tm_hour, parts.tm_min, parts.tm_sec)
        }
        Console.error("idpipe: " + head + event.message.description + details, clearingProgressLine: true)
    }
}

/// Carries out the plan in a state store: the checks, the services, the run, the reports, the exit code.
struct ApplyCommand {
    let statePath: String
    let out: String
    let options: ApplyOptions
    let reveal: Bool

    func run(command: String, confirmed: Bool) throws {
        bootstrapLogging(verbose: options.verbose)
        let logger = Logger(label: "idpipe")
        do {
            try makeWritableFolder(out, purpose: "\(command) writes its reports there (--out); nothing was sent")
            let lock = try StateLock(statePath: statePath, command: command)
            defer { withExtendedLifetime(lock) {} }
            let store = try StateStore(path: statePath)
            // A plan killed after it was recorded, before its end: no report was written for a reviewer to read.
            if StateStore.hasUnsyncedWrites(at: statePath), let run = try store.loadRun(), run.status == .planned || run.status == .stoppedByGuard {
                throw CommandError("the plan in \(statePath) was stopped before its end, its reports not written; "
                    + "\(Console.command(state: statePath)) writes them (read them before you apply)")
            }
            // The plan wrote the store without syncing it: synced and checked before anything is sent.
            try store.makeDurable()
            guard var run = try store.loadRun() else { throw CommandError("\(statePath) holds no run") }
            switch run.status {
            case .planning:
                throw CommandError("the plan in \(statePath) is not finished; " + (run.resumesHere
                    ? "\(Console.command(state: statePath)) completes it"
                    : "it was started by \(run.plannedBy); only that idpipe completes it (this is idpipe \(IdPipeVersion.text)), or plan again "
                        + "into a new state store"))
            case .stoppedByGuard: throw fail("the plan was stopped by a guard and may not be applied: \(run.guardVerdict ?? "")", code: Exit.stoppedByGuard)
            case .applied:
                // With the pipeline's report settings, as the apply that finished used them (the defaults, said so, when
                // the file can no longer be read): the same reports as that apply's, which a kill may have kept it from writing.
                let settings: ReportConfig
                do {
                    settings = try PipelineContext(path: run.pipelinePath).definition.report
                } catch {
                    Console.error("idpipe: \(error); the reports are written with the default report settings")
                    settings = ReportConfig()
                }
                try writeReports(store, run: run, settings: settings)
                Console.out("Every action of this run is already final; nothing to do. The reports were written again.")
                // The run's exit code, not this call's: a scheduler that runs it again must not read 0 for failures.
                try failIfUnfinished(store)
                return
            case .planned, .applying: break
            }
            let context = try PipelineContext(path: run.pipelinePath)
            let pipelineLock = try PipelineApplyLock(pipelinePath: context.path)
            defer { withExtendedLifetime(pipelineLock) {} }
            try checkUnchanged(run, context)
            try context.refuseOutputsOverInputs(ReportWriter.outputs(out: out, stem: "report"))
            let uncounted = try store.uncountedPathActionCount()
            if uncounted > 0 {
                // Without services.google, resume cannot count either (and a changed pipeline file is a new plan).
                let next = context.definition.services.google == nil
                    ? "the pipeline has no services.google to read these paths with (nor to delete them): add it to \(run.pipelinePath) "
                        + "and plan again into a new state store"
                    : "\(Console.command(state: statePath)) finishes counting (reads only)" + Console.thenApplies(run)
                throw CommandError("the dry run has not finished counting the data of \(uncounted) path deletions, so the reviewed report is incomplete; "
                    + next)
            }
            // Counts that gave up on passing faults: the blast radius of those paths is not known. `run --yes` applied such
            // a plan at once, unattended.
            let recount = try store.recountableActionCount()
            if recount > 0 {
                throw CommandError("the dry run could not count the data of \(recount) path deletion\(recount == 1 ? "" : "s") (passing faults), so "
                    + "what they delete is not known; \(Console.command(state: statePath)) counts them again (reads only)" + Console.thenApplies(run))
            }
            // A migration's import (stages.import): the file checked against the plan's fingerprint, split into its requests.
            let importing = try ImportStep.prepare(context, run: run, store: store, statePath: statePath, out: out)
            let open = try store.actionStates().filter { _, states in states.open > 0 }
            // With an import, the name updates go in with the accounts: listed with it, not as actions of their own.
            let listed = importing == nil ? open : open.filter { $0.key != .updateName }
            // As the plan's report said: a plan before the setting was kept said its import overwrites.
            let existing = run.importExistingAccounts.flatMap(ImportConfig.ExistingAccounts.init(rawValue:)) ?? .overwrite
            let importLine = importing?.confirmationLine(into: context.definition.importTargetDescription ?? "", names: open[.updateName]?.open ?? 0,
                                                         existing: existing, duplicateEmails: context.definition.output.allowDuplicateEmails)
            // Set up (key files read, nothing sent) before the question: a key missing stops the command before it asks.
            let services = try Services(context, logger: logger)
            defer { services.shutdown() }
            // Which run goes to which project, said before anything is sent, asked or not: a --state given for the wrong
            // store showed only the counts of its actions.
            let sending = !listed.isEmpty || importLine != nil
            if sending {
                // A migration's accounts (and their names) go where its import goes, which may be another project.
                let project = importing != nil ? context.definition.importTargetDescription.map { " to \($0)" } ?? ""
                    : services.projectId.map { " to project \($0)" + (context.definition.services.google?.tenantId.map { ", tenant \($0)" } ?? "") } ?? ""
                Console.out("applying the plan of \(run.pipelineName) (\(context.path)) as of \(Timestamp.formatRFC3339(run.asOf))\(project), "
                    + "from \(statePath):")
                if let importLine { Console.out(importLine) }
                for (kind, states) in listed.sorted(by: { $0.key.order < $1.key.order }) {
                    Console.out("  \(kind.rawValue): \(states.open) to do")
                }
            }
            // Nothing to send (a plan of findings only, or one whose actions are all final): nothing to ask about.
            if !confirmed && sending {
                switch confirm() {
                case .yes: break
                case .noTerminal:
                    throw fail("nothing was changed: apply changes accounts, and asks first on a terminal; pass --yes to carry out the plan in \(statePath)")
                case .declined:
                    throw fail("nothing was changed: the answer was not 'yes'; the plan in \(statePath) stays as it is, for a later apply")
                }
            }
            let effects = services.effects()
            // The signer key is read now: a missing one stops the command before any service is asked.
            let importHash = try services.passwordHash(importing == nil ? nil : context.definition.stages.importAccounts?.passwordHash)
            // Once a request may have gone with a key, the rest go with the same (a key mistyped before then can be fixed).
            let importKey = importHash?.signerKey.map(SHA256Hasher.hexDigest)
            if let importing, let importKey, let first = run.importSignerKeySHA256, first != importKey,
               importing.requests.contains(where: { $0.state != .planned }) {
                throw CommandError("refusing to import: the signer key (stages.import.password_hash) is not the one this import started with: "
                    + "the accounts imported so far went with that one, and their hashes need the same; give the same key (if that one "
                    + "was wrong, those accounts are imported again with the right one by a new plan in a new state store)")
            }
            for kind in open.keys.sorted(by: { $0.order < $1.order }) {
                if let missing = effects.missingService(for: kind) {
                    throw CommandError("\(context.path): the plan has open \(kind.rawValue) actions, but \(missing) is not configured")
                }
            }
            // Each service the open actions need is checked before the first of them is sent (sign-ins and reads only, as
            // `validate --check-services` does): a refused Facebook secret stopped a `run --yes` only after it had deleted
            // the data of the accounts before the first Facebook revocation, a night half done.
            let checking = Interruption { Console.error("\nidpipe: stopping: nothing is sent yet (again to quit at once)") }
            let needed = Set(open.keys.map(\.service)).union(importing?.openRequests.isEmpty == false ? ["identitytoolkit"] : [])
            let failed = services.check(only: needed).filter { !$0.ok }
            checking.end()
            if checking.isRaised {
                // The run is not `applying` yet: resume would say there is nothing to resume (but for `run --yes`).
                Console.error("idpipe: interrupted while checking the services, before anything was sent; the same command goes on")
                throw Exit.interrupted
            }
            if !failed.isEmpty {
                throw CommandError("nothing was sent: a service the plan's open actions need failed its check: "
                    + failed.map(\.line).joined(separator: "; ") + ". Once it is fixed, the same command goes on (a fix in the pipeline "
                    + "file, a project or an endpoint, needs a new plan in a new state store)")
            }
            let definition = context.definition
            // Kept with the run: a resume (after a kill, or after the cap stopped it) must not go past it unasked.
            if let given = options.maxDeletions, given != run.maxDeletions {
                run.maxDeletions = given
                try store.saveRun(run)
            }
            // Apply needs only the tokens: names, requests and protections are already in the plan.
            let credentials = try definition.inputs.storedTokens.map { try SideInputReader.storedTokens(context.resolve($0)) } ?? [:]
            var settings = ApplySettings(policy: definition.stages.delete?.policy ?? DeletionPolicy(whenNotRevocable: .keep, whenRevocationFails: .keep),
                                         deletionCap: try deletionCap(definition.guards, given: run.maxDeletions, store: store),
                                         accountsInFlight: definition.apply.accountsInFlight,
                                         runKey: "\(run.pipelineSHA256.prefix(16))-\(run.createdAt)")
            if let window = ProcessEnvironment.value("IDPIPE_APPLY_WINDOW").flatMap(Int.init) { settings.window = window }
            // Asked to show personal data, an apply records it, so that its resume (after a kill) writes its reports alike.
            // The last session's stop is cleared as this one starts: killed, this one would show it as its own in `status`.
            if run.status != .applying || !run.showsPersonalData(asked: false) && reveal || run.applyStop != nil {
                // Before the first action: from here on ledger.csv is apply's, and the reviewed one is kept beside it.
                // In the plan's folder, whose ledger.csv a later session may replace (this one may write its reports elsewhere).
                if run.status == .planned {
                    let writer = ReportWriter(store: store, out: out, reveal: run.showsPersonalData(asked: false), listLimit: definition.report.listLimit)
                    let folder = run.reportFolder.flatMap { FileInfo.kind($0) == .folder ? $0 : nil } ?? out
                    Console.out("report: \(try writer.writeReviewedLedger(in: folder)) (the plan's ledger, as reviewed)")
                }
                run.status = .applying
                run.applyStop = nil
                if reveal { run.revealPersonalData = true }
                try store.saveRun(run)
            }
            if let importKey, importing?.openRequests.isEmpty == false, run.importSignerKeySHA256 != importKey {
                run.importSignerKeySHA256 = importKey
                try store.saveRun(run)
            }
            let runner = ApplyRunner(store: store, effects: effects, credentials: credentials, settings: settings,
                                     clock: { epochMilliseconds() }, monotonic: { wallClockSeconds() }, logger: logger,
                                     importer: try importing?.runner(services: services, store: store, hash: importHash, existing: existing,
                                                                      duplicateEmails: definition.output.allowDuplicateEmails))
            let started = wallClockSeconds()
            let (outcome, resent) = try runInterruptibly(runner, command: command)
            Console.endProgress()
            try importing?.sayWhatWasDone(services: services, store: store, seconds: wallClockSeconds() - started)
            run.applyStop = nil
            switch outcome {
            case .completed: run.status = .applied
            case .stoppedByGuard(let why), .stoppedByConfiguration(let why): run.applyStop = why
            case .interrupted: run.applyStop = "interrupted"
            }
            try store.saveRun(run)
            try writeReports(store, run: run, settings: definition.report)
            let progress = runner.progress
            // Said of this session, and whether it ran to the end: "done, 0 failed" before "interrupted" read as a success.
            // After earlier sessions, the whole run's figures follow: a resume's own read as the run's.
            let sessions = try store.applySummary()?.sessions.count ?? 1
            let ended: String
            switch outcome {
            case .completed: ended = sessions > 1 ? "apply (this session)" : "apply"
            case .interrupted: ended = "apply, interrupted (this session)"
            case .stoppedByGuard, .stoppedByConfiguration: ended = "apply, stopped (this session)"
            }
            // After an import, whose line said what it did, only when accounts had actions of their own.
            if importing == nil || progress.accounts > 0 {
                Console.out("\(ended): \(Console.count(progress.accounts, "account")), \(Console.count(progress.actionsDone, "action")) done, "
                    + "\(progress.actionsFailed) failed, \(Console.count(progress.deleted, "account")) deleted, in \(formatSeconds(wallClockSeconds() - started))"
                    + (resent > 0 ? "; \(Console.count(resent, "action")) in flight at the last stop sent again" : "") + ".")
            }
            // A stop between an account's steps: what it left half done, for whoever reads the output (report.md counted
            // only the open actions).
            let finishing: String? = switch outcome {
            case .completed: nil
            // What finishes them is said with the error (a fix may need a new plan).
            case .stoppedByConfiguration: ""
            case .interrupted, .stoppedByGuard: "; \(Console.command(state: statePath)) finishes them"
            }
            if let finishing, case let partly = try store.partlyDoneAccountCount(), partly > 0 {
                Console.out("\(Console.count(partly, "account")) \(partly == 1 ? "is" : "are") part done: some of \(partly == 1 ? "its" : "their") "
                    + "steps done (data deleted, a token revoked), the rest still open\(finishing).")
            }
            let states = sessions > 1 ? try store.actionStates() : [:]
            // (None when the run has no action, only an import: its line said it all.)
            if !states.isEmpty {
                let total = { (state: ActionState) in states.values.reduce(0) { $0 + ($1[state] ?? 0) } }
                Console.out("all \(sessions) sessions: \(Console.count(total(.done), "action")) done, \(total(.failed)) failed, "
                    + "\(Console.count(states[.deleteAccount]?[.done] ?? 0, "account")) deleted.")
            }
            // A migration's accounts are in its import file: "applied" with nothing imported read as a migration done.
            if let output = definition.output.importJSON, definition.stages.importAccounts == nil {
                Console.error("idpipe: apply imported no accounts (the pipeline has no stages.import): load "
                    + "\(run.reportFolder.map { "\($0)/\(output)" } ?? output) into the project yourself (the Import file section of plan.md "
                    + "says how), or give the pipeline stages.import and plan again")
            }
            Console.out("state: \(statePath)")
            switch outcome {
            case .completed:
                // Failures of earlier sessions count too, and the input rows the plan quarantined: `run` and `resume`
                // said 1 for those, `apply` of the same plan 0.
                try failIfUnfinished(store)
            case .stoppedByGuard(let why):
                // Only when --max-deletions is the cap that stopped it: a lower guard of the pipeline is not raised so.
                var raise = ""
                if let given = run.maxDeletions, given == settings.deletionCap {
                    raise = " (--max-deletions \(given), kept with the run); to go on, give a higher N: "
                        + "\(Console.command(state: statePath, " --max-deletions N")) (the pipeline's guards still apply)"
                }
                throw fail("stopped by a guard: \(why)" + raise, code: Exit.stoppedByGuard)
            case .stoppedByConfiguration(let why):
                // A fix in the pipeline file itself makes another plan: resume refuses a changed pipeline.
                throw fail("\(why)\nNothing more was sent. Once the cause is fixed (a credential, a key file, a service back up), "
                    + "\(Console.command(state: statePath)) goes on and sends the actions in flight again; a fix in the pipeline file "
                    + "needs a new plan in a new state store.")
            case .interrupted:
                Console.error("idpipe: interrupted; \(Console.command(state: statePath)) continues")
                throw Exit.interrupted
            }
        } catch let code as ExitCode {
            throw code
        } catch {
            Console.endProgress()
            throw fail("\(error)")
        }
    }

    /// Exit code 1, said why, when the run holds failed actions or accounts its import could not bring in, or the plan
    /// quarantined input rows.
    func failIfUnfinished(_ store: StateStore) throws {
        let (failed, imported, quarantined) = try unfinished(store)
        if failed > 0 { Console.error("idpipe: \(Console.count(failed, "action")) failed; see the Outcomes section of \(out)/report.md") }
        if let imported, imported.notImported > 0 {
            let why = [imported.refused > 0 ? "\(imported.refused) refused by the API" : nil,
                       imported.keptExisting > 0 ? "\(imported.keptExisting) kept as the project has them, their uid being there already" : nil,
                       imported.clashing > 0 ? "\(imported.clashing) left out, another account of the project having their "
                           + imported.clashingWhat : nil]
            Console.error("idpipe: \(Console.count(imported.notImported, "account")) of the import file not imported (" + why.compactMap { $0 }.joined(separator: ", ")
                + "); see the Import section of \(out)/report.md")
        }
        if quarantined > 0 {
            Console.error("idpipe: \(Console.quarantinedRows(quarantined)) by the plan and not acted on; see the Quarantine section of "
                + "\(out)/report.md, or \(out)/quarantine.csv")
        }
        if failed > 0 || quarantined > 0 || (imported?.notImported ?? 0) > 0 { throw Exit.doneWithFailures }
    }

    /// The reports of the apply, with the pipeline's list limit, showing personal data if the plan's reports did, or if
    /// asked now (`--reveal-personal-data`).
    func writeReports(_ store: StateStore, run: RunRecord, settings: ReportConfig) throws {
        let writer = ReportWriter(store: store, out: out, reveal: run.showsPersonalData(asked: reveal), listLimit: settings.listLimit, stem: "report")
        for path in try writer.writeAll() { Console.out("report: \(path)") }
    }

    /// The deletion cap of this run: the smallest of the pipeline's guards and the run's --max-deletions.
    func deletionCap(_ guards: GuardsConfig, given: Int?, store: StateStore) throws -> Int? {
        var caps: [Int] = []
        if let max = guards.maxDeletions { caps.append(max) }
        if let share = guards.maxDeletionShare {
            let processed = try store.tally()["accounts.processed"]
            caps.append(Int((Double(processed) * share).rounded(.down)))
        }
        if let given { caps.append(given) }
        return caps.min()
    }

    /// The pipeline file and every input must be byte for byte what the plan read.
    func checkUnchanged(_ run: RunRecord, _ context: PipelineContext) throws {
        // Once apply has begun, the files the plan read finish it: a new plan starts over from what is left (review: an
        // export overwritten mid-apply, and only "plan again" said).
        let begun = run.status == .applying || run.status == .applied
        let next = begun ? "; apply has begun on this plan: put back the files it read as they were to finish it, or plan again into a new state store"
            : "; plan again into a new state store and review it"
        let pipelineDigest = context.sha256
        guard pipelineDigest == run.pipelineSHA256 else {
            throw CommandError("refusing to apply: the pipeline file \(context.path) changed since the plan was made "
                + "(sha256 \(run.pipelineSHA256.prefix(12)) then, \(pipelineDigest.prefix(12)) now)\(next)")
        }
        if context.definition.source.format != .identityToolkit {
            guard fileExists(run.sourcePath) else { throw CommandError("refusing to apply: the input \(run.sourcePath) is gone") }
            let digest = try FileFingerprint.digest(of: run.sourcePath)
            guard digest == run.sourceSHA256 else {
                throw CommandError("refusing to apply: the input \(run.sourcePath) changed since the plan was made "
                    + "(sha256 \(run.sourceSHA256?.prefix(12) ?? "none") then, \(digest.prefix(12)) now)\(next)")
            }
        }
        let digests = try context.prepareSideInputs()
        for (role, path) in context.sideInputPaths where digests[role] != run.sideInputSHA256[role] {
            throw CommandError("refusing to apply: the side input '\(role)' (\(path)) changed since the plan was made "
                + "(sha256 \(run.sideInputSHA256[role]?.prefix(12) ?? "none") then, \(digests[role]?.prefix(12) ?? "none") now)\(next)")
        }
    }

    /// What the operator said to the question before apply; with no terminal to ask on, nothing.
    enum Confirmation { case yes, noTerminal, declined }

    /// Asks on the terminal whether to apply the open actions (listed above it): only "yes" goes on.
    func confirm() -> Confirmation {
        guard isatty(0) == 1 else { return .noTerminal }
        Console.writeAll(1, "Apply these actions to the live accounts? Type 'yes': ")
        guard let answer = readLine(), answer.trimmingSpaces == "yes" else { return .declined }
        return .yes
    }

    /// How long a stop waits for the answers in flight before it cancels them.
    static let stopGrace: Double = ProcessEnvironment.value("IDPIPE_TEST_STOP_GRACE_S").flatMap(Double.init) ?? 30

    /// Runs the apply on the cooperative pool; SIGINT or SIGTERM stops it once the requests in flight are answered
    /// and recorded (`ApplyRunner.requestStop`), or cancels them after `stopGrace`; a second signal ends the process at
    /// once (what was in flight stays `sent`, for resume to send again).
    func runInterruptibly(_ runner: ApplyRunner, command: String) throws -> (ApplyOutcome, Int) {
        let task = Task.detached { () async throws -> (ApplyOutcome, Int) in
            let result = try await runner.apply(command: command, onProgress: { progress in
                let rate = progress.elapsedSeconds > 0 ? Int(Double(progress.actionsDone) / progress.elapsedSeconds) : 0
                Console.progress("apply: \(Console.count(progress.accounts, "account")) finished · \(Console.count(progress.actionsDone, "action")) "
                    + "done (\(rate)/s) · \(progress.actionsFailed) failed · \(progress.deleted) deleted")
            }, onImport: { done, total in Console.progress("import: \(done) of \(total) requests done") })
            return (result.outcome, result.resent)
        }
        let interruption = Interruption {
            Console.error("\nidpipe: stopping: no new account or step is started; waiting up to \(Int(Self.stopGrace)) s for the answers in "
                + "flight to be recorded (again to quit at once)")
            runner.requestStop()
            // A service that hangs would keep its requests retrying for minutes, and fail them: after the grace they
            // are cancelled and stay `sent`, for resume to send again.
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.stopGrace) { task.cancel() }
        }
        defer { interruption.end() }
        return try blocking { try await task.value }
    }
}

/// What keeps a finished run from "all done" (exit code 1): its failed actions, the accounts its import did not bring
/// in (`notImported`: refused, kept as the project has them, or left out for another account of the project), and the
/// input rows its plan quarantined.
func unfinished(_ store: StateStore) throws -> (failed: Int, imported: ImportSummary?, quarantined: Int) {
    (try store.actionStates().values.reduce(0) { $0 + ($1[.failed] ?? 0) }, try store.importSummary(limit: 0), try store.tally().quarantineRows)
}
