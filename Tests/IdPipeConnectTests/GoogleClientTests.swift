import IdPipeConnect
import IdPipeCrypto
import IdPipeTestSupport
import Testing

/// Each call is compared with what firebase-admin 7.7.0 sends (../shared/specs/firebase-admin-requests.md).
@Suite struct IdentityToolkitClientTests {
    static let base = "http://127.0.0.1:9099/identitytoolkit.googleapis.com/v1/projects/demo-probe"

    func client(_ stub: StubTransport, clock: ManualClock = ManualClock()) throws -> IdentityToolkitClient {
        let (endpoint, emulator) = try IdentityToolkitClient.base(environment: ["FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9099"], override: nil)
        #expect(emulator)
        return IdentityToolkitClient(projectId: "demo-probe", base: endpoint, tokens: EmulatorAccessToken(),
                                     channel: channel(stub, clock: clock))
    }

    @Test func listUsersPagesWithQueryParameters() async throws {
        let stub = StubTransport(json:
            (200, #"{"kind":"identitytoolkit#DownloadAccountResponse","users":[{"localId":"a"},{"localId":"b"}],"nextPageToken":"b"}"#),
            (200, #"{"users":[{"localId":"c"}],"nextPageToken":""}"#))
        let client = try client(stub)
        let first = try await client.listUsers(pageToken: nil, maxResults: 2)
        #expect(first.users.count == 2 && first.nextPageToken == "b")
        let second = try await client.listUsers(pageToken: first.nextPageToken, maxResults: 2)
        #expect(second.users.count == 1 && second.nextPageToken == nil)
        let requests = stub.requests
        #expect(requests[0].method == "GET" && requests[0].url == Self.base + "/accounts:batchGet?maxResults=2" && requests[0].body == nil)
        #expect(requests[1].url == Self.base + "/accounts:batchGet?maxResults=2&nextPageToken=b")
        #expect(requests[0].header("Authorization") == "Bearer owner")
        #expect(requests[0].header("Content-Type") == nil)
    }

    @Test func lookupUpdateRevokeDeleteAndImportBodies() async throws {
        let stub = StubTransport(json:
            (200, #"{"users":[{"localId":"uid-1","displayName":"X"}]}"#),
            (200, #"{"kind":"identitytoolkit#SetAccountInfoResponse","localId":"uid-1"}"#),
            (200, #"{"localId":"uid-1"}"#),
            (200, "{}"),
            (200, #"{"kind":"identitytoolkit#UploadAccountResponse","error":[]}"#))
        let client = try client(stub)
        #expect(try await client.lookup(localIds: ["uid-1"]).count == 1)
        try await client.update(localId: "uid-1", displayName: "Renamed By Admin")
        try await client.update(localId: "uid-1", validSince: 1_795_264_796)
        #expect(try await client.batchDelete(localIds: ["uid-3", "uid-4"]).isEmpty)
        let user: JSONValue = ["localId": "imp-1", "email": "imp1@example.com", "displayName": "Imp One", "emailVerified": true]
        #expect(try await client.batchCreate(users: [user]).isEmpty)

        let requests = stub.requests
        #expect(requests.map(\.url) == ["lookup", "update", "update", "batchDelete", "batchCreate"].map { Self.base + "/accounts:" + $0 })
        #expect(requests.allSatisfy { $0.method == "POST" && $0.header("Content-Type") == "application/json" && $0.header("Authorization") == "Bearer owner" })
        #expect(json(requests[0].body) == json(#"{"localId": ["uid-1"]}"#))
        #expect(json(requests[1].body) == json(#"{"localId": "uid-1", "displayName": "Renamed By Admin"}"#))
        // validSince is a JSON number of seconds, as revoke_refresh_tokens sends it.
        #expect(requests[2].bodyText == #"{"localId":"uid-1","validSince":1795264796}"#)
        #expect(json(requests[3].body) == json(#"{"localIds": ["uid-3","uid-4"], "force": true}"#))
        #expect(json(requests[4].body) == json(#"{"users": [{"localId":"imp-1","email":"imp1@example.com","displayName":"Imp One","emailVerified":true}]}"#))
    }

    /// An import of password hashes sends the project's hash parameters beside the users, as the Admin SDKs' import_users.
    @Test func anImportSendsItsHashParameters() async throws {
        let stub = StubTransport(json: (200, #"{"kind":"identitytoolkit#UploadAccountResponse","error":[]}"#))
        let client = try client(stub)
        let hash = PasswordHashParameters(algorithm: "SCRYPT", signerKey: "c2lnbmVy", saltSeparator: "Bw==", rounds: 8, memoryCost: 14)
        #expect(try await client.batchCreate(users: [["localId": "imp-1", "passwordHash": "aGFzaA==", "salt": "c2FsdA=="]], hash: hash).isEmpty)
        #expect(json(stub.requests[0].body) == json(#"{"users": [{"localId":"imp-1","passwordHash":"aGFzaA==","salt":"c2FsdA=="}], "#
            + #""hashAlgorithm":"SCRYPT","signerKey":"c2lnbmVy","saltSeparator":"Bw==","rounds":8,"memoryCost":14}"#))
    }

    @Test func perIdErrorsMapBackToTheIdsSent() async throws {
        let stub = StubTransport(json:
            (200, #"{"errors":[{"index":1,"localId":"u3","message":"NOT_DISABLED : Disable the account before batch deletion."}]}"#),
            (200, #"{"error":[{"index":0,"message":"email is invalid"}]}"#),
            (200, #"{"errors":[{"index":5,"message":"x"}]}"#))
        let client = try client(stub)
        let failures = try await client.batchDelete(localIds: ["u2", "u3"])
        #expect(failures == [BatchDeleteFailure(index: 1, localId: "u3", message: "NOT_DISABLED : Disable the account before batch deletion.")])
        #expect(try await client.batchCreate(users: [["localId": "a"]]) == [BatchCreateFailure(index: 0, message: "email is invalid")])
        await #expect(throws: ConnectorError.self) { _ = try await client.batchDelete(localIds: ["u1"]) }
    }

    @Test func quotaErrorsBackOffAndUserNotFoundFails() async throws {
        let clock = ManualClock()
        let stub = StubTransport(json:
            (400, #"{"error":{"code":400,"message":"QUOTA_EXCEEDED : Exceeded quota for updating account information."}}"#),
            (200, #"{"localId":"u1"}"#),
            (400, #"{"error":{"code":400,"message":"USER_NOT_FOUND","errors":[{"message":"USER_NOT_FOUND","reason":"invalid","domain":"global"}]}}"#))
        let client = try client(stub, clock: clock)
        try await client.update(localId: "u1", disableUser: true)
        #expect(stub.requests.count == 2)
        #expect(json(stub.requests[1].body) == json(#"{"localId":"u1","disableUser":true}"#))
        await #expect(throws: ConnectorError.rejected(service: "identitytoolkit", code: "USER_NOT_FOUND", message: "")) {
            try await client.update(localId: "gone", displayName: "x")
        }
    }

    @Test func permissionDeniedStopsTheRun() async throws {
        let stub = StubTransport(json: (403, #"{"error":{"code":403,"message":"INSUFFICIENT_PERMISSION : caller lacks firebaseauth.users.delete"}}"#))
        do {
            _ = try await client(stub).batchDelete(localIds: ["a"])
            Issue.record("expected a configuration error")
        } catch let error as ConnectorError {
            #expect(error.stopsRun)
        }
    }

    /// An answer with no Google error in it (a wrong endpoint's page, a proxy's) is no refusal of one account: it stops
    /// the run and names the endpoint. Each account had failed on its own, for good, and the run went on.
    @Test(arguments: ["<html>Not Found</html>", #"{"message":"no route"}"#, "{}", ""])
    func anAnswerWithNoGoogleErrorNamesTheEndpoint(body: String) async throws {
        let stub = StubTransport(json: (404, body))
        await #expect {
            try await client(stub).update(localId: "u1", displayName: "Ann")
        } throws: { error in
            guard let error = error as? ConnectorError else { return false }
            return error.stopsRun && "\(error)".contains("HTTP 404 with no Google error in the body: is services.google.endpoint Google's?")
        }
        // Google's own shapes are still one account's refusal.
        for answer in [#"{"error":{"code":400,"message":"USER_NOT_FOUND"}}"#, #"{"error":{"code":404,"message":"gone","status":"NOT_FOUND"}}"#,
                       #"{"error":"Permission of this one node"}"#] {
            await #expect(throws: ConnectorError.self) {
                do { try await client(StubTransport(json: (400, answer))).update(localId: "u1", displayName: "Ann") } catch let error as ConnectorError {
                    #expect(!error.stopsRun, "\(answer): \(error)")
                    throw error
                }
            }
        }
    }

    @Test func emulatorHostIsHostAndPortOnly() throws {
        #expect(throws: ConnectorError.self) {
            _ = try IdentityToolkitClient.base(environment: ["FIREBASE_AUTH_EMULATOR_HOST": "http://127.0.0.1:9099"], override: nil)
        }
        let (production, emulator) = try IdentityToolkitClient.base(environment: [:], override: nil)
        #expect(production.base == "https://identitytoolkit.googleapis.com/v1" && !emulator)
    }
}

@Suite struct ServiceAccountTokenTests {
    static func keyFile(tokenURI: String = "https://oauth2.googleapis.com/token") throws -> (ServiceAccountKey, TestKeys.Pair) {
        let pair = try TestKeys.rsa2048()
        let document: JSONValue = [
            "type": "service_account", "project_id": "demo-probe", "private_key_id": "0123456789abcdef",
            "private_key": .string(pair.privatePEM), "client_email": "sa@demo-probe.iam.gserviceaccount.com", "token_uri": .string(tokenURI),
        ]
        return (try ServiceAccountKey(json: document.encoded(), file: "sa.json"), pair)
    }

    @Test func tokenIsFetchedOnceAndRefreshedBeforeExpiry() async throws {
        let clock = ManualClock()
        let stub = StubTransport(json:
            (200, #"{"access_token":"ya29.first","expires_in":3600,"token_type":"Bearer"}"#),
            (200, #"{"access_token":"ya29.second","expires_in":3600,"token_type":"Bearer"}"#))
        let (key, _) = try Self.keyFile()
        let tokens = try ServiceAccountAccessTokens(account: key, channel: channel(stub, clock: clock, service: "google-oauth"))
        #expect(try await tokens.accessToken() == "ya29.first")
        clock.advance(by: 3000)
        #expect(try await tokens.accessToken() == "ya29.first")
        // Within five minutes of expiry: refreshed, so a long run never sends an expired token.
        clock.advance(by: 301)
        #expect(try await tokens.accessToken() == "ya29.second")
        #expect(stub.requests.count == 2)

        let request = stub.requests[0]
        #expect(request.method == "POST" && request.url == "https://oauth2.googleapis.com/token")
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        let form = FormBody.decode(request.bodyText)
        #expect(form.map(\.0) == ["grant_type", "assertion"])
        #expect(form[0].1 == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        let parts = form[1].1.split(separator: ".")
        #expect(parts.count == 3)
        let header = JSONValue.decode(Base64URL.decode(parts[0]) ?? [])
        let claims = JSONValue.decode(Base64URL.decode(parts[1]) ?? [])
        #expect(header == ["alg": "RS256", "typ": "JWT", "kid": "0123456789abcdef"])
        #expect(claims?["iss"] == "sa@demo-probe.iam.gserviceaccount.com")
        #expect(claims?["aud"] == "https://oauth2.googleapis.com/token")
        // Identity Toolkit, Firestore, Storage and the Realtime Database (which wants firebase.database with userinfo.email).
        #expect(claims?["scope"]?.string?.split(separator: " ") == [
            "https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/identitytoolkit",
            "https://www.googleapis.com/auth/datastore", "https://www.googleapis.com/auth/devstorage.read_write",
            "https://www.googleapis.com/auth/firebase.database", "https://www.googleapis.com/auth/userinfo.email",
        ])
        let iat = try #require(claims?["iat"]?.int)
        #expect(claims?["exp"]?.int == iat + 3600)
    }

    @Test func concurrentCallersShareOneFetch() async throws {
        let stub = StubTransport(json: (200, #"{"access_token":"ya29.only","expires_in":3600}"#))
        let (key, _) = try Self.keyFile()
        let tokens = try ServiceAccountAccessTokens(account: key, channel: channel(stub, service: "google-oauth"))
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await tokens.accessToken() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(results) == ["ya29.only"] && stub.requests.count == 1)
    }

    @Test func invalidGrantStopsTheRun() async throws {
        let stub = StubTransport(json: (400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#))
        let (key, _) = try Self.keyFile()
        let tokens = try ServiceAccountAccessTokens(account: key, channel: channel(stub, service: "google-oauth"))
        do {
            _ = try await tokens.accessToken()
            Issue.record("expected an error")
        } catch let error as ConnectorError {
            #expect(error.stopsRun)
            #expect(!error.description.contains("PRIVATE KEY"))
        }
    }

    @Test(arguments: [
        (#"{"type":"authorized_user"}"#, "field 'type'"),
        (#"{"type":"service_account","project_id":"p","client_email":"e","private_key_id":"k","private_key":"nope"}"#, "field 'private_key'"),
        (#"{"type":"service_account","project_id":"p"}"#, "missing string field 'client_email'"),
        ("[1]", "not a JSON object"),
        // A review saw a number there taken for no value, and Google's endpoint asked instead.
        (#"{"type":"service_account","project_id":"p","client_email":"e","private_key_id":"k","private_key":"nope","token_uri":12}"#,
         "field 'token_uri' is not a URL (a text)"),
    ])
    func badKeyFilesNameTheFileAndField(text: String, expected: String) {
        do {
            _ = try ServiceAccountKey(json: Array(text.utf8), file: "/etc/sa.json")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("/etc/sa.json") && error.description.contains(expected))
        }
    }
}
