import ArgumentParser
import IdPipeConnect
import IdPipeCore
import IdPipeExtract
import Logging

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a pipeline file and print what it would do.",
        discussion: """
            Reads the pipeline file, its side inputs as plan reads them (headers, encoding, repeated ids; not one given as a \
            stream, which a read would use up), and the key and secret files its services name (nothing is sent); says \
            which inputs are missing or are folders, and warns when the services could not be set up here (a key file \
            that cannot be read, no GOOGLE_APPLICATION_CREDENTIALS). Exit code 2 when the file is invalid or an input \
            could not be read. The export itself is not read.
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
        if !checkServices {
            // What apply (and a plan of the live API) would stop at first, found without a request: a key or secret file
            // that cannot be read, or is no key. A warning: a pipeline may well be checked where its keys are not kept.
            do { try Services(context, logger: Logger(label: "idpipe")).shutdown() } catch {
                // The plan sets them up too to read the live API, or to count the data paths to delete.
                let d = context.definition
                let who = d.source.format == .identityToolkit || d.stages.delete?.pathKinds.isEmpty == false ? "plan and apply" : "apply"
                Console.error("idpipe: warning: \(who) could not set up the services here: \(error)")
            }
        } else {
            bootstrapLogging(verbose: false)
            let services: Services
            do { services = try Services(context, retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.2), logger: Logger(label: "idpipe")) } catch { throw fail("\(error)") }
            defer { services.shutdown() }
            let results = services.check()
            if results.isEmpty { Console.out("services: none configured") }
            for (ok, line) in results { Console.out((ok ? "ok: " : "FAILED: ") + line) }
            if results.contains(where: { !$0.ok }) { throw fail("\(pipeline): a service check failed (see above)") }
        }
        let unreadable = context.unreadableInputs()
        guard unreadable.isEmpty else {
            throw fail("\(pipeline): the file itself is well formed, but plan could not read " + unreadable.joined(separator: ", ") + " (see above)")
        }
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
        Console.out("\(pipeline): valid")
    }
}
