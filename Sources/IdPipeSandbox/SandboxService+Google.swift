extension SandboxService {
    static func googleError(_ status: Int, _ message: String) -> SandboxResponse {
        let code = message.split(separator: " ").first.map(String.init) ?? message
        return .json(status, .object([("error", .object([
            ("code", .number(String(status))), ("message", .string(message)),
            ("errors", .array([.object([("message", .string(code)), ("reason", .string("invalid")), ("domain", .string("global"))])])),
        ]))]))
    }

    // MARK: OAuth token endpoint (JWT bearer grant)

    func googleToken(_ state: inout State, request: SandboxRequest) -> SandboxResponse {
        func refuse(_ error: String, _ description: String) -> SandboxResponse {
            .json(400, .object([("error", .string(error)), ("error_description", .string(description))]))
        }
        guard request.method == "POST" else { return refuse("invalid_request", "POST only") }
        guard request.header("Content-Type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            return refuse("invalid_request", "the body must be application/x-www-form-urlencoded")
        }
        let form = Dictionary(SandboxForm.decode(String(decoding: request.body, as: UTF8.self)), uniquingKeysWith: { first, _ in first })
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return refuse("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let google = state.config.google else { return refuse("invalid_client", "the sandbox has no service account configured") }
        guard let assertion = form["assertion"] else { return refuse("invalid_request", "Missing required parameter: assertion") }
        let verified: SandboxCrypto.VerifiedJWT
        do {
            verified = try SandboxCrypto.verify(assertion, algorithm: "RS256", publicKeyPEM: google.publicKeyPEM)
        } catch {
            return refuse("invalid_grant", "Invalid JWT Signature. (\(error))")
        }
        let claims = verified.claims
        let now = SandboxTime.unixNow()
        let audience = "http://\(request.header("Host") ?? "")/token"
        guard claims["iss"]?.string == google.clientEmail else { return refuse("invalid_grant", "Invalid issuer: \(claims["iss"]?.text ?? "none")") }
        guard claims["aud"]?.string == audience else {
            return refuse("invalid_grant", "Invalid JWT: aud must be the token endpoint \(audience), got \(claims["aud"]?.text ?? "none")")
        }
        guard let iat = claims["iat"]?.int, let exp = claims["exp"]?.int, case .number = claims["iat"]!, case .number = claims["exp"]! else {
            return refuse("invalid_grant", "Invalid JWT: iat and exp must be numbers")
        }
        guard iat <= now + 60, exp > now, exp - iat <= 3600 else {
            return refuse("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values")
        }
        let scopes = (claims["scope"]?.string ?? "").split(separator: " ").map(String.init)
        let accepted = ["https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/firebase", "https://www.googleapis.com/auth/identitytoolkit"]
            + Self.firestoreScopes + Self.storageScopes + Self.databaseScopes
        guard scopes.contains(where: accepted.contains) else { return refuse("invalid_scope", "no scope that a sandbox service accepts") }
        let token = SandboxCrypto.randomToken("ya29.sandbox-")
        state.googleTokens[token] = now + google.tokenLifetime
        state.googleScopes[token] = Set(scopes)
        return .json(200, .object([
            ("access_token", .string(token)), ("expires_in", .number(String(google.tokenLifetime))), ("token_type", .string("Bearer")),
        ]))
    }

    // MARK: Identity Toolkit

    func identityToolkit(_ state: inout State, route: Route, request: SandboxRequest) -> SandboxResponse {
        switch googleBearer(state, request) {
        case .missing: return Self.googleError(403, "PERMISSION_DENIED : The request is missing a valid API key.")
        case .unknown: return Self.googleError(401, "UNAUTHENTICATED : Request had invalid authentication credentials. Expected OAuth 2 access token.")
        case .owner, .issued: break
        }
        guard route.project == state.config.projectId else {
            return Self.googleError(400, "PROJECT_NOT_FOUND : \(route.project ?? "")")
        }
        guard let operation = schema.operation(route.name) else { return Self.googleError(404, "NOT_FOUND : \(route.name)") }
        guard request.method == operation.method else {
            return Self.googleError(405, "METHOD_NOT_ALLOWED : \(route.name) takes \(operation.method)")
        }
        if let problem = schema.validateQuery(request.query, of: operation) { return Self.googleError(400, "INVALID_ARGUMENT : \(problem)") }
        var body = SJSON.object([])
        if operation.method == "POST" {
            guard request.header("Content-Type")?.lowercased().hasPrefix("application/json") == true else {
                return Self.googleError(400, "INVALID_ARGUMENT : the body must be application/json")
            }
            do { body = try SJSON.parse(request.body) } catch {
                return Self.googleError(400, "INVALID_ARGUMENT : Invalid JSON payload received. \(error)")
            }
            if let problem = schema.validateBody(body, of: operation) { return Self.googleError(400, "INVALID_ARGUMENT : \(problem)") }
        }
        switch route.name {
        case "accounts:batchGet": return batchGet(&state, request.query)
        case "accounts:lookup": return lookup(&state, body)
        case "accounts:update": return update(&state, body)
        case "accounts:batchDelete": return batchDelete(&state, body)
        case "accounts:batchCreate": return batchCreate(&state, body)
        default: return Self.googleError(404, "NOT_FOUND : \(route.name)")
        }
    }

    private func sortedIds(_ state: inout State) -> [String] {
        if let ids = state.sortedIds { return ids }
        let ids = state.accounts.uids.sorted()
        state.sortedIds = ids
        return ids
    }

    private func batchGet(_ state: inout State, _ query: [(String, String)]) -> SandboxResponse {
        let parameters = Dictionary(query, uniquingKeysWith: { _, last in last })
        let maxResults = parameters["maxResults"].flatMap { Int($0) } ?? 20
        guard (1...1000).contains(maxResults) else { return Self.googleError(400, "INVALID_ARGUMENT : maxResults must be between 1 and 1000") }
        let ids = sortedIds(&state)
        var start = 0
        if let token = parameters["nextPageToken"], !token.isEmpty {
            // The page token is the last id of the previous page (as the emulator does): first id after it.
            var low = 0, high = ids.count
            while low < high {
                let middle = (low + high) / 2
                if ids[middle] <= token { low = middle + 1 } else { high = middle }
            }
            start = low
        }
        let end = min(ids.count, start + maxResults)
        var members: [(String, SJSON)] = [("kind", .string("identitytoolkit#DownloadAccountResponse"))]
        members.append(("users", .array(ids[start..<end].compactMap { state.accounts[$0] })))
        if end < ids.count { members.append(("nextPageToken", .string(ids[end - 1]))) }
        return .json(200, .object(members))
    }

    /// By uid, email, phone number and federated link, mixed in one call as the Admin SDK's `get_users` sends them, at
    /// most 100 identifiers in all. An account found twice is given once; one found by none, not at all.
    private func lookup(_ state: inout State, _ body: SJSON) -> SandboxResponse {
        let ids = body["localId"]?.array?.compactMap(\.string) ?? []
        let emails = body["email"]?.array?.compactMap(\.string) ?? []
        let phones = body["phoneNumber"]?.array?.compactMap(\.string) ?? []
        let links = body["federatedUserId"]?.array ?? []
        guard ids.count + emails.count + phones.count + links.count <= 100 else {
            return Self.googleError(400, "INVALID_ARGUMENT : at most 100 identifiers per lookup")
        }
        var uids = ids.filter { state.accounts[$0] != nil }
        for email in emails { uids += state.accounts.uids(email: email).sorted() }
        for phone in phones { uids += state.accounts.uids(phoneNumber: phone).sorted() }
        for link in links {
            guard let provider = link["providerId"]?.string, let rawId = link["rawId"]?.string else {
                return Self.googleError(400, "INVALID_ARGUMENT : a federatedUserId needs a providerId and a rawId")
            }
            uids += state.accounts.uids(providerId: provider, rawId: rawId).sorted()
        }
        var given: Set<String> = []
        let found = uids.filter { given.insert($0).inserted }.compactMap { state.accounts[$0] }
        var members: [(String, SJSON)] = [("kind", .string("identitytoolkit#GetAccountInfoResponse"))]
        if !found.isEmpty { members.append(("users", .array(found))) }
        return .json(200, .object(members))
    }

    private func update(_ state: inout State, _ body: SJSON) -> SandboxResponse {
        guard let uid = body["localId"]?.string, !uid.isEmpty else { return Self.googleError(400, "MISSING_LOCAL_ID") }
        guard var account = state.accounts[uid] else { return Self.googleError(400, "USER_NOT_FOUND") }
        var changes: [(String, String, Bool)] = []
        func apply(_ field: String, _ value: SJSON?, action: String) {
            let before = account[field]
            let changed = before != value
            account.set(field, value)
            changes.append((action, value?.scalarText ?? "", changed))
        }
        if let name = body["displayName"]?.string {
            guard name.count <= 256 else { return Self.googleError(400, "INVALID_DISPLAY_NAME") }
            apply("displayName", .string(name), action: "update.displayName")
        }
        if let photo = body["photoUrl"]?.string { apply("photoUrl", .string(photo), action: "update.photoUrl") }
        if let validSince = body["validSince"]?.int {
            guard validSince <= SandboxTime.unixNow() + 300 else { return Self.googleError(400, "INVALID_ARGUMENT : validSince is in the future") }
            apply("validSince", .string(String(validSince)), action: "update.validSince")
        }
        if let disable = body["disableUser"]?.bool { apply("disabled", .bool(disable), action: "update.disabled") }
        if let verified = body["emailVerified"]?.bool { apply("emailVerified", .bool(verified), action: "update.emailVerified") }
        for attribute in body["deleteAttribute"]?.array?.compactMap(\.string) ?? [] {
            switch attribute {
            case "DISPLAY_NAME": apply("displayName", nil, action: "update.deleteDisplayName")
            case "PHOTO_URL": apply("photoUrl", nil, action: "update.deletePhotoUrl")
            default: return Self.googleError(400, "INVALID_ARGUMENT : the sandbox does not delete \(attribute)")
            }
        }
        state.accounts[uid] = account
        for (action, value, changed) in changes {
            Self.record(&state, service: "identitytoolkit", action: action, target: uid, changed: changed, detail: action == "update.displayName" ? "" : value)
        }
        var echo: [(String, SJSON)] = [("kind", .string("identitytoolkit#SetAccountInfoResponse")), ("localId", .string(uid))]
        for field in ["email", "displayName", "photoUrl", "providerUserInfo", "emailVerified"] {
            if let value = account[field] { echo.append((field, value)) }
        }
        return .json(200, .object(echo))
    }

    private func batchDelete(_ state: inout State, _ body: SJSON) -> SandboxResponse {
        let ids = body["localIds"]?.array?.compactMap(\.string) ?? []
        guard !ids.isEmpty, ids.count <= 1000 else { return Self.googleError(400, "LOCAL_ID_LIST_EXCEEDS_LIMIT") }
        let force = body["force"]?.bool ?? false
        var errors: [SJSON] = []
        for (index, uid) in ids.enumerated() {
            guard let account = state.accounts[uid] else {
                Self.record(&state, service: "identitytoolkit", action: "delete", target: uid, changed: false, detail: "no such account")
                continue
            }
            if !force, account["disabled"]?.bool != true {
                errors.append(.object([("index", .number(String(index))), ("localId", .string(uid)),
                                       ("message", .string("NOT_DISABLED : Disable the account before batch deletion."))]))
                continue
            }
            state.accounts[uid] = nil
            state.sortedIds = nil
            Self.record(&state, service: "identitytoolkit", action: "delete", target: uid, changed: true)
        }
        return .json(200, errors.isEmpty ? .object([]) : .object([("errors", .array(errors))]))
    }

    private func batchCreate(_ state: inout State, _ body: SJSON) -> SandboxResponse {
        let users = body["users"]?.array ?? []
        guard !users.isEmpty, users.count <= 1000 else { return Self.googleError(400, "MAXIMUM_USER_COUNT_EXCEEDED") }
        if users.contains(where: { $0["passwordHash"] != nil }), body["hashAlgorithm"] == nil {
            return Self.googleError(400, "MISSING_HASH_ALGORITHM")
        }
        var errors: [SJSON] = []
        for (index, user) in users.enumerated() {
            func reject(_ message: String) { errors.append(.object([("index", .number(String(index))), ("message", .string(message))])) }
            guard let uid = user["localId"]?.string, !uid.isEmpty, uid.utf8.count <= 128 else { reject("localId is missing or too long"); continue }
            if let email = user["email"]?.string, !email.contains("@") { reject("email is invalid"); continue }
            if let name = user["displayName"]?.string, name.count > 256 { reject("displayName is too long"); continue }
            // The API's own limits on an account's values (claims of at most 1000 characters, photo URLs of 2048).
            if let claims = user["customAttributes"]?.string, claims.utf16.count > 1000 { reject("CLAIMS_TOO_LARGE"); continue }
            if let claims = user["customAttributes"]?.string, !claims.isEmpty {
                guard case .object? = try? SJSON.parse(claims) else { reject("INVALID_CLAIMS : not a JSON object"); continue }
            }
            if let photo = user["photoUrl"]?.string, photo.utf16.count > 2048 { reject("INVALID_PHOTO_URL : longer than 2048 characters"); continue }
            let existed = state.accounts[uid] != nil
            state.accounts[uid] = user
            state.sortedIds = nil
            Self.record(&state, service: "identitytoolkit", action: existed ? "overwrite" : "create", target: uid, changed: true)
        }
        return .json(200, .object([("kind", .string("identitytoolkit#UploadAccountResponse")), ("error", .array(errors))]))
    }
}
