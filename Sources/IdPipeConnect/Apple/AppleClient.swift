import IdPipeCrypto
import Synchronization

/// The Sign in with Apple settings of one app. The key is the `.p8` file's P-256 key.
public struct AppleCredentials: Sendable, CustomStringConvertible {
    public var teamId: String
    public var keyId: String
    /// The App ID (bundle id) for tokens from the native app, the Services ID for web flows.
    public var clientId: String
    public var key: SigningKey
    /// How long each client secret is valid; Apple refuses more than 15,777,000 s (about 6 months).
    public var secretLifetime: Int64

    public static let maxSecretLifetime: Int64 = 15_777_000

    public init(teamId: String, keyId: String, clientId: String, key: SigningKey, secretLifetime: Int64 = 86_400) throws(ConnectorError) {
        guard teamId.count == 10, teamId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw .configuration(service: "apple", message: "team_id must be the 10-character Team ID (got '\(teamId)')")
        }
        guard keyId.count == 10, keyId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw .configuration(service: "apple", message: "key_id must be the 10-character Key ID of the .p8 key (got '\(keyId)')")
        }
        guard !clientId.isEmpty else { throw .configuration(service: "apple", message: "client_id is empty") }
        guard secretLifetime > 60, secretLifetime < Self.maxSecretLifetime else {
            throw .configuration(service: "apple", message: "the client secret lifetime must be between 60 s and \(Self.maxSecretLifetime) s")
        }
        self.teamId = teamId
        self.keyId = keyId
        self.clientId = clientId
        self.key = key
        self.secretLifetime = secretLifetime
    }

    public var description: String { "Apple client \(clientId) (team \(teamId), key \(keyId))" }
}

/// What Apple's `/auth/token` returned. Tokens stay inside this value; its description hides them.
public struct AppleTokenResponse: Sendable, CustomStringConvertible {
    public var accessToken: String
    public var refreshToken: String?
    public var expiresIn: Int64
    public var idToken: String?
    public var description: String { "AppleTokenResponse(expires_in: \(expiresIn), refresh_token: \(refreshToken == nil ? "no" : "yes"))" }
}

public enum AppleTokenTypeHint: String, Sendable {
    case refreshToken = "refresh_token"
    case accessToken = "access_token"
}

/// Sign in with Apple's REST API: client secret, `/auth/token`, `/auth/revoke`.
public final class AppleClient: Sendable {
    public static let productionBase = "https://appleid.apple.com"
    public static let audience = "https://appleid.apple.com"

    let credentials: AppleCredentials
    let endpoint: Endpoint
    let channel: ServiceChannel
    let limiter: RateLimiter
    private let cachedSecret = Mutex<(secret: String, expires: Int64)?>(nil)

    public init(credentials: AppleCredentials, endpoint: Endpoint, channel: ServiceChannel, rate: Double = 20) {
        self.credentials = credentials
        self.endpoint = endpoint
        self.channel = channel
        limiter = .perSecond(rate, clock: channel.clock)
    }

    /// The ES256 client secret: header `{alg, kid}`, claims `{iss, iat, exp, aud, sub}`. Reused until an hour
    /// before it expires.
    public func clientSecret() throws -> String {
        let now = channel.clock.unixTime()
        if let cached = cachedSecret.withLock({ $0 }), now < cached.expires - 3600 { return cached.secret }
        let expires = now + credentials.secretLifetime
        let secret = try JWT.sign(
            header: [("kid", .string(credentials.keyId))],
            claims: [
                ("iss", .string(credentials.teamId)), ("iat", .int(now)), ("exp", .int(expires)),
                ("aud", .string(Self.audience)), ("sub", .string(credentials.clientId)),
            ],
            key: credentials.key)
        cachedSecret.withLock { $0 = (secret, expires) }
        return secret
    }

    /// Exchanges a (fresh: five minutes, single use) authorization code for tokens.
    public func exchange(code: String, redirectURI: String? = nil) async throws -> AppleTokenResponse {
        var fields = [("grant_type", "authorization_code"), ("code", code)]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        return try await token(fields, singleUse: true)
    }

    /// Validates a refresh token and gets an access token (Apple suggests at most once a day per token).
    public func refresh(refreshToken: String) async throws -> AppleTokenResponse {
        try await token([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
    }

    /// The check of the client secret (validate's and apply's, before anything is sent): a refresh grant for a token Apple
    /// never issued. Apple's `invalid_grant` proves the secret was accepted; it is the answer expected, not a failed
    /// request (every clean apply's report showed one Apple failure). Any other answer says nothing of the secret.
    /// Returns whether the token was refused so (a 200 is no refusal, and no failure either).
    public func checkClientSecret() async throws -> Bool {
        let response = try await post("/auth/token", [("grant_type", "refresh_token"), ("refresh_token", "idpipe-connectivity-check")],
                                      expectedError: "invalid_grant")
        return response.status != 200
    }

    /// `POST /auth/revoke`. A 200 means "revoked, or already invalid" (RFC 7009 §2.2): Apple cannot tell which.
    public func revoke(token: String, hint: AppleTokenTypeHint) async throws {
        _ = try await post("/auth/revoke", [("token", token), ("token_type_hint", hint.rawValue)])
    }

    private func token(_ fields: [(String, String)], singleUse: Bool = false) async throws -> AppleTokenResponse {
        let response = try await post("/auth/token", fields, singleUse: singleUse)
        guard let body = JSONValue.decode(response.body), let access = body["access_token"]?.string, !access.isEmpty else {
            throw ConnectorError.badResponse(service: channel.service, message: "/auth/token answered without an access_token")
        }
        return AppleTokenResponse(accessToken: access, refreshToken: body["refresh_token"]?.string,
                                  expiresIn: body["expires_in"]?.int ?? 0, idToken: body["id_token"]?.string)
    }

    /// `expectedError`: an OAuth error code that is the answer expected (`checkClientSecret`): returned as a success.
    private func post(_ path: String, _ fields: [(String, String)], singleUse: Bool = false, expectedError: String? = nil) async throws -> HTTPResponse {
        let service = channel.service
        let url = endpoint.url(path)
        // A single-use request refused after it was sent more than once (a 5xx, or a connection that failed in a way
        // that may have reached Apple) may have been used by an earlier send: the refusal says so. (Builds are
        // counted, which a long queue wait also repeats: that errs towards a failed revocation, never a deletion.)
        let sends = Mutex(0)
        do {
            return try await channel.send(limiter: limiter, singleUse: singleUse, make: {
                sends.withLock { $0 += 1 }
                let body = FormBody.encode([("client_id", self.credentials.clientId), ("client_secret", try self.clientSecret())] + fields)
                return HTTPRequest(method: "POST", url: url,
                                   headers: [("Content-Type", "application/x-www-form-urlencoded"), ("User-Agent", IdPipeProduct.userAgent)],
                                   body: Array(body.utf8))
            }, judge: { response in
                if response.status == 200 { return .success }
                // Kept as a code only when it reads as one: an answer quoting the request would put the token there.
                guard let error = JSONValue.decode(response.body)?["error"]?.string.flatMap(Redaction.code) else {
                    // Not Apple's OAuth answer (a wrong endpoint, a proxy's page): it says nothing of this token, and
                    // every account would get it; failed one by one, `when_revocation_fails: delete` deleted them unrevoked.
                    return .fail(.configuration(service: service, message: "\(path): HTTP \(response.status) with no OAuth error code in the body: "
                        + "is services.apple.endpoint Apple's?"))
                }
                switch error {
                case expectedError: return .success
                case "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope":
                    // Wrong team, key, client id or secret: every account would fail the same way.
                    return .fail(.configuration(service: service, message: "\(path): \(error) (check team_id, key_id, client_id and the .p8 key)"))
                default:
                    return .fail(.rejected(service: service, code: error, message: ""))
                }
            })
        } catch ConnectorError.rejected(let service, let code, _) where singleUse && sends.withLock({ $0 }) > 1 {
            throw ConnectorError.rejected(service: service, code: code + "-after-retry",
                                          message: "refused when sent again; the first send may have used it")
        }
    }
}
