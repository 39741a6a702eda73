import IdPipeConnect
import IdPipeCrypto
import IdPipeTestSupport
import Testing

@Suite struct RedactionTests {
    /// Each case: what it shows, the text, the secrets the request carried, what is kept.
    static let cases: [(String, String, [String], String)] = [
        ("Facebook quoting the app token it refused", "Malformed access token EAABsbCS1iHgBAKZCZBf0ZBZCwZDZD8aQ3xgWqZBqkHZCkB6yE",
         [], "Malformed access token [redacted]"),
        ("a bearer header echoed", "denied (Authorization: Bearer ya29.short)", [], "denied (Authorization: Bearer [redacted])"),
        ("form fields echoed", "bad request: client_id=com.example.app&client_secret=abc.def&token=r0dd", [],
         "bad request: client_id=com.example.app&client_secret=[redacted]&token=[redacted]"),
        ("JSON fields echoed", #"{"refresh_token": "r1", "ok": 1}"#, [], #"{"refresh_token": "[redacted]", "ok": 1}"#),
        ("a JWT", "assertion rejected: eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJUIn0.c2ln", [], "assertion rejected: [redacted]"),
        ("a PEM block", "key -----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY----- refused", [], "key [redacted] refused"),
        ("a short secret the request carried", "the secret s3cret|x is wrong", ["s3cret|x"], "the secret [redacted] is wrong"),
        // What the services say of themselves is kept as it is.
        ("a Google detail", "Permission 'datastore.entities.get' denied on resource '//firestore.googleapis.com/projects/demo/databases/(default)'",
         [], "Permission 'datastore.entities.get' denied on resource '//firestore.googleapis.com/projects/demo/databases/(default)'"),
        ("an Identity Toolkit code", "USER_NOT_FOUND", [], "USER_NOT_FOUND"),
        ("a service account and a database host",
         "firebase-adminsdk-x@acme-prod-analytics.iam.gserviceaccount.com does not have storage.objects.delete access to https://acme-prod-default-rtdb.europe-west1.firebasedatabase.app/users",
         [], "firebase-adminsdk-x@acme-prod-analytics.iam.gserviceaccount.com does not have storage.objects.delete access to https://acme-prod-default-rtdb.europe-west1.firebasedatabase.app/users"),
        // Words after a field's name are no value: only one with a digit is taken for a token.
        ("Facebook's expired session", "Error validating access token: Session has expired on Tuesday", [],
         "Error validating access token: Session has expired on Tuesday"),
        ("Google's unknown field", #"Invalid JSON payload received. Unknown name "code": Cannot find field."#, [],
         #"Invalid JSON payload received. Unknown name "code": Cannot find field."#),
        // A known secret replaced is not taken for a value again.
        ("a known secret in a field", "client_secret=s3cret99&grant_type=x", ["s3cret99"], "client_secret=[redacted]&grant_type=x"),
        ("a known bearer token", "Authorization: Bearer ya29.tok3n-abc", ["ya29.tok3n-abc"], "Authorization: Bearer [redacted]"),
        ("JSON inside a JSON string", #"{"refresh_token": "r1abc"}"#, [], #"{"refresh_token": "[redacted]"}"#),
        ("a uid", "no user 0MuYCa51kmC6QvMXDG9kQJ2LFZhi", [], "no user 0MuYCa51kmC6QvMXDG9kQJ2LFZhi"),
        // Shown in reports and on the terminal: what would act there is written as its code.
        ("control characters", "refused\u{1B}]0;pwned\u{7} \u{1B}[2J", [], #"refused\u{1B}]0;pwned\u{7} \u{1B}[2J"#),
        // A review saw the app token come back as the query had it, and a secret's first 20 characters kept.
        ("the app token percent-encoded", "Cannot parse access token 1234567890123456%7Csandbox-Qz8_x (url)", ["1234567890123456|sandbox-Qz8_x"],
         "Cannot parse access token [redacted] (url)"),
        ("the app token in lower-case hex", "token 1234567890123456%7csandbox-Qz8_x.", ["1234567890123456|sandbox-Qz8_x"], "token [redacted]."),
        ("a secret's first 20 characters", "bad secret 3f9a0c1d7e2b4a6f8c0d then", ["3f9a0c1d7e2b4a6f8c0d1e2f3a4b5c6d"], "bad secret [redacted] then"),
        ("a secret's last 12 characters", "ends …1e2f3a4b5c6d", ["3f9a0c1d7e2b4a6f8c0d1e2f3a4b5c6d"], "ends …[redacted]"),
        // 11 characters of it are no fragment: ordinary words would be taken.
        ("fewer characters than a fragment", "code 3f9a0c1d7e2 seen", ["3f9a0c1d7e2b4a6f8c0d1e2f3a4b5c6d"], "code 3f9a0c1d7e2 seen"),
    ]

    @Test(arguments: cases)
    func scrubs(_ what: String, text: String, known: [String], expected: String) {
        #expect(Redaction.scrubbed(text, known: known) == expected, "\(what)")
    }

    /// GOOGLE_APPLICATION_CREDENTIALS set to the key's JSON instead of its path: the error printed the key.
    @Test func aKeyGivenAsItsPathIsNotPrinted() {
        let json = #"{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIsEcReT\n-----END PRIVATE KEY-----\n"}"#
        do {
            _ = try ServiceAccountKey.load(path: json)
            Issue.record("expected an error")
        } catch {
            #expect(!"\(error)".contains("sEcReT") && "\(error)".contains("not shown"), "\(error)")
        }
        #expect(Redaction.path("/etc/keys/sa.json") == "'/etc/keys/sa.json'")
    }

    @Test func aLongTextIsCut() {
        let scrubbed = Redaction.scrubbed(String(repeating: "word ", count: 200))
        #expect(scrubbed.count == 301 && scrubbed.hasSuffix("…"))
        // Only the start of a body of megabytes is scanned (the JWT pattern backtracks along each run it starts).
        #expect(Redaction.scrubbed(String(repeating: "eyJ", count: 1_000_000)).hasPrefix("[redacted]"))
    }

    /// A path is quoted, unless what was given looks like the secret itself.
    @Test(arguments: [("fb-secret.txt", true), ("../keys/AuthKey_ABC123.p8", true), ("0123456789abcdef0123456789abcdef", false),
                      ("-----BEGIN PRIVATE KEY-----", false), ("secret", true), ("/run/secrets/facebook_app_secret", true),
                      ("/var/lib/idpipe-2024-11-20-keys/sa.json", true),
                      // Base64 has slashes: a key's body, a random secret.
                      ("MIGHAgEAMBMGByqGSM49AgEGCCqGSM49/AwEHBG0wawIBAQQg", false), ("q2v/8Jk3mX+7pLr0w9ZtYh4bN6cE1sA5dF2gH8jK0lM=", false),
                      // A key whose slashes cut it into parts too short for a token (a review saw 5 in 35 printed).
                      ("e+Qlga2wsHlJ/vuq+Ad3odQUl5xY/Y6Ut1rc7fKATJo=", false), ("Qm9i/YWxpY2U+dGVzdA=", false),
                      // A base64url secret with fewer than 3 digits (a review saw the sandbox's printed).
                      ("fbsecret-xJ8_kQvTnRwYpLmZaBcDeFgH", false), ("wQeRtYuIoPaSdFgHjKlZxCv1", false),
                      ("facebook_app_secret_2024", true), ("FacebookSecret.txt", true)])
    func pathsAreShownUnlessTheyMayBeTheSecret(given: String, shown: Bool) {
        #expect(Redaction.path("/pipelines/" + given, given: given) == (shown ? "'/pipelines/\(given)'" : "(a value that may be the key or secret itself, not a path: not shown)"))
    }

    @Test(arguments: [("invalid_grant", "invalid_grant"), ("PERMISSION_DENIED", "PERMISSION_DENIED"), ("invalid grant: r0dd", nil),
                      ("", nil), (String(repeating: "a", count: 65), nil)] as [(String, String?)])
    func codesAreKeptOnlyWhenTheyReadAsCodes(text: String, expected: String?) {
        #expect(Redaction.code(text) == expected)
    }
}

/// A service that quotes the refused request in its error: the URL, the headers and the body, in the shape of each
/// service's error answer. No secret of the request may reach the error idpipe keeps.
final class EchoTransport: HTTPTransport {
    let answer: @Sendable (String) -> String

    init(_ answer: @escaping @Sendable (String) -> String) { self.answer = answer }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let echo = request.url + " " + request.headers.map { "\($0.0): \($0.1)" }.joined(separator: " ") + " " + request.bodyText
        return HTTPResponse(status: 400, json: answer(String(decoding: JSONValue.string(echo).encoded(), as: UTF8.self)))
    }
}

struct FixedToken: AccessTokenSource {
    func accessToken() async throws -> String { "ya29.c.sEcReT-access" }
    func invalidate(_ token: String) async {}
}

@Suite struct EchoedSecretsTests {
    func channel(_ transport: EchoTransport, service: String) -> ServiceChannel {
        ServiceChannel(service: service, transport: transport, clock: ManualClock(), retry: RetryPolicy(maxAttempts: 1, jitter: { 1 }), maxInFlight: 1)
    }

    func expectNoSecret(_ work: () async throws -> Void, _ secrets: [String]) async {
        do {
            try await work()
            Issue.record("expected a refusal")
        } catch {
            let text = "\(error)"
            for secret in secrets { #expect(!text.contains(secret), "\(text)") }
            #expect(text.count < 600, "\(text)")
        }
    }

    @Test func appleKeepsOnlyACode() async throws {
        let key = try SigningKey(pem: try TestKeys.ecP256().privatePEM, algorithm: .es256)
        let credentials = try AppleCredentials(teamId: "TEAM123456", keyId: "KEY1234567", clientId: "com.example.app", key: key)
        let apple = AppleClient(credentials: credentials, endpoint: try Endpoint(AppleClient.productionBase, service: "apple"),
                                channel: channel(EchoTransport { #"{"error": \#($0)}"# }, service: "apple"))
        let secret = try apple.clientSecret()
        await expectNoSecret({ try await apple.revoke(token: "r0dd.sEcReT.refresh", hint: .refreshToken) }, ["sEcReT", secret])
    }

    @Test func facebookScrubsItsMessage() async throws {
        let transport = EchoTransport { #"{"error": {"code": 100, "message": \#($0)}}"# }
        let facebook = FacebookClient(credentials: try FacebookCredentials(appId: "1234567890", appSecret: "app-sEcReT"),
                                      endpoint: try Endpoint(FacebookClient.productionBase, service: "facebook"),
                                      channel: channel(transport, service: "facebook"))
        await expectNoSecret({ _ = try await facebook.appAccessToken() }, ["sEcReT"])
        // A token in the wrong field of the stored tokens is not quoted back either.
        await expectNoSecret({ try await facebook.revokeLogin(appScopedId: "EAAB-sEcReT") }, ["sEcReT"])
    }

    @Test func googleScrubsItsDetail() async throws {
        let transport = EchoTransport { #"{"error": {"code": 400, "message": "INVALID_ARGUMENT : "# + $0.dropFirst() + #", "status": "INVALID_ARGUMENT"}}"# }
        let (endpoint, _) = try IdentityToolkitClient.base(environment: [:], override: "https://identitytoolkit.googleapis.com/v1")
        let client = IdentityToolkitClient(projectId: "demo-probe", base: endpoint, tokens: FixedToken(), channel: channel(transport, service: "identitytoolkit"))
        await expectNoSecret({ try await client.update(localId: "uid-1", displayName: "X") }, ["sEcReT"])
    }

    @Test func googlesTokenEndpointScrubsItsDescription() async throws {
        let transport = EchoTransport { #"{"error": "invalid_grant", "error_description": \#($0)}"# }
        let (key, _) = try ServiceAccountTokenTests.keyFile()
        let tokens = try ServiceAccountAccessTokens(account: key, channel: channel(transport, service: "google-oauth"))
        await expectNoSecret({ _ = try await tokens.accessToken() }, ["eyJ"])
    }
}
