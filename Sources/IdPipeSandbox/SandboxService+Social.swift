extension SandboxService {
    // MARK: Apple /auth/token and /auth/revoke

    private static func appleError(_ error: String) -> SandboxResponse {
        .json(400, .object([("error", .string(error))]))
    }

    /// Checks `client_id` and the ES256 client secret exactly as Apple documents them.
    private func checkAppleClient(_ state: State, _ form: [String: String]) -> String? {
        guard let apple = state.config.apple else { return "the sandbox has no Apple app configured" }
        guard let clientId = form["client_id"], apple.clientIds.contains(clientId) else { return "unknown client_id" }
        guard let secret = form["client_secret"] else { return "missing client_secret" }
        let verified: SandboxCrypto.VerifiedJWT
        do {
            verified = try SandboxCrypto.verify(secret, algorithm: "ES256", publicKeyPEM: apple.publicKeyPEM)
        } catch {
            return "client_secret: \(error)"
        }
        let claims = verified.claims
        let now = SandboxTime.unixNow()
        guard verified.header["kid"]?.string == apple.keyId else { return "client_secret: kid is not the key id" }
        guard claims["iss"]?.string == apple.teamId else { return "client_secret: iss is not the team id" }
        guard claims["aud"]?.string == "https://appleid.apple.com" else { return "client_secret: aud is not https://appleid.apple.com" }
        guard claims["sub"]?.string == clientId else { return "client_secret: sub is not the client_id" }
        guard let iat = claims["iat"]?.int, let exp = claims["exp"]?.int else { return "client_secret: iat/exp missing" }
        guard iat <= now + 60, exp > now else { return "client_secret: expired or not yet valid" }
        guard exp - iat <= 15_777_000 else { return "client_secret: exp is more than 15777000 s after iat" }
        return nil
    }

    func apple(_ state: inout State, route: Route, request: SandboxRequest) -> SandboxResponse {
        guard request.method == "POST",
              request.header("Content-Type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            return Self.appleError("invalid_request")
        }
        let fields = SandboxForm.decode(String(decoding: request.body, as: UTF8.self))
        let form = Dictionary(fields, uniquingKeysWith: { first, _ in first })
        if let problem = checkAppleClient(state, form) {
            Self.record(&state, service: "apple", action: "refused", target: form["client_id"] ?? "", changed: false, detail: "invalid_client: \(problem)")
            return Self.appleError("invalid_client")
        }
        let clientId = form["client_id"]!
        if route.name == "apple:/auth/revoke" {
            guard let token = form["token"], !token.isEmpty else { return Self.appleError("invalid_request") }
            if let hint = form["token_type_hint"], hint != "refresh_token", hint != "access_token" {
                return Self.appleError("unsupported_token_type")
            }
            let fingerprint = String(SandboxCrypto.sha256Hex(token).prefix(12))
            if var known = state.appleTokens[token] {
                // Apple answers invalid_client when the token was issued to another client.
                guard known.clientId == clientId else { return Self.appleError("invalid_client") }
                let changed = !known.revoked
                known.revoked = true
                state.appleTokens[token] = known
                Self.record(&state, service: "apple", action: "revoke", target: fingerprint, changed: changed, detail: known.kind)
            } else {
                // RFC 7009: an unknown or invalid token is answered 200 all the same.
                Self.record(&state, service: "apple", action: "revoke", target: fingerprint, changed: false, detail: "unknown token")
            }
            return .empty(200)
        }
        switch form["grant_type"] {
        case "authorization_code":
            guard let code = form["code"], var issued = state.appleCodes[code], issued.clientId == clientId else {
                return Self.appleError("invalid_grant")
            }
            guard !issued.used, SandboxTime.unixNow() - issued.issuedAt <= 300 else { return Self.appleError("invalid_grant") }
            issued.used = true
            state.appleCodes[code] = issued
            let access = SandboxCrypto.randomToken("a.sandbox-")
            let refresh = SandboxCrypto.randomToken("r.sandbox-")
            state.appleTokens[access] = AppleToken(kind: "access_token", clientId: clientId)
            state.appleTokens[refresh] = AppleToken(kind: "refresh_token", clientId: clientId)
            Self.record(&state, service: "apple", action: "exchange-code", target: String(SandboxCrypto.sha256Hex(code).prefix(12)), changed: true)
            return .json(200, .object([
                ("access_token", .string(access)), ("token_type", .string("Bearer")), ("expires_in", .number("3600")),
                ("refresh_token", .string(refresh)), ("id_token", .string("sandbox.id.token")),
            ]))
        case "refresh_token":
            guard let token = form["refresh_token"], let known = state.appleTokens[token], known.kind == "refresh_token",
                  known.clientId == clientId, !known.revoked else { return Self.appleError("invalid_grant") }
            let access = SandboxCrypto.randomToken("a.sandbox-")
            state.appleTokens[access] = AppleToken(kind: "access_token", clientId: clientId)
            return .json(200, .object([
                ("access_token", .string(access)), ("token_type", .string("Bearer")), ("expires_in", .number("3600")),
                ("id_token", .string("sandbox.id.token")),
            ]))
        default:
            return Self.appleError("unsupported_grant_type")
        }
    }

    // MARK: Facebook Graph API

    private static func graphError(_ status: Int, _ code: Int, _ message: String) -> SandboxResponse {
        .json(status, .object([("error", .object([
            ("message", .string(message)), ("type", .string("OAuthException")), ("code", .number(String(code))),
        ]))]))
    }

    func facebook(_ state: inout State, route: Route, request: SandboxRequest) -> SandboxResponse {
        guard let app = state.config.facebook else { return Self.graphError(400, 101, "Error validating application.") }
        let query = Dictionary(request.query, uniquingKeysWith: { first, _ in first })
        if route.name == "facebook:/oauth/access_token" {
            guard request.method == "GET" else { return Self.graphError(400, 100, "Unsupported method") }
            guard query["grant_type"] == "client_credentials" else { return Self.graphError(400, 100, "Unsupported grant_type") }
            guard query["client_id"] == app.appId else { return Self.graphError(400, 101, "Error validating application. Invalid application ID.") }
            guard query["client_secret"] == app.appSecret else { return Self.graphError(400, 1, "Error validating client secret.") }
            let token = app.appId + "|" + SandboxCrypto.randomToken("sandbox-")
            state.facebookAppTokens.insert(token)
            return .json(200, .object([("access_token", .string(token)), ("token_type", .string("bearer"))]))
        }
        guard request.method == "DELETE" else { return Self.graphError(400, 100, "Unsupported \(request.method) request.") }
        guard let token = query["access_token"], state.facebookAppTokens.contains(token) else {
            return Self.graphError(400, 190, "Invalid OAuth access token - Cannot parse access token")
        }
        guard let id = route.subject, state.facebookIds.contains(id) else {
            return Self.graphError(400, 100, "Unsupported delete request. Object with ID '\(route.subject ?? "")' does not exist")
        }
        let changed = state.facebookRevoked.insert(id).inserted
        Self.record(&state, service: "facebook", action: "revoke-login", target: id, changed: changed)
        return .json(200, .object([("success", .bool(true))]))
    }
}
