import ArgumentParser
import IdPipeConnect
import IdPipeCore
import IdPipeExtract
import Logging

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a pipeline file and print what it would do.",
        discussion: """
            Reads the pipeline file and gives its problems at once, in line order: every unknown key (with the key it \
            seems to stand for), and every bad or missing value (a value others depend on, such as source.format, ends \
            its section, stage or service). Reads its side inputs as plan reads them (headers, encoding, repeated ids; \
            not one given as a stream, which a read would use up), and the key and secret files its services name \
            (nothing is sent); says which inputs are missing or are folders, and warns when the services could not be \
            set up here (a key file that cannot be read, no GOOGLE_APPLICATION_CREDENTIALS). Exit code 2 when the file is \
            invalid or an input could not be read (a pipeline is often checked where its keys are not kept: \
            --check-services makes a service that cannot be set up here an error too). The export itself is not read, but \
            for a table's header row, checked against the mapping.
            With --check-services it also signs in to each configured service without changing anything \
            (Google: a token and a one-account page; Apple: a client secret checked with a probe refresh; \
            Facebook: an app access token; Firestore, the Realtime Database and Storage: a read of the configured paths \
            for an id no account has; the data webhook: a HEAD request, which shows it reachable, not its secret accepted). Exit code 2 when a service refuses the credentials or cannot be reached.
            """)

    @Argument(help: "The pipeline file (YAML).")
    var pipeline: String

    @Flag(name: .long, help: "Also sign in to the services the pipeline names (no side effects).")
    var checkServices = false

    func run() throws {
        let context: PipelineContext
        do {
            context = try PipelineContext(path: pipeline)
            for line in context.describe() { Console.out(line) }
            for warning in context.warnings() { Console.error("idpipe: warning: " + warning) }
            let missing = context.servicesApplyNeeds()
            if !missing.isEmpty {
                Console.error("idpipe: warning: apply needs services the pipeline does not configure (its plan is made and can be "
                    + "reviewed all the same): " + missing.joined(separator: ", "))
            }
        } catch {
            throw fail("\(error)")
        }
        // Setting the services up reads their key and secret files and sends nothing: what apply (and a plan of the live
        // API or of data paths) would stop at first. Without --check-services a failure is a warning: a pipeline may well
        // be checked where its keys are not kept. (A short retry policy: a wrong address fails the checks fast.)
        if checkServices { bootstrapLogging(verbose: false) }
        switch Result(catching: { try Services(context, retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.2), logger: Logger(label: "idpipe")) }) {
        case .failure(let error) where checkServices:
            throw fail("\(error)")
        case .failure(let error):
            // A plan that sets them up too (to read the live API, or to count the data to delete) would stop here.
            Console.error("idpipe: warning: " + (context.planUsesServices ? "plan and apply would stop here, as they could not set up the services: "
                : "apply could not set up the services here: ") + "\(error)")
        case .success(let services):
            defer { services.shutdown() }
            // The import's signer key, read as apply reads it (where the key is kept, apply runs).
            if let hash = context.definition.stages.importAccounts?.passwordHash {
                do { _ = try services.passwordHash(hash) } catch {
                    if checkServices { throw fail("\(error)") }
                    Console.error("idpipe: warning: apply could not read the import's signer key here: \(error)")
                }
            }
            if checkServices {
                let results = services.check()
                if results.isEmpty { Console.out("services: none configured") }
                for (ok, line) in results { Console.out((ok ? "ok: " : "FAILED: ") + line) }
                if results.contains(where: { !$0.ok }) { throw fail("\(pipeline): a service check failed (see above)") }
            }
        }
        try checkInputs(context)
    }

    /// The inputs as plan finds them: readable, and the side inputs as it reads them. Says "valid" when they are.
    private func checkInputs(_ context: PipelineContext) throws {
        let unreadable = context.unreadableInputs()
        guard unreadable.isEmpty else {
            throw fail("\(pipeline): the file itself is well formed, but plan could not read " + unreadable.joined(separator: ", ") + " (see above)")
        }
        do { try context.refuseSecretFilesAsInputs() } catch { throw fail("\(error)") }
        // What plan reads first, and stops at: a side input with a missing column, bytes that are not UTF-8, an id
        // twice. Validate said "valid" and the plan refused the same file.
        var files = context.definition.inputs
        for (_, key) in InputsConfig.roles {
            if let path = files[keyPath: key].map(context.resolve), case .file = FileInfo.kind(path) { continue }
            files[keyPath: key] = nil  // a stream (or nothing): left to the plan
        }
        do { _ = try SideInputReader.load(files, relativeTo: context.folder) } catch {
            throw fail("\(pipeline): the file itself is well formed, but plan would stop at a side input: \(error)")
        }
        // A table's header against its mapping, which plan reads first: a column named in another letter case or
        // missing stopped the plan after validate had said "valid".
        if context.definition.source.format == .mappedCSV, case .file = FileInfo.kind(context.sourcePath) {
            do { _ = try context.openSource(InputCheckpoint(), services: nil) } catch {
                throw fail("\(pipeline): the file itself is well formed, but plan would stop at the source's header: \(error)")
            }
        }
        Console.out("\(pipeline): valid")
    }
}
