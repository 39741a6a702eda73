import ArgumentParser

/// Where a run keeps its state and writes its reports.
struct RunLocationOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The state store (SQLite). Default: OUT/state.sqlite.", valueName: "db"))
    var state: String?

    @Option(name: .long, help: ArgumentHelp("Folder for reports and outputs. Default: out/<pipeline name>.", valueName: "dir"))
    var out: String?
}

struct ReportOptions: ParsableArguments {
    @Flag(name: .long, help: "Show emails, names and phone numbers in reports instead of masking them.")
    var revealPersonalData = false
}
