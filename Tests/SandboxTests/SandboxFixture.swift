import Foundation
import IdPipeConnect
import IdPipeCrypto
import IdPipeHTTP
import IdPipeSandbox
import IdPipeTestSupport
import Synchronization
import Testing

/// A sandbox on a free loopback port with fresh keys, and clients pointed at it over the real transport.
final class SandboxFixture: Sendable {
    let server: SandboxServer
    let directory: String
    let transport: AsyncHTTPTransport
    let project = "demo-idpipe"

    var service: SandboxService { server.service }

    static func start(accounts: Int = 0, configure: (inout SandboxConfig) -> Void = { _ in }) async throws -> SandboxFixture {
        let directory = TemporaryFile.directory("sandbox")
        try SandboxSetup.initialize(directory: directory, port: 0, projectId: "demo-idpipe")
        var (config, _) = try SandboxSetup.load(directory: directory)
        configure(&config)
        let service = try SandboxService(config: config)
        if accounts > 0 { try service.loadAccounts(exportJSON: Array(exportJSON(count: accounts).utf8), file: "generated") }
        let server = try await SandboxServer.start(service: service)
        return SandboxFixture(server: server, directory: directory)
    }

    private init(server: SandboxServer, directory: String) {
        self.server = server
        self.directory = directory
        transport = AsyncHTTPTransport(connectionsPerHost: 8)
    }

    func stop() async {
        await transport.shutdown()
        await server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// An `auth:export` JSON of `count` accounts `user-00000`…, each linked to Apple.
    static func exportJSON(count: Int) -> String {
        let users = (0..<count).map { index in
            let id = String(format: "user-%05d", index)
            return """
                {"localId":"\(id)","email":"\(id)@privaterelay.appleid.com","emailVerified":true,"createdAt":"1700000000000","disabled":false,\
                "providerUserInfo":[{"providerId":"apple.com","rawId":"001\(index).abc","email":"\(id)@privaterelay.appleid.com"}]}
                """
        }
        return "{\"users\": [\n" + users.joined(separator: ",\n") + "]}"
    }

    func channel(_ service: String, retry: RetryPolicy = RetryPolicy(maxAttempts: 6, baseDelay: 0.05, maxDelay: 1)) -> ServiceChannel {
        ServiceChannel(service: service, transport: transport, retry: retry, maxInFlight: 8)
    }

    func file(_ name: String) throws -> String {
        try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
    }

    /// The service-account key `init` wrote, with its token_uri pointed at the port actually bound.
    func serviceAccount() throws -> ServiceAccountKey {
        let text = try file(SandboxSetup.serviceAccountFile).replacingOccurrences(of: "127.0.0.1:0/", with: "\(server.hostAndPort)/")
        return try ServiceAccountKey(json: Array(text.utf8), file: "service-account.json")
    }

    /// Identity Toolkit over OAuth (the sandbox verifies the RS256 assertion and issues the token).
    func identityToolkit(rates: IdentityToolkitRates = IdentityToolkitRates()) throws -> IdentityToolkitClient {
        let tokens = try ServiceAccountAccessTokens(account: try serviceAccount(), channel: channel("google-oauth"))
        return IdentityToolkitClient(projectId: project, base: try Endpoint(server.baseURL + "/v1", service: "identitytoolkit"),
                                     tokens: tokens, channel: channel("identitytoolkit"), rates: rates)
    }

    /// Identity Toolkit the way the Admin SDKs reach the Auth Emulator.
    func emulatorIdentityToolkit() throws -> IdentityToolkitClient {
        let (base, _) = try IdentityToolkitClient.base(environment: ["FIREBASE_AUTH_EMULATOR_HOST": server.hostAndPort], override: nil)
        return IdentityToolkitClient(projectId: project, base: base, tokens: EmulatorAccessToken(), channel: channel("identitytoolkit"))
    }

    func apple(keyPEM: String? = nil, keyId: String? = nil) throws -> AppleClient {
        let apple = try #require(try SandboxSetup.load(directory: directory).0.apple)
        let key = try SigningKey(pem: keyPEM ?? file(SandboxSetup.appleKeyFile(keyId: apple.keyId)), algorithm: .es256)
        let credentials = try AppleCredentials(teamId: apple.teamId, keyId: keyId ?? apple.keyId, clientId: SandboxSetup.appleClientId, key: key)
        return AppleClient(credentials: credentials, endpoint: try Endpoint(server.baseURL, service: "apple"), channel: channel("apple"))
    }

    func facebook() throws -> FacebookClient {
        let secret = try file(SandboxSetup.facebookSecretFile).trimmingCharacters(in: .whitespacesAndNewlines)
        return FacebookClient(credentials: try FacebookCredentials(appId: SandboxSetup.facebookAppId, appSecret: secret),
                              endpoint: try Endpoint(server.baseURL, service: "facebook"), channel: channel("facebook"))
    }

    /// Ledger entries that changed state, per action and target: each must appear once.
    func changes(_ action: String) -> [String: Int] {
        service.ledger.filter { $0.action == action && $0.changed }.reduce(into: [:]) { $0[$1.target, default: 0] += 1 }
    }
}

/// A transport that passes requests on and keeps a copy of each (to pick up the JWTs idpipe really sends).
final class RecordingTransport: HTTPTransport {
    let inner: any HTTPTransport
    private let recorded = Mutex<[HTTPRequest]>([])

    init(_ inner: any HTTPTransport) { self.inner = inner }

    var requests: [HTTPRequest] { recorded.withLock { $0 } }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        return try await inner.send(request)
    }
}
