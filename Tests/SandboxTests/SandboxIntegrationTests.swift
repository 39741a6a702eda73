import Foundation
import IdPipeConnect
import IdPipeCrypto
import IdPipeHTTP
import IdPipeSandbox
import IdPipeTestSupport
import Testing

/// The clients against the sandbox over loopback, on the real transport.
@Suite(.serialized) struct SandboxIntegrationTests {
    @Test func pagesThroughFiveThousandAccountsOverOAuth() async throws {
        let sandbox = try await SandboxFixture.start(accounts: 5000)
        defer { Task { await sandbox.stop() } }
        let client = try sandbox.identityToolkit()
        var seen: [String] = []
        var token: String?
        var pages = 0
        repeat {
            let page = try await client.listUsers(pageToken: token)
            seen += page.users.compactMap { $0["localId"]?.string }
            token = page.nextPageToken
            pages += 1
        } while token != nil
        #expect(pages == 5)
        #expect(seen.count == 5000 && Set(seen).count == 5000)
        #expect(sandbox.service.requestCount("oauth:/token") == 1)
    }

    @Test func deletesTwentyFiveHundredInThreeCallsUnderTheQuota() async throws {
        let sandbox = try await SandboxFixture.start(accounts: 2500)
        defer { Task { await sandbox.stop() } }
        let client = try sandbox.emulatorIdentityToolkit()
        let ids = sandbox.service.accountIds
        var failures: [BatchDeleteFailure] = []
        let started = ContinuousClock.now
        for start in stride(from: 0, to: ids.count, by: IdentityToolkitClient.maxBatch) {
            failures += try await client.batchDelete(localIds: Array(ids[start..<min(ids.count, start + IdentityToolkitClient.maxBatch)]))
        }
        let elapsed = ContinuousClock.now - started
        #expect(failures.isEmpty)
        // Three calls did the work. On a loaded machine a paced call can still arrive early enough to be turned away;
        // the client then waits and sends it again, which must not delete anything twice.
        #expect(sandbox.service.requestCount("accounts:batchDelete") - sandbox.service.quotaRefusals(.batchDelete) == 3)
        #expect(sandbox.service.accountIds.isEmpty)
        let deleted = sandbox.changes("delete")
        #expect(deleted.count == 2500 && deleted.values.allSatisfy { $0 == 1 })
        // 1 request/s: the client paced itself.
        #expect(elapsed >= .seconds(1.9))
    }

    @Test func recoversFrom503And429AndADroppedConnection() async throws {
        let sandbox = try await SandboxFixture.start(accounts: 3)
        defer { Task { await sandbox.stop() } }
        let client = try sandbox.emulatorIdentityToolkit()
        sandbox.service.script([.status(503, retryAfter: nil), .status(429, retryAfter: 1), .drop])
        try await client.update(localId: "user-00001", displayName: "Ada Lovelace")
        // Four attempts; the third took effect but its answer was lost, the fourth found nothing to change.
        #expect(sandbox.service.requestCount("accounts:update") == 4)
        #expect(sandbox.changes("update.displayName") == ["user-00001": 1])
        #expect(sandbox.service.account("user-00001")?.contains("\"displayName\":\"Ada Lovelace\"") == true)
    }

    @Test func theSandboxRefusesWhatGoogleRefuses() async throws {
        let sandbox = try await SandboxFixture.start(accounts: 3) {
            // One request every 10 s: a second request is refused however slowly a busy machine sends it (at 1 a second,
            // the full suite's load at times spaced two of them over 0.75 s, and the second went through).
            $0.quotas.batchDelete = 0.1
            $0.quotas.batchCreate = 0.1
        }
        defer { Task { await sandbox.stop() } }
        let url = sandbox.server.baseURL + "/identitytoolkit.googleapis.com/v1/projects/demo-idpipe/accounts:"
        func post(_ operation: String, _ body: String, token: String = "owner") async throws -> HTTPResponse {
            try await sandbox.transport.send(HTTPRequest(method: "POST", url: url + operation,
                                                         headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                                         body: Array(body.utf8)))
        }
        // A list over 1,000 ids is refused, having taken the quota's token; the next batch delete is over the quota.
        let tooMany = try await post("batchDelete", #"{"localIds":[\#((0...1000).map { "\"u\($0)\"" }.joined(separator: ","))],"force":true}"#)
        #expect(tooMany.status == 400 && tooMany.bodyText.contains("LOCAL_ID_LIST_EXCEEDS_LIMIT"))
        let second = try await post("batchDelete", #"{"localIds":["user-00001"],"force":true}"#)
        #expect(second.status == 429 && second.bodyText.contains("QUOTA_EXCEEDED"))
        #expect(sandbox.service.account("user-00001") != nil, "a refused delete deletes nothing")
        // Each quota class has its own bucket: batch creates are limited apart from batch deletes.
        let created = try await post("batchCreate", #"{"users":[{"localId":"new-1"}]}"#)
        let createdAgain = try await post("batchCreate", #"{"users":[{"localId":"new-2"}]}"#)
        #expect(created.status == 200, "\(created.bodyText)")
        #expect(createdAgain.status == 429 && createdAgain.bodyText.contains("QUOTA_EXCEEDED"))
        let unknownField = try await post("update", #"{"localId":"user-00000","disabled":true}"#)
        #expect(unknownField.status == 400 && unknownField.bodyText.contains("Unknown name \\\"disabled\\\""))
        let wrongType = try await post("update", #"{"localId":"user-00000","disableUser":"yes"}"#)
        #expect(wrongType.status == 400 && wrongType.bodyText.contains("TYPE_BOOL"))
        let badToken = try await post("lookup", #"{"localId":["user-00000"]}"#, token: "ya29.forged")
        #expect(badToken.status == 401)
    }

    @Test func appleRevokeAndCodeExchangeAgainstTheSandbox() async throws {
        let sandbox = try await SandboxFixture.start()
        defer { Task { await sandbox.stop() } }
        sandbox.service.issueAppleToken("r.issued-refresh", kind: "refresh_token", clientId: SandboxSetup.appleClientId)
        sandbox.service.issueAppleToken("c.fresh-code", kind: "authorization_code", clientId: SandboxSetup.appleClientId)
        let apple = try sandbox.apple()
        try await apple.revoke(token: "r.issued-refresh", hint: .refreshToken)
        try await apple.revoke(token: "r.issued-refresh", hint: .refreshToken)
        let tokens = try await apple.exchange(code: "c.fresh-code")
        try await apple.revoke(token: try #require(tokens.refreshToken), hint: .refreshToken)
        await #expect(throws: ConnectorError.rejected(service: "apple", code: "invalid_grant", message: "")) {
            _ = try await apple.exchange(code: "c.fresh-code")
        }
        let revokes = sandbox.service.ledger.filter { $0.action == "revoke" }
        #expect(revokes.map(\.changed) == [true, false, true])
        #expect(revokes.allSatisfy { $0.target.count == 12 && !$0.target.contains("r.") })
    }

    @Test(arguments: ["another key", "another key id"])
    func invalidClientStopsTheRun(wrong: String) async throws {
        let sandbox = try await SandboxFixture.start()
        defer { Task { await sandbox.stop() } }
        let apple = wrong == "another key" ? try sandbox.apple(keyPEM: try TestKeys.ecP256().privatePEM) : try sandbox.apple(keyId: "ZZZZZZZZZZ")
        do {
            try await apple.revoke(token: "anything", hint: .accessToken)
            Issue.record("expected invalid_client")
        } catch let error as ConnectorError {
            #expect(error.stopsRun)
            #expect(error.description.contains("invalid_client"))
        }
    }

    @Test func facebookRevokesClassicLoginsOnce() async throws {
        let sandbox = try await SandboxFixture.start()
        defer { Task { await sandbox.stop() } }
        try sandbox.service.loadStoredTokens(jsonLines: #"{"uid":"u1","provider":"facebook.com","facebook_id":"10150000000000001","login":"classic"}"#, file: "t")
        let facebook = try sandbox.facebook()
        try await facebook.revokeLogin(appScopedId: "10150000000000001")
        try await facebook.revokeLogin(appScopedId: "10150000000000001")
        await #expect(throws: ConnectorError.self) { try await facebook.revokeLogin(appScopedId: "999") }
        #expect(sandbox.changes("revoke-login") == ["10150000000000001": 1])
        #expect(sandbox.service.requestCount("facebook:/oauth/access_token") == 1)
    }
}

/// The checks that the sandbox speaks the real protocol, and that idpipe's JWTs are standard: both by
/// independent implementations (the official firebase-admin SDK; PyJWT on `cryptography`).
@Suite(.serialized) struct IndependentImplementationTests {
    @Test func firebaseAdminSDKWorksAgainstTheSandbox() async throws {
        let sandbox = try await SandboxFixture.start(accounts: 20)
        defer { Task { await sandbox.stop() } }
        let (status, output) = try TestPython.run("admin_sdk_check.py", [sandbox.project, "20"],
                                                  environment: ["FIREBASE_AUTH_EMULATOR_HOST": sandbox.server.hostAndPort])
        #expect(status == 0, "\(output)")
        #expect(output.contains("all checks passed"))
        #expect(sandbox.changes("create") == ["imp-1": 1, "imp-2": 1, "imp-3": 1])
        #expect(sandbox.changes("update.displayName") == ["imp-1": 1])
        #expect(sandbox.changes("update.validSince") == ["imp-1": 1])
        #expect(sandbox.changes("delete") == ["imp-2": 1, "imp-3": 1])
    }

    @Test func appleClientSecretVerifiesWithPyJWT() async throws {
        let pair = try TestKeys.ecP256()
        let key = try SigningKey(pem: pair.privatePEM, algorithm: .es256)
        let credentials = try AppleCredentials(teamId: "TEAM123456", keyId: "KEY1234567", clientId: "com.example.app", key: key)
        let apple = AppleClient(credentials: credentials, endpoint: try Endpoint(AppleClient.productionBase, service: "apple"),
                                channel: ServiceChannel(service: "apple", transport: AsyncHTTPTransport()))
        let keyFile = TemporaryFile.write(pair.publicPEM, name: "apple.pem")
        let (status, output) = try TestPython.run("verify_jwt.py", ["ES256", keyFile, "https://appleid.apple.com", "TEAM123456"],
                                                  input: try apple.clientSecret())
        #expect(status == 0, "\(output)")
        #expect(output.contains(#""kid": "KEY1234567""#) && output.contains(#""sub": "com.example.app""#))
        // A tampered token must fail the same check (the test can fail).
        let tampered = try apple.clientSecret().replacingOccurrences(of: ".", with: ".e", options: [], range: nil)
        #expect(try TestPython.run("verify_jwt.py", ["ES256", keyFile, "https://appleid.apple.com", "TEAM123456"], input: tampered).status == 1)
    }

    @Test func serviceAccountAssertionVerifiesWithPyJWT() async throws {
        let sandbox = try await SandboxFixture.start(accounts: 1)
        defer { Task { await sandbox.stop() } }
        let recording = RecordingTransport(sandbox.transport)
        let account = try sandbox.serviceAccount()
        let tokens = try ServiceAccountAccessTokens(account: account, channel: ServiceChannel(service: "google-oauth", transport: recording))
        _ = try await tokens.accessToken()
        let form = FormBody.decode(try #require(recording.requests.first).bodyText)
        let assertion = try #require(form.first { $0.0 == "assertion" }?.1)
        let keyFile = sandbox.directory + "/google-public.pem"
        let (status, output) = try TestPython.run("verify_jwt.py", ["RS256", keyFile, sandbox.server.baseURL + "/token", account.clientEmail],
                                                  input: assertion)
        #expect(status == 0, "\(output)")
        #expect(output.contains(#""alg": "RS256""#) && output.contains("cloud-platform"))
    }
}
