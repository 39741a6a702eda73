import Dispatch
import Foundation
import IdPipeApply
import IdPipeConnect
import IdPipeCore
import IdPipeCrypto
import IdPipeHTTP
import Logging
import Synchronization

/// The remote services a pipeline names, built once per command on one HTTP transport.
final class Services {
    let transport: AsyncHTTPTransport
    let identityToolkit: IdentityToolkitClient?
    /// Where `stages.import` sends the accounts: `identityToolkit`, or its project_id / tenant_id's, with the same credentials.
    let importTarget: IdentityToolkitClient?
    let projectId: String?
    let apple: AppleClient?
    let facebook: FacebookClient?
    let webhook: DataWebhookClient?
    /// The configured Firestore, Realtime Database and Cloud Storage paths, on their clients.
    let dataStores: DataStores
    /// `services.google.batch_deletes_per_second`: the pacing of apply's deletion queue.
    let batchDeleteRate: Double
    /// Every channel built, for the traffic figures of the report.
    let channels: [ServiceChannel]
    /// Where secrets named later are read from (`passwordHash`).
    private let context: PipelineContext
    private let environment: [String: String]

    /// `retry` applies to every service; `validate --check-services` passes a short one so a wrong address fails fast.
    init(_ context: PipelineContext, environment: [String: String] = ProcessInfo.processInfo.environment,
         retry: RetryPolicy = RetryPolicy(), logger: Logger) throws {
        let services = context.definition.services
        self.context = context
        self.environment = environment
        var channels: [ServiceChannel] = []
        transport = AsyncHTTPTransport(connectionsPerHost: 64)
        var googleTokens: (any AccessTokenSource)?
        batchDeleteRate = services.google?.batchDeletesPerSecond ?? 1
        if let google = services.google {
            let (base, emulator) = try IdentityToolkitClient.base(environment: environment, override: google.endpoint)
            let tokens: any AccessTokenSource
            var project = google.projectId
            if emulator {
                tokens = EmulatorAccessToken()
            } else {
                guard let file = google.credentials.map(context.resolve) ?? environment["GOOGLE_APPLICATION_CREDENTIALS"] else {
                    throw CommandError("\(context.path): services.google: no credentials (set 'credentials' or GOOGLE_APPLICATION_CREDENTIALS, or FIREBASE_AUTH_EMULATOR_HOST for the emulator)")
                }
                let key: ServiceAccountKey
                do { key = try ServiceAccountKey.load(path: file) } catch {
                    // Named where the path came from: the variable, when the pipeline gives none.
                    throw CommandError("\(context.path): services.google: \(google.credentials == nil ? "GOOGLE_APPLICATION_CREDENTIALS" : "credentials"): \(error)")
                }
                project = project ?? key.projectId
                tokens = try ServiceAccountAccessTokens(account: key, channel: Self.channel("google-oauth", transport, retry, 8, logger, &channels, gated: false))
            }
            guard let project else { throw CommandError("\(context.path): services.google: project_id is needed with the emulator") }
            var rates = IdentityToolkitRates()
            rates.updates = google.updatesPerSecond
            rates.batchDeletes = google.batchDeletesPerSecond
            rates.reads = google.readsPerSecond
            rates.batchCreates = google.batchCreatesPerSecond
            googleTokens = tokens
            let channel = Self.channel("identitytoolkit", transport, retry, google.maxInFlight, logger, &channels)
            let client = IdentityToolkitClient(projectId: project, tenantId: google.tenantId, base: base, tokens: tokens, channel: channel, rates: rates)
            identityToolkit = client
            if let target = context.definition.stages.importAccounts, target.projectId != nil || target.tenantId != nil {
                importTarget = IdentityToolkitClient(projectId: target.projectId ?? project, tenantId: target.tenantId ?? google.tenantId, base: base,
                                                     tokens: tokens, channel: channel, rates: rates)
            } else {
                importTarget = context.definition.stages.importAccounts == nil ? nil : client
            }
            projectId = project
        } else {
            identityToolkit = nil
            importTarget = nil
            projectId = nil
        }
        if let config = services.apple {
            let keyPath = context.resolve(config.privateKey)
            guard let pem = try? String(contentsOfFile: keyPath, encoding: .utf8) else {
                throw CommandError("\(context.path): services.apple.private_key: cannot read \(Redaction.path(keyPath, given: config.privateKey))")
            }
            let key: SigningKey
            do { key = try SigningKey(pem: pem, algorithm: .es256) } catch {
                throw CommandError("\(context.path): services.apple.private_key: \(keyPath): \(error)")
            }
            let credentials = try AppleCredentials(teamId: config.teamId, keyId: config.keyId, clientId: config.clientId, key: key,
                                                   secretLifetime: Int64(config.secretLifetime))
            apple = AppleClient(credentials: credentials, endpoint: try Endpoint(config.endpoint ?? AppleClient.productionBase, service: "apple"),
                                channel: Self.channel("apple", transport, retry, config.maxInFlight, logger, &channels),
                                rate: config.requestsPerSecond)
        } else {
            apple = nil
        }
        if let config = services.facebook {
            guard let secret = try Self.secret(context, file: config.appSecretFile, key: "services.facebook.app_secret_file",
                                               environment: environment, variable: config.appSecretEnv) else {
                throw CommandError("\(context.path): services.facebook: no app secret (set app_secret_file, or the environment variable \(config.appSecretEnv))")
            }
            facebook = FacebookClient(
                credentials: try FacebookCredentials(appId: config.appId, appSecret: secret, graphVersion: config.graphVersion),
                endpoint: try Endpoint(config.endpoint ?? FacebookClient.productionBase, service: "facebook"),
                channel: Self.channel("facebook", transport, retry, config.maxInFlight, logger, &channels),
                rate: config.requestsPerSecond)
        } else {
            facebook = nil
        }
        if let url = context.definition.stages.delete?.dataWebhook {
            let config = services.webhook ?? WebhookServiceConfig()
            let secret = try Self.secret(context, file: config.secretFile, key: "services.webhook.secret_file",
                                         environment: environment, variable: config.secretEnv)
            webhook = try DataWebhookClient(url: url, secret: secret,
                                            channel: Self.channel("data-webhook", transport, retry, config.maxInFlight, logger, &channels),
                                            rate: config.requestsPerSecond)
        } else {
            webhook = nil
        }
        dataStores = try Self.dataStores(context, tokens: googleTokens, project: projectId, transport: transport, retry: retry, logger: logger, &channels)
        self.channels = channels
    }

    /// Clients for the stores `stages.delete` names, signed in with `services.google`'s credentials.
    private static func dataStores(_ context: PipelineContext, tokens: (any AccessTokenSource)?, project: String?, transport: AsyncHTTPTransport,
                                   retry: RetryPolicy, logger: Logger, _ channels: inout [ServiceChannel]) throws -> DataStores {
        let delete = context.definition.stages.delete
        let services = context.definition.services
        guard let delete, !delete.pathKinds.isEmpty else { return DataStores(config: delete, firestore: nil, database: nil, storage: nil) }
        guard let tokens, let project else {
            throw CommandError("\(context.path): stages.delete names Firestore, Realtime Database or Storage paths: services.google (credentials) signs in to them")
        }
        func base(_ config: DataServiceConfig?, _ production: String, _ service: String) throws -> Endpoint {
            try Endpoint(config?.endpoint ?? production, service: service)
        }
        var firestore: FirestoreClient?
        if let paths = delete.firestore {
            let config = services.firestore ?? DataServiceConfig()
            firestore = FirestoreClient(projectId: project, database: paths.database, base: try base(config, FirestoreClient.productionBase, "firestore"),
                                        tokens: tokens, channel: channel("firestore", transport, retry, config.maxInFlight, logger, &channels),
                                        rate: config.requestsPerSecond)
        }
        var database: DatabaseClient?
        if let paths = delete.realtimeDatabase {
            let config = services.realtimeDatabase ?? DataServiceConfig()
            database = try DatabaseClient(url: paths.url, instance: paths.instance, override: try config.endpoint.map { try Endpoint($0, service: "database") },
                                          tokens: tokens, channel: channel("database", transport, retry, config.maxInFlight, logger, &channels),
                                          rate: config.requestsPerSecond)
        }
        var storage: StorageClient?
        if delete.storage != nil {
            let config = services.storage ?? DataServiceConfig()
            storage = StorageClient(base: try base(config, StorageClient.productionBase, "storage"), tokens: tokens,
                                    channel: channel("storage", transport, retry, config.maxInFlight, logger, &channels), rate: config.requestsPerSecond)
        }
        return DataStores(config: delete, firestore: firestore, database: database, storage: storage)
    }

    /// The remote effects apply and the dry run's data counts go through.
    func effects() -> LiveEffects {
        LiveEffects(identityToolkit: identityToolkit, apple: apple, facebook: facebook, webhook: webhook, dataStores: dataStores,
                    channels: channels, batchDeleteRate: batchDeleteRate)
    }

    /// The password hash parameters of `stages.import`, with the signer key read from its file or variable.
    func passwordHash(_ config: PasswordHashConfig?) throws -> PasswordHashParameters? {
        guard let config else { return nil }
        let key = try Self.secret(context, file: config.signerKeyFile, key: "stages.import.password_hash.signer_key_file",
                                  environment: environment, variable: config.signerKeyEnv)
        let source = config.signerKeyFile == nil ? "the environment variable \(config.signerKeyEnv)" : "signer_key_file"
        if config.usesSignerKey, key == nil {
            throw CommandError("\(context.path): stages.import.password_hash: \(config.algorithm) needs the signer key: set signer_key_file, "
                + "or the environment variable \(config.signerKeyEnv)")
        }
        if let key, !TextScan.isBase64(key) {
            throw CommandError("\(context.path): stages.import.password_hash: the signer key in \(source) is not base64 (not shown); the console "
                + "shows it so (Authentication > Users > Password hash parameters)")
        }
        return PasswordHashParameters(algorithm: config.algorithm, signerKey: config.usesSignerKey ? key : nil, saltSeparator: config.saltSeparator,
                                      rounds: config.rounds, memoryCost: config.memoryCost)
    }

    /// A secret from the file the pipeline names (relative to it), else from the environment variable; nil when neither.
    private static func secret(_ context: PipelineContext, file: String?, key: String, environment: [String: String], variable: String) throws -> String? {
        if let path = file.map(context.resolve) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw CommandError("\(context.path): \(key): cannot read \(Redaction.path(path, given: file))")
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if let value = environment[variable], !value.isEmpty { return value }
        return nil
    }

    /// `gated`: false for a token endpoint, whose requests carry out no step of an apply (`SendWatch`).
    private static func channel(_ service: String, _ transport: AsyncHTTPTransport, _ retry: RetryPolicy, _ maxInFlight: Int, _ logger: Logger,
                                _ channels: inout [ServiceChannel], gated: Bool = true) -> ServiceChannel {
        let channel = ServiceChannel(service: service, transport: transport, retry: retry, maxInFlight: maxInFlight, logger: logger, gated: gated)
        channels.append(channel)
        return channel
    }

    func shutdown() {
        let transport = self.transport
        _ = try? blocking { await transport.shutdown() }
    }

    /// Checks each configured service without changing anything; one line per service, in a fixed order. The checks
    /// run together: one after the other, an apply's check of its services took seconds before its first step.
    /// `only`: the services to check, by `ActionKind.service` name (apply checks those its open actions need); nil, all.
    func check(only: Set<String>? = nil) -> [(ok: Bool, line: String)] {
        func wanted(_ service: String) -> Bool { only?.contains(service) ?? true }
        var probes: [@Sendable () async -> (Bool, String)] = []
        /// A check named `name`: the line `body` gives, or the error it throws.
        func probe(_ name: String, _ body: @escaping @Sendable () async throws -> String) {
            probes.append {
                do { return (true, "\(name): " + (try await body())) } catch {
                    // A connector's error names its service first: said once.
                    let text = "\(error)"
                    return (false, text.hasPrefix(name + ": ") ? text : "\(name): \(text)")
                }
            }
        }
        // services.google's project, and the one the import goes to when it is another (read with the same credentials).
        if let client = identityToolkit, wanted("identitytoolkit") {
            let targets = [("google", client)] + (importTarget.map { $0 === client ? [] : [("google (stages.import)", $0)] } ?? [])
            for (name, target) in targets {
                probe(name) {
                    let page = try await target.listUsers(pageToken: nil, maxResults: 1)
                    return "signed in; accounts:batchGet answered for \(target.accountsBase) (\(page.users.isEmpty ? "no accounts" : "has accounts"))"
                }
            }
        }
        if let apple, wanted("apple") {
            // A refresh grant with a token Apple never issued: invalid_grant proves the client secret was accepted. Any
            // other answer (a 404 or a 400 from a wrong endpoint, a 5xx) says nothing of the secret.
            probe("apple") {
                try await apple.checkClientSecret() ? "client secret accepted (the probe token was refused, as expected)" : "client secret accepted"
            }
        }
        if let facebook, wanted("facebook") {
            probe("facebook") {
                _ = try await facebook.appAccessToken()
                return "app access token obtained"
            }
        }
        // The data stores: each configured path read for an id no account has, as the dry run's count reads it (a
        // wrong endpoint, a store not reachable, a permission the service account lacks).
        let stores = dataStores
        for kind in stores.kinds where wanted(kind.service) {
            probe(kind.service) {
                _ = try await stores.count(kind, uid: "idpipe-connectivity-check")
                return "its configured paths can be read"
            }
        }
        if let webhook, wanted("data-webhook") {
            // Its address only (a typo in the host, a TLS or routing fault): a request that deletes nothing cannot show
            // the secret accepted. The URL is not echoed, as it may carry a key.
            probe("data webhook") {
                let status = try await webhook.probe()
                // A 404 may be a wrong path, or a hook that answers POST only: said, not judged.
                let unsure = status == 404 ? "; a 404 may mean a wrong path in stages.delete.data_webhook (or a hook that takes POST only)" : ""
                return "reachable (HTTP \(status) to a HEAD request)\(unsure); its secret is checked by the first deletion"
            }
        }
        struct Checked: Sendable {
            var index: Int
            var ok: Bool
            var line: String
        }
        let run = probes
        let results: [Checked] = (try? blocking {
            await withTaskGroup(of: Checked.self) { group in
                for (index, probe) in run.enumerated() {
                    group.addTask { let (ok, line) = await probe(); return Checked(index: index, ok: ok, line: line) }
                }
                var results: [Checked] = []
                for await result in group { results.append(result) }
                return results
            }
        }) ?? []
        return results.sorted { $0.index < $1.index }.map { (ok: $0.ok, line: $0.line) }
    }
}

/// Runs async work to completion from synchronous code (the commands and the plan's reader thread).
/// Never call it from a task or an event loop: it blocks the calling thread.
func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            let value = try await work()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
