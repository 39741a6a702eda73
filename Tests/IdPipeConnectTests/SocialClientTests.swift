import IdPipeConnect
import IdPipeCrypto
import IdPipeTestSupport
import Testing

@Suite struct AppleClientTests {
    func client(_ stub: StubTransport, clock: ManualClock = ManualClock()) throws -> AppleClient {
        let key = try SigningKey(pem: try TestKeys.ecP256().privatePEM, algorithm: .es256)
        let credentials = try AppleCredentials(teamId: "TEAM123456", keyId: "KEY1234567", clientId: "com.example.app", key: key)
        return AppleClient(credentials: credentials, endpoint: try Endpoint(AppleClient.productionBase, service: "apple"),
                           channel: channel(stub, clock: clock, service: "apple"))
    }

    @Test func clientSecretHasAppleClaimsAndARawSignature() throws {
        let clock = ManualClock(unixTime: 1_795_219_200)
        let apple = try client(StubTransport(), clock: clock)
        let secret = try apple.clientSecret()
        let parts = secret.split(separator: ".")
        #expect(parts.count == 3)
        #expect(JSONValue.decode(Base64URL.decode(parts[0]) ?? []) == ["alg": "ES256", "kid": "KEY1234567"])
        #expect(JSONValue.decode(Base64URL.decode(parts[1]) ?? []) == [
            "iss": "TEAM123456", "iat": 1_795_219_200, "exp": 1_795_305_600, "aud": "https://appleid.apple.com", "sub": "com.example.app",
        ])
        // JOSE form: r‖s, 64 bytes; DER would be 70–72.
        #expect(Base64URL.decode(parts[2])?.count == 64)
        // Reused while valid.
        clock.advance(by: 600)
        #expect(try apple.clientSecret() == secret)
    }

    /// The check of the client secret takes Apple's invalid_grant for the answer it expects: not counted as a failed
    /// request (every clean apply's report showed one Apple failure). A refused secret still stops, and counts.
    @Test func theClientSecretsCheckIsNoFailure() async throws {
        let key = try SigningKey(pem: try TestKeys.ecP256().privatePEM, algorithm: .es256)
        let credentials = try AppleCredentials(teamId: "TEAM123456", keyId: "KEY1234567", clientId: "com.example.app", key: key)
        let stub = StubTransport(json: (400, #"{"error":"invalid_grant"}"#), (400, #"{"error":"invalid_client"}"#))
        let appleChannel = channel(stub, service: "apple")
        let apple = AppleClient(credentials: credentials, endpoint: try Endpoint(AppleClient.productionBase, service: "apple"), channel: appleChannel)
        #expect(try await apple.checkClientSecret())
        #expect(appleChannel.stats.failures == 0 && appleChannel.stats.requests == 1)
        #expect(FormBody.decode(try #require(stub.requests.first).bodyText).first { $0.0 == "grant_type" }?.1 == "refresh_token")
        await #expect { _ = try await apple.checkClientSecret() } throws: { error in
            (error as? ConnectorError)?.stopsRun == true && "\(error)".contains("invalid_client")
        }
        #expect(appleChannel.stats.failures == 1)
    }

    @Test func revokeSendsTheFormApplesDocumentsAsk() async throws {
        let stub = StubTransport([.response(HTTPResponse(status: 200))])
        let apple = try client(stub)
        try await apple.revoke(token: "r.token/with+chars", hint: .refreshToken)
        let request = try #require(stub.requests.first)
        #expect(request.method == "POST" && request.url == "https://appleid.apple.com/auth/revoke")
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        let form = FormBody.decode(request.bodyText)
        #expect(form.map(\.0) == ["client_id", "client_secret", "token", "token_type_hint"])
        #expect(form[0].1 == "com.example.app" && form[2].1 == "r.token/with+chars" && form[3].1 == "refresh_token")
    }

    @Test func codeAndRefreshGrants() async throws {
        let stub = StubTransport(json:
            (200, #"{"access_token":"a1","token_type":"Bearer","expires_in":3600,"refresh_token":"r1","id_token":"x.y.z"}"#),
            (200, #"{"access_token":"a2","token_type":"Bearer","expires_in":3600,"id_token":"x.y.z"}"#))
        let apple = try client(stub)
        let exchanged = try await apple.exchange(code: "c123", redirectURI: "https://example.com/cb")
        #expect(exchanged.refreshToken == "r1" && !exchanged.description.contains("r1"))
        let refreshed = try await apple.refresh(refreshToken: "r1")
        #expect(refreshed.accessToken == "a2" && refreshed.refreshToken == nil)
        let first = FormBody.decode(stub.requests[0].bodyText)
        #expect(first.map(\.0) == ["client_id", "client_secret", "grant_type", "code", "redirect_uri"])
        #expect(first[2].1 == "authorization_code")
        #expect(FormBody.decode(stub.requests[1].bodyText).map(\.0) == ["client_id", "client_secret", "grant_type", "refresh_token"])
    }

    /// A code exchange whose answer is lost is not sent again: Apple may have used the code up, and a second send
    /// answered invalid_grant, read as "never revocable" while the tokens the first gave stayed live. A refresh, which
    /// can be repeated, is still retried.
    @Test func aCodeExchangeIsNotSentTwice() async throws {
        let stub = StubTransport([.failure(.connectionClosed), .response(HTTPResponse(status: 400, json: #"{"error":"invalid_grant"}"#))])
        let apple = try client(stub)
        do {
            _ = try await apple.exchange(code: "c123")
            Issue.record("expected the exchange to fail")
        } catch let error as ConnectorError {
            guard case .answerLost = error else { Issue.record("\(error)"); return }
            #expect(error.description.contains("not sent again"), "\(error)")
        }
        #expect(stub.requests.count == 1)
        let second = StubTransport([.failure(.connectionClosed), .response(HTTPResponse(status: 200, json: #"{"access_token":"a2"}"#))])
        let refreshed = try await client(second).refresh(refreshToken: "r1")
        #expect(refreshed.accessToken == "a2" && second.requests.count == 2)
        // One that could not connect is tried again; refused after a 5xx, it says it was sent more than once, so the
        // revocation fails rather than counting as not possible.
        let third = StubTransport([.failure(.connectionFailed("refused")), .response(HTTPResponse(status: 503, json: "{}")),
                                   .response(HTTPResponse(status: 400, json: #"{"error":"invalid_grant"}"#))])
        do {
            _ = try await client(third).exchange(code: "c123")
            Issue.record("expected a refusal")
        } catch let error as ConnectorError {
            guard case .rejected(_, let code, _) = error else { Issue.record("\(error)"); return }
            #expect(code == "invalid_grant-after-retry")
        }
        #expect(third.requests.count == 3)
    }

    /// An answer with no OAuth error code (a wrong endpoint's page, an error that quotes the request) is not Apple
    /// refusing one token: it stops the run and names the endpoint.
    @Test(arguments: ["<html>Not Found</html>", #"{"error":"unknown endpoint /auth/revoke"}"#, "{}"])
    func anAnswerWithNoOAuthCodeNamesTheEndpoint(body: String) async throws {
        let stub = StubTransport(json: (404, body))
        await #expect {
            try await client(stub).revoke(token: "t", hint: .refreshToken)
        } throws: { error in
            guard let error = error as? ConnectorError else { return false }
            return error.stopsRun && "\(error)".contains("/auth/revoke: HTTP 404 with no OAuth error code in the body: is services.apple.endpoint Apple's?")
        }
    }

    @Test func invalidClientStopsTheRunAndInvalidGrantFailsOneAccount() async throws {
        let stub = StubTransport(json: (400, #"{"error":"invalid_grant"}"#), (400, #"{"error":"invalid_client"}"#))
        let apple = try client(stub)
        await #expect(throws: ConnectorError.rejected(service: "apple", code: "invalid_grant", message: "")) {
            _ = try await apple.exchange(code: "old")
        }
        do {
            try await apple.revoke(token: "t", hint: .accessToken)
            Issue.record("expected invalid_client")
        } catch let error as ConnectorError {
            #expect(error.stopsRun)
        }
    }

    @Test(arguments: [("SHORT", "KEY1234567", Int64(3600)), ("TEAM123456", "KEY", Int64(3600)), ("TEAM123456", "KEY1234567", Int64(15_777_000))])
    func credentialsAreChecked(team: String, keyId: String, lifetime: Int64) throws {
        let key = try SigningKey(pem: try TestKeys.ecP256().privatePEM, algorithm: .es256)
        #expect(throws: ConnectorError.self) {
            _ = try AppleCredentials(teamId: team, keyId: keyId, clientId: "c", key: key, secretLifetime: lifetime)
        }
    }

    @Test func anRSAKeyIsNotAnAppleKey() throws {
        #expect(throws: CryptoError.self) { _ = try SigningKey(pem: try TestKeys.rsa2048().privatePEM, algorithm: .es256) }
        #expect(throws: CryptoError.self) { _ = try SigningKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", algorithm: .es256) }
    }
}

@Suite struct FacebookClientTests {
    func client(_ stub: StubTransport) throws -> FacebookClient {
        FacebookClient(credentials: try FacebookCredentials(appId: "1234567890", appSecret: "s3cret"),
                       endpoint: try Endpoint(FacebookClient.productionBase, service: "facebook"), channel: channel(stub, service: "facebook"))
    }

    @Test func appTokenOnceThenDeletePermissions() async throws {
        let stub = StubTransport(json:
            (200, #"{"access_token":"1234567890|abc","token_type":"bearer"}"#), (200, #"{"success":true}"#), (200, "true"))
        let facebook = try client(stub)
        try await facebook.revokeLogin(appScopedId: "10150000000000001")
        try await facebook.revokeLogin(appScopedId: "10150000000000002")
        let requests = stub.requests
        #expect(requests.count == 3)
        #expect(requests[0].method == "GET")
        #expect(requests[0].url == "https://graph.facebook.com/oauth/access_token?client_id=1234567890&client_secret=s3cret&grant_type=client_credentials")
        #expect(requests[1].method == "DELETE")
        #expect(requests[1].url == "https://graph.facebook.com/v21.0/10150000000000001/permissions?access_token=1234567890%7Cabc")
    }

    /// A webhook URL with no hook there (404, 405, 410) stops the run, as a refused secret does: every account failed
    /// alike, while their other deletions went on. Another status fails the one account.
    @Test(arguments: [(404, true), (405, true), (410, true), (401, true), (409, false), (422, false)])
    func webhookStatusesThatStopTheRun(status: Int, stops: Bool) async throws {
        let stub = StubTransport(json: (status, #"{"detail":"x"}"#))
        let hook = try DataWebhookClient(url: "https://app.example.com/hooks/delete", secret: nil, channel: channel(stub, service: "data-webhook"))
        do {
            try await hook.deleteUserData(uid: "u1", idempotencyKey: "k1", run: "r1")
            Issue.record("expected an error")
        } catch let error as ConnectorError {
            #expect(error.stopsRun == stops, "\(error)")
        }
        #expect(stub.requests.count == 1)
    }

    /// The check of the hook's address sends its HEAD again after a connection dropped or timed out (sent once, one
    /// dropped connection stopped an apply before it began), and gives up after three with the last error.
    @Test func theHooksCheckTriesAgainWhenNoAnswerCame() async throws {
        let url = "https://app.example.com/hooks/delete"
        let flaky = StubTransport([.failure(.connectionClosed), .failure(.timedOut), .response(HTTPResponse(status: 405, json: "{}"))])
        let hook = try DataWebhookClient(url: url, secret: nil, channel: channel(flaky, service: "data-webhook"))
        #expect(try await hook.probe(pause: .milliseconds(1)) == 405)
        #expect(flaky.requests.map(\.method) == ["HEAD", "HEAD", "HEAD"])
        let down = StubTransport([.failure(.connectionClosed), .failure(.connectionClosed), .failure(.connectionClosed), .response(HTTPResponse(status: 200, json: "{}"))])
        let unreachable = try DataWebhookClient(url: url, secret: nil, channel: channel(down, service: "data-webhook"))
        await #expect(throws: ConnectorError.unavailable(service: "data-webhook", message: "https://app.example.com: the connection closed before a response (3 attempts)")) {
            _ = try await unreachable.probe(pause: .milliseconds(1))
        }
        #expect(down.requests.count == 3)
    }

    /// The hook's answer to a refusal is the app's own text about its user: only its size is kept (a name, an address
    /// and a phone number went into the reports in clear, beside the account's masked fields).
    @Test func aRefusalsBodyIsNotKept() async throws {
        let stub = StubTransport(json: (409, #"{"detail":"user Zed Secret <zed.secret@example.com>"}"#))
        let hook = try DataWebhookClient(url: "https://app.example.com/hooks/delete", secret: nil, channel: channel(stub, service: "data-webhook"))
        await #expect(throws: ConnectorError.rejected(service: "data-webhook", code: "HTTP 409", message: "a body of 53 bytes, not kept: it may hold personal data")) {
            try await hook.deleteUserData(uid: "u1", idempotencyKey: "k1", run: "r1")
        }
    }

    /// Once the hook has said yes in this run, a 404 is that account's answer: the run goes on (a repeat after a
    /// crash, sent again first, would otherwise stop every resume on the same account).
    @Test func aNotFoundAfterAYesFailsOneAccount() async throws {
        let stub = StubTransport(json: (200, "{}"), (404, #"{"detail":"no such user"}"#))
        let hook = try DataWebhookClient(url: "https://app.example.com/hooks/delete", secret: nil, channel: channel(stub, service: "data-webhook"))
        try await hook.deleteUserData(uid: "u1", idempotencyKey: "k1", run: "r1")
        do {
            try await hook.deleteUserData(uid: "u2", idempotencyKey: "k2", run: "r1")
            Issue.record("expected an error")
        } catch let error as ConnectorError {
            #expect(!error.stopsRun, "\(error)")
        }
    }

    /// A wrong app secret (Graph answers code 1 on /oauth/access_token) stops the run: it failed each account in turn.
    @Test func aRefusedAppSecretStopsTheRun() async throws {
        let stub = StubTransport(json:
            (400, #"{"error":{"message":"Error validating client secret.","type":"OAuthException","code":1}}"#))
        let facebook = try client(stub)
        do {
            try await facebook.revokeLogin(appScopedId: "1")
            Issue.record("expected a configuration error")
        } catch let error as ConnectorError {
            #expect(error.stopsRun, "\(error)")
            #expect("\(error)".contains("the app id or secret was refused: Error validating client secret."), "\(error)")
        }
        #expect(stub.requests.count == 1)
    }

    /// Something else answering at the endpoint (a wrong URL, a proxy's page) is said to be that: it read as "the app
    /// id or secret was refused: HTTP 404", and for a revocation failed each account in turn.
    @Test func anAnswerThatIsNoGraphErrorNamesTheEndpoint() async throws {
        for answers in [[(404, "<html>Not Found</html>")], [(200, #"{"access_token":"t"}"#), (404, "{}")]] {
            let stub = StubTransport(answers.map { .response(HTTPResponse(status: $0.0, json: $0.1)) })
            await #expect {
                try await client(stub).revokeLogin(appScopedId: "1")
            } throws: { error in
                guard let error = error as? ConnectorError else { return false }
                return error.stopsRun && "\(error)".contains("HTTP 404 with no Graph API error in the body: is services.facebook.endpoint the Graph API?")
            }
            #expect(stub.requests.count == answers.count)
        }
    }

    @Test func rateLimitCodesAreRetriedAndBadTokensStop() async throws {
        let stub = StubTransport(json:
            (200, #"{"access_token":"t"}"#),
            (400, #"{"error":{"message":"(#4) Application request limit reached","type":"OAuthException","code":4}}"#),
            (200, #"{"success":true}"#),
            (400, #"{"error":{"message":"Invalid OAuth access token","type":"OAuthException","code":190}}"#))
        let facebook = try client(stub)
        try await facebook.revokeLogin(appScopedId: "1")
        do {
            try await facebook.revokeLogin(appScopedId: "2")
            Issue.record("expected a configuration error")
        } catch let error as ConnectorError {
            #expect(error.stopsRun)
        }
        #expect(stub.requests.count == 4)
    }

    @Test func credentialsNeverPrint() throws {
        let credentials = try FacebookCredentials(appId: "1", appSecret: "topsecret")
        #expect(!"\(credentials)".contains("topsecret"))
        #expect(throws: ConnectorError.self) { _ = try FacebookCredentials(appId: "abc", appSecret: "x") }
    }
}
