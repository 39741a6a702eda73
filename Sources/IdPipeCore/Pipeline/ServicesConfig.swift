/// Where the remote services are and how hard to push them. Secrets are never in the pipeline file itself:
/// it names files or environment variables that hold them.
public struct ServicesConfig: Sendable, Equatable {
    public var google: GoogleServiceConfig?
    public var apple: AppleServiceConfig?
    public var facebook: FacebookServiceConfig?
    public var webhook: WebhookServiceConfig?
    /// The data stores of `stages.delete` (signed in with `services.google`'s credentials).
    public var firestore: DataServiceConfig?
    public var realtimeDatabase: DataServiceConfig?
    public var storage: DataServiceConfig?
    public init() {}
}

/// Firestore, the Realtime Database or Cloud Storage: where to reach it and how hard to push it. None of them
/// has a per-project request quota like batch delete's; the defaults keep a run from hogging a production store.
/// A recursive Firestore path costs one listing per collection and document it walks.
public struct DataServiceConfig: Sendable, Equatable {
    /// Replaces the production base: `https://firestore.googleapis.com/v1`, the database URL's origin (the
    /// instance then goes in `?ns=`, as for the emulator), or `https://storage.googleapis.com/storage/v1`.
    public var endpoint: String?
    public var requestsPerSecond: Double = 500
    public var maxInFlight = 32
    public init() {}
}

/// The app backend's data-deletion webhook (`stages.delete.data_webhook` names its URL).
public struct WebhookServiceConfig: Sendable, Equatable {
    /// A file holding the shared secret that signs each request (HMAC-SHA256 of the body); else `secretEnv`.
    public var secretFile: String?
    public var secretEnv = "IDPIPE_WEBHOOK_SECRET"
    public var requestsPerSecond: Double = 50
    public var maxInFlight = 16
    public init() {}
}

public struct GoogleServiceConfig: Sendable, Equatable {
    /// Default: the credentials file's `project_id`.
    public var projectId: String?
    public var tenantId: String?
    /// A service-account key file; default `$GOOGLE_APPLICATION_CREDENTIALS`. Not needed with
    /// `FIREBASE_AUTH_EMULATOR_HOST` (the emulator takes `Bearer owner`, as the Admin SDKs send).
    public var credentials: String?
    /// Replaces `https://identitytoolkit.googleapis.com/v1` (a sandbox or a proxy).
    public var endpoint: String?
    /// Requests per second: account updates (names, sessions), batch deletes, reads.
    public var updatesPerSecond: Double = 10
    public var batchDeletesPerSecond: Double = 1
    public var readsPerSecond: Double = 20
    /// `accounts:batchCreate` (the import, `stages.import`): no published limit; one request of up to 1000 accounts a second.
    public var batchCreatesPerSecond: Double = 1
    public var maxInFlight = 8
    public init() {}
}

public struct AppleServiceConfig: Sendable, Equatable {
    public var teamId: String
    public var keyId: String
    public var clientId: String
    /// The `.p8` key file.
    public var privateKey: String
    public var endpoint: String?
    public var requestsPerSecond: Double = 20
    public var maxInFlight = 8
    /// Seconds each client secret is valid (under Apple's 15,777,000 s cap).
    public var secretLifetime: Int = 86_400
}

public struct FacebookServiceConfig: Sendable, Equatable {
    public var appId: String
    /// A file holding the app secret; else the environment variable `appSecretEnv`.
    public var appSecretFile: String?
    public var appSecretEnv = "FACEBOOK_APP_SECRET"
    public var graphVersion = "v21.0"
    public var endpoint: String?
    public var requestsPerSecond: Double = 20
    public var maxInFlight = 8
}

extension PipelineDefinition {
    static func decodeServices(_ node: ConfigNode) throws -> ServicesConfig {
        let keys = try node.mapping(allowed: ["google", "apple", "facebook", "webhook", "firestore", "realtime_database", "storage"])
        var services = ServicesConfig()
        if let google = keys["google"] {
            services.google = google.reading {
                let entries = try google.mapping(allowed: ["project_id", "tenant_id", "credentials", "endpoint", "updates_per_second",
                                                           "batch_deletes_per_second", "reads_per_second", "batch_creates_per_second", "max_in_flight"])
                var config = GoogleServiceConfig()
                config.projectId = entries["project_id"]?.value { try $0.string() }
                config.tenantId = entries["tenant_id"]?.value { try $0.string() }
                config.credentials = entries["credentials"]?.value { try $0.secretFilePath() }
                config.endpoint = entries["endpoint"]?.value(endpoint)
                config.updatesPerSecond = entries["updates_per_second"]?.value(rate) ?? config.updatesPerSecond
                config.batchDeletesPerSecond = entries["batch_deletes_per_second"]?.value(rate) ?? config.batchDeletesPerSecond
                config.readsPerSecond = entries["reads_per_second"]?.value(rate) ?? config.readsPerSecond
                config.batchCreatesPerSecond = entries["batch_creates_per_second"]?.value(rate) ?? config.batchCreatesPerSecond
                config.maxInFlight = entries["max_in_flight"]?.value { try $0.int(minimum: 1) } ?? config.maxInFlight
                return config
            }
        }
        if let apple = keys["apple"] {
            services.apple = apple.reading {
                let entries = try apple.mapping(allowed: ["team_id", "key_id", "client_id", "private_key", "endpoint", "requests_per_second",
                                                          "max_in_flight", "secret_lifetime_seconds"])
                // Each told, and the service not taken (`reading`), when missing or bad.
                func required(_ key: String, _ read: (ConfigNode) throws -> String) -> String {
                    guard let node = entries[key] else {
                        apple.tell("missing key '\(key)'")
                        return ""
                    }
                    return node.value(read) ?? ""
                }
                var config = AppleServiceConfig(teamId: required("team_id") { try $0.string() }, keyId: required("key_id") { try $0.string() },
                                                clientId: required("client_id") { try $0.string() },
                                                privateKey: required("private_key") { try $0.secretFilePath() })
                config.endpoint = entries["endpoint"]?.value(endpoint)
                config.requestsPerSecond = entries["requests_per_second"]?.value(rate) ?? config.requestsPerSecond
                config.maxInFlight = entries["max_in_flight"]?.value { try $0.int(minimum: 1) } ?? config.maxInFlight
                config.secretLifetime = entries["secret_lifetime_seconds"]?.value { lifetime in
                    let seconds = try lifetime.int(minimum: 61)
                    guard seconds < 15_777_000 else { throw lifetime.error("Apple refuses client secrets valid for 15777000 s (about 6 months) or more") }
                    return seconds
                } ?? config.secretLifetime
                return config
            }
        }
        if let facebook = keys["facebook"] {
            services.facebook = facebook.reading {
                let entries = try facebook.mapping(allowed: ["app_id", "app_secret_file", "app_secret_env", "graph_version", "endpoint",
                                                             "requests_per_second", "max_in_flight"])
                guard let appId = entries["app_id"] else { throw facebook.error("missing key 'app_id'") }
                var config = FacebookServiceConfig(appId: appId.value { appId in
                    let id = try appId.string()
                    guard TextScan.isDigits(id) else {
                        throw appId.error("is not a Facebook App ID (its digits, as the app dashboard shows it); not shown, as it may be the app secret")
                    }
                    return id
                } ?? "")
                config.appSecretFile = entries["app_secret_file"]?.value { try $0.secretFilePath() }
                config.appSecretEnv = entries["app_secret_env"]?.value { try $0.environmentVariableName() } ?? config.appSecretEnv
                config.graphVersion = entries["graph_version"]?.value { version in
                    let text = try version.string()
                    guard text.hasPrefix("v"), Double(text.dropFirst()) != nil, text.utf8.count <= 8 else {
                        throw version.error("must look like v21.0" + (text.utf8.count <= 8 ? " (found '\(text)')" : " (a longer value is not shown)"))
                    }
                    return text
                } ?? config.graphVersion
                config.endpoint = entries["endpoint"]?.value(endpoint)
                config.requestsPerSecond = entries["requests_per_second"]?.value(rate) ?? config.requestsPerSecond
                config.maxInFlight = entries["max_in_flight"]?.value { try $0.int(minimum: 1) } ?? config.maxInFlight
                return config
            }
        }
        if let webhook = keys["webhook"] {
            services.webhook = webhook.reading {
                let entries = try webhook.mapping(allowed: ["secret_file", "secret_env", "requests_per_second", "max_in_flight"])
                var config = WebhookServiceConfig()
                config.secretFile = entries["secret_file"]?.value { try $0.secretFilePath() }
                config.secretEnv = entries["secret_env"]?.value { try $0.environmentVariableName() } ?? config.secretEnv
                config.requestsPerSecond = entries["requests_per_second"]?.value(rate) ?? config.requestsPerSecond
                config.maxInFlight = entries["max_in_flight"]?.value { try $0.int(minimum: 1) } ?? config.maxInFlight
                return config
            }
        }
        if let node = keys["firestore"] { services.firestore = node.reading { try decodeDataService(node) } }
        if let node = keys["realtime_database"] { services.realtimeDatabase = node.reading { try decodeDataService(node) } }
        if let node = keys["storage"] { services.storage = node.reading { try decodeDataService(node) } }
        return services
    }

    private static func decodeDataService(_ node: ConfigNode) throws -> DataServiceConfig {
        let entries = try node.mapping(allowed: ["endpoint", "requests_per_second", "max_in_flight"])
        var config = DataServiceConfig()
        config.endpoint = entries["endpoint"]?.value(endpoint)
        config.requestsPerSecond = entries["requests_per_second"]?.value(rate) ?? config.requestsPerSecond
        config.maxInFlight = entries["max_in_flight"]?.value { try $0.int(minimum: 1) } ?? config.maxInFlight
        return config
    }

    private static func rate(_ node: ConfigNode) throws -> Double {
        let value = try node.double()
        guard value > 0 else { throw node.error("a rate is a number of requests per second above 0") }
        return value
    }

    private static func endpoint(_ node: ConfigNode) throws -> String {
        let url = try node.string()
        let loopback = ["http://127.", "http://localhost", "http://[::1]"].contains { url.hasPrefix($0) }
        guard url.hasPrefix("https://") || loopback else {
            throw node.error("an endpoint must be https:// (plain http only on loopback): tokens and keys travel in these requests")
        }
        return url
    }
}
