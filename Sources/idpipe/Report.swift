import ArgumentParser
import IdPipeCore
import IdPipeExtract
import IdPipeStore

struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a run's report again, from its state store.",
        discussion: "Personal data is masked, or shown as the plan's reports showed it (--reveal-personal-data or the pipeline's report.reveal_personal_data).")

    @Option(name: .long, help: ArgumentHelp("The state store of the run.", valueName: "db"))
    var state: String

    @Option(name: .long, help: """
        md (for reviewers), json (for machines), csv (the action ledger) or quarantine (the quarantined input rows, as CSV); \
        default: --output's extension (.csv: the ledger, or the quarantine when the file's name has 'quarantine' in it), else md.
        """)
    var format: String?

    @Option(name: .long, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "How many accounts each Markdown list shows (default: the pipeline's report.list_limit when planned, as plan.md has it).",
        valueName: "n"))
    var listLimit: Int?

    @OptionGroup var reportOptions: ReportOptions

    @Flag(name: .long, help: "Mask personal data even when the plan's reports showed it (a copy to share).")
    var maskPersonalData = false

    /// The format `--output`'s extension names (.md, .json, .csv: the ledger, or the quarantine when the file's name says
    /// so, as the plan's quarantine.csv does: written again there, the ledger replaced it), if any.
    private var outputFormat: ReportWriter.Format? {
        guard let output, let dot = output.lastIndex(of: "."), !output[dot...].contains("/") else { return nil }
        let named = output[output.index(after: dot)...].lowercased()
        if named == "csv" { return (output.split(separator: "/").last ?? "").lowercased().contains("quarantine") ? .quarantine : .csv }
        return ReportWriter.Format(rawValue: named).flatMap { $0 == .quarantine ? nil : $0 }
    }

    func validate() throws {
        if maskPersonalData && reportOptions.revealPersonalData { throw ValidationError("--mask-personal-data and --reveal-personal-data ask for opposite things: give one") }
        if let format, ReportWriter.Format(rawValue: format) == nil { throw ValidationError("--format must be md, json, csv or quarantine") }
        // `--output r.json` wrote Markdown, and a machine reading it failed.
        if let format = format.flatMap(ReportWriter.Format.init(rawValue:)), let named = outputFormat, named.fileExtension != format.fileExtension {
            throw ValidationError("--output \(output!) names a .\(named.fileExtension) file, and --format is \(format.rawValue): give one of them, or both alike")
        }
        guard (listLimit ?? 0) >= 0 else { throw ValidationError("--list-limit must be 0 or more") }
        try validatePaths(state: state, out: nil)
    }

    func run() throws {
        guard fileExists(state) else { throw fail("the state store \(state) does not exist") }
        do {
            let store = try StateStore(path: state)
            let run = try store.loadRun()
            let planned = run?.listLimit
            // plan.md says so in its text; the JSON, the ledger and the quarantine file read as whole (a quarantine of its
            // header alone as "nothing quarantined").
            if let run, run.status == .planning {
                let next = StateLock.holder(statePath: state).map { "it is being planned now (\($0))" }
                    ?? (run.resumesHere ? "\(Console.command(state: state)) finishes it" : "it was started by \(run.plannedBy); only that idpipe finishes it")
                Console.error("idpipe: warning: the plan is not finished: the report covers the input read so far; " + next)
            }
            // As the plan's reports were written: with the pipeline's report settings, unless told to mask.
            let reveal = !maskPersonalData && run?.showsPersonalData(asked: reportOptions.revealPersonalData) ?? reportOptions.revealPersonalData
            // Shown unasked, it is said, on stderr: a copy made to share would hold personal data without a word.
            if reveal && !reportOptions.revealPersonalData {
                Console.error("idpipe: personal data is shown, as this run's reports show it (--reveal-personal-data given to its plan or "
                    + "an apply, or report.reveal_personal_data); --mask-personal-data masks it")
            }
            let writer = ReportWriter(store: store, out: ".", reveal: reveal,
                                      listLimit: listLimit ?? planned ?? ReportConfig().listLimit)
            let chosen = format.flatMap(ReportWriter.Format.init(rawValue:)) ?? outputFormat ?? .md
            if let output {
                if let target = FileInfo.identity(output), StateStore.databaseFiles(at: state).contains(where: { FileInfo.identity($0) == target }) {
                    throw CommandError("--output \(output) is the state store (or its WAL) the report is read from")
                }
                // The run's pipeline and export, as the plan gave them from its folder: a report written over the export
                // replaced it with Markdown, and apply then refused the run ("input changed"). Its side inputs and its
                // import file too (a plan run again then named the overwritten import file as if it were whole).
                if let run, let target = FileInfo.identity(output) {
                    let base = run.workingDirectory ?? ""
                    var protected = [("pipeline file", run.pipelinePath), ("input", run.sourcePath)]
                    if let context = try? PipelineContext(path: SideInputReader.resolve(run.pipelinePath, base)) {
                        protected += context.sideInputPaths.map { ("inputs.\($0.0)", $0.1) }
                        if let name = context.definition.output.importJSON, let folder = run.reportFolder {
                            protected.append(("import file", folder + "/" + name))
                        }
                    }
                    for (what, path) in protected where FileInfo.identity(SideInputReader.resolve(path, base)) == target {
                        throw CommandError("--output \(output) is the run's \(what): the report would replace it")
                    }
                }
                _ = try writer.write(chosen, to: output)
            } else {
                var stream = StandardOutput()
                try writer.render(chosen, into: &stream)
            }
        } catch {
            throw fail("\(error)")
        }
    }
}

struct StandardOutput: TextOutputStream {
    mutating func write(_ string: String) {
        Console.writeAll(1, string)
    }
}
