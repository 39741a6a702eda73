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

    /// Nil when the pipeline does not import. The import file is looked for beside the state store, where the plan wrote
    /// it, and in the reports' folder (`--out`), so that a plan's folder can be moved or copied to where it is applied;
    /// the first that is the file the plan wrote (its SHA-256) is taken, and a changed one refused.
    static func prepare(_ context: PipelineContext, run: RunRecord, store: StateStore, statePath: String, out: String) throws -> ImportStep? {
        guard let config = context.definition.stages.importAccounts, let name = context.definition.output.importJSON else { return nil }
        guard let expected = run.importFileSHA256 else {
            throw CommandError("the plan in this state store recorded no fingerprint of its import file (an older idpipe planned it): "
                + "plan again into a new state store, then apply")
        }
        let folders = [folder(of: statePath), run.reportFolder, out].compactMap { $0 }
        var candidates: [String] = []
        for folder in folders where !candidates.contains(folder + "/" + name) { candidates.append(folder + "/" + name) }
        let found = candidates.filter { FileManager.default.fileExists(atPath: $0) }
        guard let first = found.first else {
            throw CommandError("refusing to import: the plan's import file is neither beside the state store, nor where it was written, nor "
                + "in the reports' folder (\(candidates.joined(separator: ", "))); put it back, or plan again into a new state store")
        }
        var digests: [String] = []
        for candidate in found {
            let digest = try FileFingerprint.digest(of: candidate)
            if digest == expected { return try prepared(path: candidate, config: config, run: run, store: store) }
            digests.append(digest)
        }
        throw CommandError("refusing to import: the import file \(first) changed since the plan was made (sha256 \(expected.prefix(12)) then, "
            + "\(digests[0].prefix(12)) now): apply imports the file that was reviewed; plan again into a new state store and review it")
    }

    /// The file found: the password hashes checked, the requests split (or read back from the store).
    private static func prepared(path: String, config: ImportConfig, run: RunRecord, store: StateStore) throws -> ImportStep {
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

    /// What the confirmation lists: the accounts, where they go, the names they carry, and what becomes of an account
    /// the project has already.
    func confirmationLine(into target: String, names: Int, existing: ImportConfig.ExistingAccounts, duplicateEmails: Bool) -> String? {
        let open = openRequests
        guard !open.isEmpty else { return nil }
        return "  import: \(open.reduce(0) { $0 + $1.users }) accounts into \(target), in \(open.count) accounts:batchCreate requests"
            + (names > 0 ? ", with the \(names) names the plan fills" : "")
            + (existing == .keep ? "; an account whose uid is there already is kept as it is, and one whose " + (duplicateEmails ? "" : "email, ")
                + "phone number or sign-in another account there has is left out" : "; an account whose uid is there already is OVERWRITTEN")
    }

    /// The runner that sends the open requests, first in the apply session (`ApplyRunner`). Made when none is left too:
    /// a session stopped after the last answer, before the name updates were closed, has them closed by the next one
    /// (without the runner, they would have been sent on their own).
    /// `existing`: what to do with an account the project holds already; `keep` looks each request's accounts up
    /// (`accounts:lookup`, 100 identifiers a call, at the pace of `services.google`'s reads) before it is first sent: their
    /// uids, then the emails (unless `duplicateEmails`), phone numbers and links of those whose uid is not there.
    func runner(services: Services, store: StateStore, hash: PasswordHashParameters?, existing: ImportConfig.ExistingAccounts,
                duplicateEmails: Bool) throws -> ImportRunner {
        guard let client = services.importTarget else { throw CommandError("stages.import imports with services.google's credentials: it is not configured") }
        var lookup: ImportRunner.Lookup?
        if existing == .keep { lookup = { identifiers in try await Self.find(identifiers, in: client) } }
        return ImportRunner(store: store, importFile: path, clock: { epochMilliseconds() }, lookup: lookup, checksEmails: !duplicateEmails) { users in
            try await client.batchCreate(users: users, hash: hash)
        }
    }

    /// The project's accounts found by `identifiers`: looked up 100 a call, the calls at once (their pace is the client's).
    private static func find(_ identifiers: [AccountIdentifier], in client: IdentityToolkitClient) async throws -> [JSONValue] {
        try await withThrowingTaskGroup(of: [JSONValue].self) { group in
            for start in stride(from: 0, to: identifiers.count, by: IdentityToolkitClient.maxLookup) {
                let chunk = Array(identifiers[start..<min(start + IdentityToolkitClient.maxLookup, identifiers.count)])
                group.addTask { try await client.lookup(chunk) }
            }
            var found: [JSONValue] = []
            for try await users in group { found += users }
            return found
        }
    }

    /// Where the import stands after this session, and the name updates it carried.
    func sayWhatWasDone(services: Services, store: StateStore, seconds: Double) throws {
        guard !openRequests.isEmpty, let summary = try store.importSummary(limit: 0) else { return }
        let finished = openRequests.count - summary.openRequests
        Console.out("import: \(summary.imported) of \(summary.users) accounts imported into \(services.importTarget?.accountsBase ?? "the project")"
            + Console.leftOutOfImport(summary).map { ", " + $0 }.joined()
            + (summary.refused > 0 ? ", \(summary.refused) refused by the API" : "")
            + (summary.notImported > 0 ? " (see the Import section of the report)" : "")
            + "; this session finished \(finished) of the \(openRequests.count) requests left, in \(formatSeconds(seconds))"
            + (summary.openRequests > 0 ? "; \(summary.openRequests) still to send" : "") + ".")
        // Closed by the import once every request was done (`ApplyRunner`).
        if summary.openRequests == 0, let names = try store.actionStates()[.updateName]?[.done], names > 0 {
            Console.out("names: \(Console.count(names, "name update")) went in with the imported accounts; none is sent on its own.")
        }
    }
}
