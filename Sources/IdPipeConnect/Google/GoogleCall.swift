/// One authorized request to a Google API, as every Google client here sends it: a bearer token from the
/// service account, a fresh token once after a 401, Google's back-off codes retried, and the rest sorted into
/// configuration errors (stop the run) and rejections (fail one action).
struct GoogleCall: Sendable {
    let channel: ServiceChannel
    let tokens: any AccessTokenSource

    /// Sends `method url`; 2xx and the statuses in `accept` (a 404 where "gone" is success) are returned.
    /// `operation` names the call in errors and logs (never the path or the query string: they may carry ids).
    /// `readOnly`: a POST that only reads (GET is taken as one).
    func send(_ method: String, _ url: String, json body: [UInt8]?, limiter: RateLimiter, accept: Set<Int> = [],
              operation: String, readOnly: Bool = false) async throws -> HTTPResponse {
        let service = channel.service
        let tokens = self.tokens
        var sentToken = ""
        var refreshedOnce = false
        var tokenRefused = false
        return try await channel.send(limiter: limiter, make: {
            if tokenRefused {
                // A 401 answered the last attempt: this one goes out with a fresh token.
                await tokens.invalidate(sentToken)
                tokenRefused = false
            }
            sentToken = try await tokens.accessToken()
            var headers = [
                ("Authorization", "Bearer \(sentToken)"), ("X-Client-Version", IdPipeProduct.userAgent),
                ("User-Agent", IdPipeProduct.userAgent), ("Accept", "application/json"),
            ]
            if body != nil { headers.append(("Content-Type", "application/json")) }
            return HTTPRequest(method: method, url: url, headers: headers, body: body, shown: operation, readOnly: readOnly)
        }, judge: { response in
            if (200..<300).contains(response.status) || accept.contains(response.status) { return .success }
            let error = GoogleError(response, secrets: [sentToken])
            if error.isBackOff { return .retry(reason: error.code, throttled: true) }
            if response.status == 401, !refreshedOnce {
                refreshedOnce = true
                tokenRefused = true
                return .retry(reason: "401 \(error.code): fetching a new access token")
            }
            if response.status == 401 || response.status == 403 || error.isConfiguration {
                // A code that is only the status (Storage's errors have none) is not said twice.
                let code = error.code.hasPrefix("HTTP ") ? "" : " \(error.code)"
                return .fail(.configuration(service: service, message: "\(operation): HTTP \(response.status)\(code) \(error.detail)"))
            }
            guard error.isGoogle else {
                // It says nothing of this account, and every account would get it: failed one by one, each action was
                // final, and the run went on.
                return .fail(.configuration(service: service, message: "\(operation): HTTP \(response.status) with no Google error in the body: "
                    + "is \(Self.endpointKey[service] ?? "the \(service) endpoint") Google's?"))
            }
            return .fail(.rejected(service: service, code: error.code, message: error.detail))
        })
    }

    /// Where the pipeline sets each Google service's endpoint, by service.
    static let endpointKey = ["identitytoolkit": "services.google.endpoint", "firestore": "services.firestore.endpoint",
                              "database": "services.realtime_database.endpoint", "storage": "services.storage.endpoint"]

    /// A list answer's next page token; nil on the last page (Google may send it blank instead of leaving it out).
    static func nextPageToken(_ body: JSONValue) -> String? {
        guard let token = body["nextPageToken"]?.string, !token.isEmpty else { return nil }
        return token
    }

    /// Sends and parses a JSON object answer.
    func object(_ method: String, _ url: String, json body: JSONValue?, limiter: RateLimiter, operation: String,
                readOnly: Bool = false) async throws -> JSONValue {
        let response = try await send(method, url, json: body?.encoded(), limiter: limiter, operation: operation, readOnly: readOnly)
        guard let parsed = JSONValue.decode(response.body), parsed.object != nil else {
            throw ConnectorError.badResponse(service: channel.service, message: "\(operation): the body is not a JSON object")
        }
        return parsed
    }
}

/// Percent-encoding of one URL path segment (a document id, a database key, an object name).
enum PathSegment {
    static func escape(_ segment: some StringProtocol) -> String {
        FormBody.escape(String(segment))
    }

    /// Each segment of a `/`-separated path escaped; the separators kept.
    static func escapePath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { escape($0) }.joined(separator: "/")
    }
}
