import ArgumentParser

/// The exit codes a scheduler can act on.
enum Exit {
    static let done = ExitCode(0)
    static let doneWithFailures = ExitCode(1)
    static let badInput = ExitCode(2)
    static let stoppedByGuard = ExitCode(3)
    static let interrupted = ExitCode(130)
}

/// Prints an error the way every command does, and returns the exit code for it.
func fail(_ message: String, code: ExitCode = Exit.badInput) -> ExitCode {
    Console.error("idpipe: error: \(message)")
    return code
}
