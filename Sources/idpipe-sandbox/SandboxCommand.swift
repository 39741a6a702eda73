import ArgumentParser
import Foundation
import IdPipeSandbox

@main
struct SandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idpipe-sandbox",
        abstract: "A local, strict stand-in for Identity Toolkit, Google OAuth, Firestore, the Realtime Database, Cloud Storage, Sign in with Apple and the Facebook Graph API.",
        discussion: """
            It checks what the real services check (JWT signatures and claims, request fields against the Identity \
            Toolkit schema, per-call limits, quotas), can inject faults, and keeps a ledger of every side effect. \
            `GET /__sandbox/data` dumps the data stores in the fixture's form.
            Start with `idpipe-sandbox init --dir DIR`, then `idpipe-sandbox serve --dir DIR --accounts EXPORT.json`.
            """,
        subcommands: [Init.self, Serve.self])
}

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create a sandbox folder: keys, client credentials, sandbox.json.")

    @Option(help: "The folder to create.") var dir: String
    @Option(help: "The port `serve` will listen on (written into the service account's token_uri).") var port = 8790
    @Option(help: "The Firebase project id.") var project = "demo-idpipe"

    func run() throws {
        let written = try SandboxSetup.initialize(directory: dir, port: port, projectId: project)
        print("""
            Wrote \(dir)/:
              \(SandboxSetup.serviceAccountFile)  Google service-account key (token_uri http://127.0.0.1:\(port)/token)
              \(written.appleKeyFile)        Sign in with Apple key (team \(written.appleTeamId), key \(written.appleKeyId), client \(SandboxSetup.appleClientId))
              \(SandboxSetup.facebookSecretFile) Facebook app secret (app \(SandboxSetup.facebookAppId))
              sandbox.json, google-public.pem, apple-public.pem
            """)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the sandbox until interrupted.")

    @Option(help: "The folder `init` created.") var dir: String
    @Option(help: "Listen on this port (default: the one given to init).") var port: Int?
    @Option(help: "Load accounts from a `firebase auth:export` JSON file.") var accounts: String?
    @Option(help: "Learn the Apple tokens/codes and Facebook ids an app stored (idpipe's stored-tokens JSON Lines).") var storedTokens: String?
    @Option(help: "Load Firestore documents, Realtime Database trees and Storage objects from a data fixture (see Samples/README.md).") var data: String?
    @Option(help: "Append each ledger entry to this file as a JSON line.") var ledger: String?
    @Option(help: "Share of service requests answered 503.") var fault503 = 0.0
    @Option(help: "Share of service requests answered 500.") var fault500 = 0.0
    @Option(help: "Share of service requests answered 429 with Retry-After.") var fault429 = 0.0
    @Option(help: "Share of service requests whose connection is dropped after the effect.") var faultDrop = 0.0
    @Option(help: "Chance per service request that a burst of 429s starts.") var fault429Burst = 0.0
    @Option(help: "How many requests in a row a 429 burst answers.") var burstLength = 20
    @Option(help: "The Retry-After of injected 429s, in seconds.") var retryAfter = 1
    @Option(help: "Latency added to every service answer, in milliseconds.") var latencyMs = 0
    @Option(help: "Seed of the fault pattern.") var seed: UInt64 = 1
    @Option(help: "accounts:batchDelete requests per second (0: no quota).") var quotaBatchDelete = 1.0
    @Option(help: "accounts:update requests per second (0: no quota).") var quotaUpdate = 10.0
    @Option(help: "batchGet/lookup requests per second (0: no quota).") var quotaRead = 0.0
    @Option(help: "accounts:batchCreate requests per second (0: no quota).") var quotaBatchCreate = 0.0
    @Option(help: "Apple requests per second (0: no quota).") var quotaApple = 0.0
    @Option(help: "Facebook requests per second (0: no quota).") var quotaFacebook = 0.0
    @Option(help: "Data-deletion webhook requests per second (0: no quota).") var quotaWebhook = 0.0
    @Option(help: "Lifetime of issued Google access tokens, in seconds.") var tokenLifetime: Int64 = 3600

    func run() async throws {
        var (config, configuredPort) = try SandboxSetup.load(directory: dir)
        config.quotas.batchDelete = quotaBatchDelete
        config.quotas.update = quotaUpdate
        config.quotas.read = quotaRead
        config.quotas.batchCreate = quotaBatchCreate
        config.quotas.apple = quotaApple
        config.quotas.facebook = quotaFacebook
        config.quotas.webhook = quotaWebhook
        config.google?.tokenLifetime = tokenLifetime
        config.faults.status503 = fault503
        config.faults.status500 = fault500
        config.faults.status429 = fault429
        config.faults.drop = faultDrop
        config.faults.burst429 = fault429Burst
        config.faults.burstLength = burstLength
        config.faults.retryAfterSeconds = retryAfter
        config.faults.latencyMilliseconds = latencyMs
        config.faults.seed = seed
        let service = try SandboxService(config: config, ledgerPath: ledger)
        var loaded = "no accounts"
        if let accounts {
            guard let data = FileManager.default.contents(atPath: accounts) else { throw SandboxError("cannot read \(accounts)") }
            let counts = try service.loadAccounts(exportJSON: [UInt8](data), file: accounts)
            loaded = "\(counts.loaded) accounts" + (counts.skipped > 0 ? ", \(counts.skipped) records without a localId skipped" : "")
        }
        if let storedTokens {
            guard let data = FileManager.default.contents(atPath: storedTokens) else { throw SandboxError("cannot read \(storedTokens)") }
            try service.loadStoredTokens(jsonLines: String(decoding: data, as: UTF8.self), file: storedTokens)
        }
        if let data {
            guard let bytes = FileManager.default.contents(atPath: data) else { throw SandboxError("cannot read \(data)") }
            let counts = try service.loadData(json: [UInt8](bytes), file: data)
            loaded += "; data: \(counts.documents) documents, \(counts.nodes) database nodes, \(counts.objects) objects"
        }
        let server = try await SandboxServer.start(service: service, port: port ?? configuredPort)
        if server.port != configuredPort {
            try SandboxSetup.pointClients(directory: dir, config: config, port: server.port)
        }
        let line = "idpipe-sandbox listening on \(server.baseURL) (project \(config.projectId), \(loaded)); ledger at \(server.baseURL)/__sandbox/ledger\n"
        FileHandle.standardOutput.write(Data(line.utf8))
        try await server.wait()
    }
}
