import IdPipeCrypto

/// Where Identity Toolkit requests get their bearer token.
public protocol AccessTokenSource: Sendable {
    func accessToken() async throws -> String
    /// The service said the token is no longer good (401): forget it so the next call fetches another.
    func invalidate(_ token: String) async
}

/// The Firebase Auth Emulator's convention, as the Admin SDKs use it: the literal token `owner`.
public struct EmulatorAccessToken: AccessTokenSource {
    public init() {}
    public func accessToken() async throws -> String { "owner" }
    public func invalidate(_ token: String) async {}
}

/// OAuth 2.0 access tokens for a service account through the JWT bearer grant (RFC 7523), cached and
/// refreshed `refreshMargin` seconds before they expire, so a run of many hours never meets an expired token.
/// Concurrent callers share one refresh.
public final class ServiceAccountAccessTokens: AccessTokenSource {
    /// The scopes the Admin SDKs ask for: Identity Toolkit and Firestore and Storage (under cloud-platform), and
    /// the Realtime Database (which wants `firebase.database` with `userinfo.email`).
    public static let scopes = ["https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/identitytoolkit",
                                "https://www.googleapis.com/auth/datastore", "https://www.googleapis.com/auth/devstorage.read_write",
                                "https://www.googleapis.com/auth/firebase.database", "https://www.googleapis.com/auth/userinfo.email"]
    /// Google accepts assertions valid for at most an hour.
    static let assertionLifetime: Int64 = 3600

    struct Token: Sendable {
        let value: String
        let expiresAt: Double
    }

    private let account: ServiceAccountKey
    private let tokenEndpoint: String
    private let channel: ServiceChannel
    private let refreshMargin: Double
    private let cache = SharedFetch<Token>()

    public init(account: ServiceAccountKey, channel: ServiceChannel, refreshMargin: Double = 300) throws(ConnectorError) {
        self.account = account
        self.tokenEndpoint = try Endpoint(account.tokenURI, service: "google-oauth").base
        self.channel = channel
        self.refreshMargin = refreshMargin
    }

    public func accessToken() async throws -> String {
        let clock = channel.clock, margin = refreshMargin
        return try await cache.get(isFresh: { clock.now() < $0.expiresAt - margin }, fetch: { try await self.fetch() }).value
    }

    public func invalidate(_ token: String) async {
        await cache.invalidate { $0.value == token }
    }

    /// The signed assertion: header `{alg, typ, kid}`, claims `{iss, scope, aud, iat, exp}`.
    func assertion(issuedAt: Int64) throws -> String {
        try JWT.sign(
            header: [("typ", .string("JWT")), ("kid", .string(account.privateKeyId))],
            claims: [
                ("iss", .string(account.clientEmail)), ("scope", .string(Self.scopes.joined(separator: " "))),
                ("aud", .string(tokenEndpoint)), ("iat", .int(issuedAt)), ("exp", .int(issuedAt + Self.assertionLifetime)),
            ],
            key: account.key)
    }

    private func fetch() async throws -> Token {
        let service = channel.service
        let response = try await channel.send(limiter: nil, make: {
            let body = FormBody.encode([
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", try self.assertion(issuedAt: self.channel.clock.unixTime())),
            ])
            return HTTPRequest(method: "POST", url: self.tokenEndpoint,
                               headers: [("Content-Type", "application/x-www-form-urlencoded"), ("User-Agent", IdPipeProduct.userAgent)],
                               body: Array(body.utf8), readOnly: true)  // signs requests; changes nothing (`SendWatch`)
        }, judge: { response in
            if (200..<300).contains(response.status) { return .success }
            let body = JSONValue.decode(response.body)
            let error = body?["error"]?.string.flatMap(Redaction.code) ?? "HTTP \(response.status)"
            let detail = body?["error_description"]?.string.map { Redaction.scrubbed($0) } ?? ""
            // A bad key, a deleted key or a wrong clock fails every request alike: stop the run.
            return .fail(.configuration(service: service, message: "the token endpoint refused the service account: \(error) \(detail)"))
        })
        guard let body = JSONValue.decode(response.body), let token = body["access_token"]?.string, !token.isEmpty,
              let expiresIn = body["expires_in"]?.int, expiresIn > 0 else {
            throw ConnectorError.badResponse(service: service, message: "the token response has no access_token/expires_in")
        }
        return Token(value: token, expiresAt: channel.clock.now() + Double(expiresIn))
    }
}
