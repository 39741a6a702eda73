/// A Facebook app's credentials. The secret stays in this value; its description hides it.
public struct FacebookCredentials: Sendable, CustomStringConvertible {
    public var appId: String
    public var appSecret: String
    public var graphVersion: String

    public init(appId: String, appSecret: String, graphVersion: String = "v21.0") throws(ConnectorError) {
        guard !appId.isEmpty, appId.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw .configuration(service: "facebook", message: "app_id must be the numeric App ID (not shown, as it may be the app secret)")
        }
        guard !appSecret.isEmpty else { throw .configuration(service: "facebook", message: "the app secret is empty") }
        guard graphVersion.hasPrefix("v"), Double(graphVersion.dropFirst()) != nil else {
            throw .configuration(service: "facebook", message: "graph_version looks like v21.0"
                + (graphVersion.utf8.count <= 8 ? " (got '\(graphVersion)')" : " (a longer value is not shown)"))
        }
        self.appId = appId
        self.appSecret = appSecret
        self.graphVersion = graphVersion
    }

    public var description: String { "Facebook app \(appId) (Graph \(graphVersion))" }
}

/// Facebook Graph API: the app access token and `DELETE /{app-scoped-id}/permissions` (revoke the login).
/// Limited Login accounts have no Graph token and are never sent here.
public final class FacebookClient: Sendable {
    public static let productionBase = "https://graph.facebook.com"

    let credentials: FacebookCredentials
    let endpoint: Endpoint
    let channel: ServiceChannel
    let limiter: RateLimiter
    private let appToken = SharedFetch<String>()

    public init(credentials: FacebookCredentials, endpoint: Endpoint, channel: ServiceChannel, rate: Double = 20) {
        self.credentials = credentials
        self.endpoint = endpoint
        self.channel = channel
        limiter = .perSecond(rate, clock: channel.clock)
    }

    /// `GET /oauth/access_token?client_id&client_secret&grant_type=client_credentials`, fetched once per run.
    public func appAccessToken() async throws -> String {
        try await appToken.get {
            let query = FormBody.encode([("client_id", self.credentials.appId), ("client_secret", self.credentials.appSecret),
                                         ("grant_type", "client_credentials")])
            let response = try await self.send("GET", "/oauth/access_token?" + query, secrets: [self.credentials.appSecret])
            guard let token = JSONValue.decode(response.body)?["access_token"]?.string, !token.isEmpty else {
                throw ConnectorError.badResponse(service: self.channel.service, message: "/oauth/access_token answered without an access_token")
            }
            return token
        }
    }

    /// De-authorizes the app for this user (all permissions): the user must log in again.
    public func revokeLogin(appScopedId: String) async throws {
        guard !appScopedId.isEmpty, appScopedId.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            // Not quoted: what stands there may be anything, a token put in the wrong field among them.
            throw ConnectorError.rejected(service: channel.service, code: "invalid_id", message: "the id is not an app-scoped user id (digits only)")
        }
        let token = try await appAccessToken()
        let response = try await send("DELETE", "/\(credentials.graphVersion)/\(appScopedId)/permissions?" + FormBody.encode([("access_token", token)]),
                                      secrets: [token, credentials.appSecret, appScopedId],
                                      shown: "DELETE /\(credentials.graphVersion)/{app-scoped id}/permissions")
        let body = JSONValue.decode(response.body)
        guard body == .bool(true) || body?["success"] == .bool(true) else {
            throw ConnectorError.badResponse(service: channel.service, message: "the permissions DELETE did not answer success")
        }
    }

    /// `secrets`: what the request carries that its answer must not bring into a message (`Redaction`); `shown`: what logs
    /// call it by when its path names the user.
    private func send(_ method: String, _ pathAndQuery: String, secrets: [String], shown: String? = nil) async throws -> HTTPResponse {
        let service = channel.service
        let url = endpoint.url(pathAndQuery)
        return try await channel.send(limiter: limiter, make: {
            HTTPRequest(method: method, url: url, headers: [("User-Agent", IdPipeProduct.userAgent), ("Accept", "application/json")], shown: shown)
        }, judge: { response in
            if response.status == 200 { return .success }
            guard let error = JSONValue.decode(response.body)?["error"], let code = error["code"]?.int else {
                // Not the Graph API answering (a proxy's or another server's page): no word on the app's secret, nor on
                // this user, and every request would get the same.
                return .fail(.configuration(service: service, message: "HTTP \(response.status) with no Graph API error in the body: "
                    + "is services.facebook.endpoint the Graph API?"))
            }
            let message = error["message"]?.string.map { Redaction.scrubbed($0, known: secrets) } ?? "HTTP \(response.status)"
            switch code {
            case 4, 17, 32, 613:
                // Application, user, page and custom rate limits.
                return .retry(reason: "Graph rate limit (code \(code))", throttled: true)
            case _ where pathAndQuery.hasPrefix("/oauth"), 101, 102, 104:
                // The app token is the same for every account: any refusal of it (a wrong secret is code 1 there) stops
                // the run, where failing each account in turn let `when_revocation_fails: delete` delete them unrevoked.
                return .fail(.configuration(service: service, message: "the app id or secret was refused: \(message)"))
            case 190:
                return .fail(.configuration(service: service, message: "the app access token was refused: \(message)"))
            default:
                return .fail(.rejected(service: service, code: "graph_\(code)", message: message))
            }
        })
    }
}
