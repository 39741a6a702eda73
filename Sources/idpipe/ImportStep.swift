import Foundation
import IdPipeApply
import IdPipeConnect
import IdPipeCore
import IdPipeExtract
import IdPipeStore

/// Apply's import (`stages.import`): the plan's import file, checked against the plan's fingerprint of it, split into
/// requests (recorded once), then sent to `services.google`'s project by `ImportRunner`.
struct ImportStep {
    let path: String
    let requests: [ImportRequest]

    /// Nil when the pipeline does not import. Refuses an import file that is gone or changed since the plan.
    static func prepare(_ context: PipelineContext, run: RunRecord, store: StateStore) throws -> ImportStep? {
        guard let config = context.definition.stages.importAccounts, let name = context.definition.output.importJSON else { return nil }
        guard let folder = run.reportFolder, let expected = run.importFileSHA256 else {
            throw CommandError("the plan in this state store recorded no fingerprint of its import file (an older idpipe planned it): "
                + "plan again into a new state store, then apply")
        }
        let path = folder + "/" + name
        guard FileManager.default.fileExists(atPath: path) else {
            throw CommandError("refusing to import: the plan's import file \(path) is gone; plan again into a new state store")
        }
        let digest = try FileFingerprint.digest(of: path)
        guard digest == expected else {
            throw CommandError("refusing to import: the import file \(path) changed since the plan was made (sha256 \(expected.prefix(12)) then, "
                + "\(digest.prefix(12)) now): apply imports the file that was reviewed; plan again into a new state store and review it")
        }
        // The API refuses a request with a password hash and no hash parameters: known before anything is sent.
        let hashes = try store.tally()["import.password-hashes"]
        if hashes > 0, config.passwordHash == nil {
            throw CommandError("refusing to import: \(Console.count(hashes, "account")) in the import file \(hashes == 1 ? "has" : "have") a password hash, and "
                + "stages.import gives no password_hash (the project's hash parameters: the console's Authentication > Users > Password "
                + "hash parameters), without which accounts:batchCreate refuses them; add it to \(run.pipelinePath) and plan again into a new state store")
        }
        let requests = try ImportRunner.prepare(store: store, importFile: path, usersPerRequest: config.usersPerRequest)
        return ImportStep(path: path, requests: requests)
    }

    var openRequests: [ImportRequest] { requests.filter(\.state.isOpen) }

    /// What the confirmation lists.
    var confirmationLine: String? {
        let open = openRequests
        guard !open.isEmpty else { return nil }
        return "  import: \(open.reduce(0) { $0 + $1.users }) accounts in \(open.count) accounts:batchCreate requests to do"
    }

    /// Sends the open requests; a signal stops it between two of them (the one in flight is answered and recorded).
    func run(services: Services, store: StateStore, hash: PasswordHashParameters?) throws -> ImportRunner.Outcome {
        guard let client = services.identityToolkit else { throw CommandError("stages.import imports into services.google's project: it is not configured") }
        let runner = ImportRunner(store: store, importFile: path, clock: { epochMilliseconds() }) { users in
            try await client.batchCreate(users: users, hash: hash)
        }
        let interruption = Interruption {
            Console.error("\nidpipe: stopping: waiting for the import request in flight to be answered and recorded (again to quit at once)")
        }
        defer { interruption.end() }
        let raised = interruption.raised
        let started = wallClockSeconds()
        let outcome = try blocking {
            try await runner.run(shouldStop: raised) { done, total in
                Console.progress("import: \(done) of \(total) requests done")
            }
        }
        Console.endProgress()
        if let summary = try store.importSummary(limit: 0) {
            Console.out("import: \(summary.imported) accounts imported into \(client.accountsBase) in \(formatSeconds(wallClockSeconds() - started))"
                + (summary.refused > 0 ? ", \(summary.refused) refused by the API (see the Import section of the report)" : "")
                + (summary.openRequests > 0 ? "; \(summary.openRequests) of \(summary.totalRequests) requests still to send" : "") + ".")
        }
        return outcome
    }
}
