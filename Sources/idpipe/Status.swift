import ArgumentParser
import IdPipeCore
import IdPipeExtract
import IdPipeStore

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Say where a run stands.")

    @Option(name: .long, help: ArgumentHelp("The state store of the run.", valueName: "db"))
    var state: String

    @Flag(name: .long, help: ArgumentHelp(
        "Exit with the run's standing, for a monitor (without it, status exits 0 whenever it could read the store): 0 a run going on "
            + "now, a finished plan ready to apply, or an apply done with nothing failed; 1 done with failed actions, accounts the import "
            + "could not bring in, or quarantined input rows; 2 an apply stopped by its configuration (a credential, a service), or a "
            + "plan whose data nothing can count (no services.google); 3 stopped by a guard (the plan's, or apply's deletion cap); 130 "
            + "stopped or killed before its end, or its data not yet counted (resume continues)."))
    var exitCode = false

    func validate() throws {
        try validatePaths(state: state, out: nil)
    }

    func run() throws {
        guard fileExists(state) else { throw fail("the state store \(state) does not exist") }
        // An empty file is no store (opened, it was made one: 64 KB of tables).
        if case .file(let size) = FileInfo.kind(state), size == 0 { throw fail("\(state) is empty: not a state store") }
        do {
            let store = try StateStore(path: state)
            guard let run = try store.loadRun() else { throw fail("\(state) holds no run") }
            let checkpoint = try store.loadCheckpoint()
            let tally = checkpoint?.tally ?? Tally()
            // The paths as the plan was given them, from its folder: from another folder they are shown from there.
            let base = run.workingDirectory.flatMap { $0 == currentDirectory() ? nil : $0 } ?? ""
            Console.out("pipeline: \(run.pipelineName) (\(SideInputReader.resolve(run.pipelinePath, base)))")
            Console.out("input: \(run.sourceFormat == SourceFormat.identityToolkit.rawValue ? run.sourcePath : SideInputReader.resolve(run.sourcePath, base))")
            Console.out("as of: \(Timestamp.formatRFC3339(run.asOf))")
            Console.out("planned by: \(run.plannedBy)" + (run.resumesHere ? "" : " (this is idpipe \(IdPipeVersion.text))"))
            // A run going on holds the store's lock: "running" and who, else a plan or apply left midway was stopped.
            let holder = StateLock.holder(statePath: state)
            let resume = Console.command(state: state)
            var said = ""
            if holder == nil && run.status != .planning && StateStore.hasUnsyncedWrites(at: state) {
                said = " (stopped before its end, its reports perhaps not written: \(resume) ends it)"
            } else if holder == nil && run.status == .applying && run.applyStop == nil {
                // Killed (or its machine went down) mid-apply: nothing said so, and the counts read as a run going on.
                said = " (not running: the apply ended without recording why: killed, its machine down, or an error; \(resume) continues)"
            }
            Console.out("status: \(run.status.rawValue)" + (holder.map { " (running now: \($0))" } ?? "") + said)
            if run.status == .planning {
                let done = checkpoint?.input.offset ?? 0
                let percent = run.sourceSize > 0 ? done * 100 / run.sourceSize : 0
                // A plan that `run --yes` started is applied by resume once finished: said before it changes anything.
                let then = Console.thenApplies(run, "it")
                // Another idpipe's plan is not resumed by this one (`PlanError.interruptedByOtherVersion`).
                let next = run.resumesHere ? "\(resume) finishes it\(then)"
                    : "started by \(run.plannedBy): only that idpipe finishes it, or plan again into a new state store"
                Console.out("progress: \(checkpoint?.input.records ?? 0) records, \(percent) % of the input"
                    + (holder == nil ? " (interrupted; \(next))" : ""))
            }
            // A plan whose data counts are unfinished read as ready: apply refuses it (and a count going on looks so).
            if run.status == .planned {
                let toDo = try pathCountsToDo(store)
                if toDo > 0 {
                    let recount = try store.recountableActionCount()
                    let then = Console.thenApplies(run, "it")
                    // Without services.google nothing can count them: a resume would not either.
                    let pipeline = try? PipelineContext(path: SideInputReader.resolve(run.pipelinePath, base))
                    let next = pipeline.map { $0.definition.services.google == nil } == true
                        ? " (the pipeline has no services.google to count them with: add it, and plan again into a new state store)"
                        : holder == nil ? " (\(resume) counts them\(then))" : " (being counted now)"
                    Console.out("data: \(toDo) path deletions not counted" + (recount > 0 ? " (\(recount) gave up on passing faults)" : "")
                        + "; apply refuses the plan until they are" + next)
                }
            }
            Console.out("accounts: \(tally["accounts.read"]) read, \(tally["accounts.quarantined"]) quarantined"
                + (tally.inputEndsEarly ? " (the input ends early: truncated?)" : ""))
            // Before apply, the plan's counts; from apply on, where each action stands now.
            let applying = run.status == .applying || run.status == .applied
            let now = applying ? try store.actionStates() : [:]
            for kind in ActionKind.allCases {
                let counts = ActionState.allCases.map { ($0, applying ? now[kind]?[$0] ?? 0 : tally["actions.\(kind.rawValue).\($0.rawValue)"]) }.filter { $0.1 > 0 }
                if !counts.isEmpty { Console.out("\(kind.rawValue): " + counts.map { "\($0.1) \($0.0.rawValue)" }.joined(separator: ", ")) }
            }
            if let imported = try store.importSummary(limit: 0) {
                let unanswered = imported.requests[.sent] ?? 0
                Console.out("import: \(imported.imported) of \(imported.users) accounts imported, \(imported.refused) refused, "
                    + Console.leftOutOfImport(imported).map { $0 + ", " }.joined()
                    + "\(imported.openRequests) of \(imported.totalRequests) requests still to send"
                    + (unanswered > 0 && holder == nil ? " (\(unanswered) of them sent, their answer lost to a stop: their accounts may be in, and "
                        + "are sent again)" : unanswered > 0 ? " (\(unanswered) in flight now)" : ""))
            } else if run.importFileSHA256 != nil {
                Console.out("import: not started (apply imports the import file)")
            }
            if let stop = run.applyStop {
                // A cap stop goes on only with a higher cap: resume keeps to the run's --max-deletions.
                let next = stop.hasPrefix("the deletion cap") && run.maxDeletions != nil
                    ? "\(Console.command(state: state, " --max-deletions N")) with a higher N goes on"
                    : "\(Console.command(state: state)) continues"
                Console.out("last apply stopped: \(stop) (\(next))")
            }
            if let verdict = run.guardVerdict { Console.out("guard: \(verdict)") }
            if exitCode, let code = try standing(run, store: store, running: holder != nil, base: base) { throw code }
        } catch let code as ExitCode {
            throw code
        } catch {
            throw fail("\(error)")
        }
    }

    /// The run's standing as the exit codes of run and apply say it (`--exit-code`); nil for 0.
    /// `base`: the folder the run's paths are relative to.
    func standing(_ run: RunRecord, store: StateStore, running: Bool, base: String) throws -> ExitCode? {
        if running { return nil }
        switch run.status {
        case .planning: return Exit.interrupted
        case .stoppedByGuard: return Exit.stoppedByGuard
        case .planned:
            if StateStore.hasUnsyncedWrites(at: state) { return Exit.interrupted }
            guard try pathCountsToDo(store) > 0 else { return nil }
            // Counts to do: resume makes them, unless the pipeline has nothing to count them with (a new plan is needed).
            if let pipeline = try? PipelineContext(path: SideInputReader.resolve(run.pipelinePath, base)), pipeline.definition.services.google == nil {
                return Exit.badInput
            }
            return Exit.interrupted
        case .applying:
            guard let stop = run.applyStop, stop != "interrupted" else { return Exit.interrupted }
            return stop.hasPrefix("the deletion cap") ? Exit.stoppedByGuard : Exit.badInput
        case .applied:
            let (failed, imported, quarantined) = try unfinished(store)
            return failed > 0 || (imported?.notImported ?? 0) > 0 || quarantined > 0 ? Exit.doneWithFailures : nil
        }
    }
}
