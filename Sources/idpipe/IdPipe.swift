import ArgumentParser
import IdPipeCore
import IdPipeExtract

@main
struct IdPipe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idpipe",
        abstract: "Migrate and clean up the accounts of Sign in with Apple / Facebook Login apps on Firebase Authentication.",
        discussion: """
            A pipeline file (YAML) says where accounts come from, which ones to act on, and which stages run:
            extract → normalize → detect private relay → backfill names → revoke tokens → delete → report.
            A migration writes an import file instead of revoking and deleting, and with stages.import apply imports it.

            Exit codes: 0 all done; 1 done, with quarantined rows or per-account failures; 2 bad usage, pipeline \
            file, input or credentials, or a service that went down during apply (`idpipe resume --state DB` goes \
            on once it is back); 3 stopped by a guard; 130 interrupted (`idpipe resume --state DB` continues, as \
            does the same command again).
            """,
        version: IdPipeVersion.text,
        subcommands: [Validate.self, Plan.self, Apply.self, RunPipeline.self, Resume.self, Status.self, Report.self])

    static func main() {
        // Before anything opens a descriptor of its own: `/dev/fd/N` is an input only when the caller opened N.
        FileInfo.noteInheritedDescriptors()
        Allocator.returnFreedPagesSooner()
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            // Bad usage exits 2, as the exit codes above say (ArgumentParser's own code for it is 64, EX_USAGE).
            let code = exitCode(for: error)
            // --help and --version are printed as ArgumentParser prints them.
            guard code != .success else { exit(withError: error) }
            // An error's message may quote a service or a file: written through Console, which shows a control character
            // as its code rather than sending it to the terminal.
            var message = fullMessage(for: error)
            // `plan --yes`: the option belongs to the commands that apply; ArgumentParser offered --out.
            if CommandLine.arguments.dropFirst().first == "plan", message.contains("Unknown option '--yes'") {
                message += "\nplan is the dry run and applies nothing: `idpipe run PIPELINE.yaml --yes` plans and applies, "
                    + "`idpipe apply --state DB --yes` applies a reviewed plan."
            }
            if !message.isEmpty { Console.error(message) }
            exit(withError: code.rawValue == 64 ? Exit.badInput : code)
        }
    }
}
