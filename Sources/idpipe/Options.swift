import ArgumentParser
import IdPipeExtract

/// Where a run keeps its state and writes its reports.
struct RunLocationOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The state store (SQLite). Default: OUT/state.sqlite.", valueName: "db"))
    var state: String?

    @Option(name: .long, help: ArgumentHelp("Folder for reports and outputs. Default: out/<pipeline name>.", valueName: "dir"))
    var out: String?

    func validate() throws {
        try validatePaths(state: state, out: out)
    }
}

/// An empty --state or --out wrote the reports and the store into the root folder (as root); an --out that is a file
/// said "cannot open the state store …/state.sqlite.lock: Not a directory".
func validatePaths(state: String?, out: String?) throws {
    if state?.isEmpty == true { throw ValidationError("--state is empty: give the state store's path") }
    if out?.isEmpty == true { throw ValidationError("--out is empty: give a folder") }
    if let out, case .file = FileInfo.kind(out) { throw ValidationError("--out \(out) is a file, not a folder") }
    if let state, case .folder = FileInfo.kind(state) { throw ValidationError("--state \(state) is a folder: give the state store's file (e.g. \(state)/state.sqlite)") }
}

struct ReportOptions: ParsableArguments {
    @Flag(name: .long, help: "Show emails, names and phone numbers in reports instead of masking them.")
    var revealPersonalData = false
}
