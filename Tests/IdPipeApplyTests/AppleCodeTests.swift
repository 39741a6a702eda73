import IdPipeConnect
import IdPipeCrypto
import IdPipeTestSupport
import Synchronization
import Testing
@testable import IdPipeApply
@testable import IdPipeCore

/// Answers every request the same way, and counts them.
final class SameAnswer: HTTPTransport {
    let response: HTTPResponse
    let sent = Mutex(0)
    init(_ response: HTTPResponse) { self.response = response }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        sent.withLock { $0 += 1 }
        return response
    }
}

/// Live effects over Identity Toolkit, its lookup answering one account "u1" whose display name is `name`.
func effects(withDisplayName name: String) throws -> LiveEffects {
    let body = JSONValue.object(["users": .array([.object(["localId": .string("u1"), "displayName": .string(name)])])]).encoded()
    let channel = ServiceChannel(service: "identitytoolkit", transport: SameAnswer(HTTPResponse(status: 200, json: String(decoding: body, as: UTF8.self))),
                                 retry: RetryPolicy(maxAttempts: 1), maxInFlight: 1)
    let (endpoint, _) = try IdentityToolkitClient.base(environment: [:], override: "https://identitytoolkit.googleapis.com/v1")
    let client = IdentityToolkitClient(projectId: "p", base: endpoint, tokens: EmulatorAccessToken(), channel: channel)
    return LiveEffects(identityToolkit: client, apple: nil, facebook: nil, webhook: nil,
                       dataStores: DataStores(config: nil, firestore: nil, database: nil, storage: nil), channels: [channel], batchDeleteRate: 1)
}

/// A name the plan took for none (spaces, characters that show nothing) is none to apply too, which sets the planned
/// name: apply called it "a display name now (set since the plan)", and the import file and the project disagreed.
@Test(arguments: ["", "   ", "\u{200B}", "\u{202E}", "\t\n"])
func aNameOfNothingVisibleIsNoName(current: String) async throws {
    #expect(try await effects(withDisplayName: current).displayName(uid: "u1") == .empty)
}

@Test func aVisibleNameIsKept() async throws {
    #expect(try await effects(withDisplayName: " Ana ").displayName(uid: "u1") == .present(" Ana "))
}

@Suite struct AppleCodeTests {
    /// Apple refusing a code the interrupted run had already sent is a failed revocation (when_revocation_fails),
    /// not "not revocable" (when_not_revocable, which may delete the account): the first send may have exchanged
    /// it, and the tokens it gave are live. A code sent for the first time and refused is not revocable.
    @Test func aRefusedCodeSentBeforeIsAFailure() async throws {
        let key = try SigningKey(pem: try TestKeys.ecP256().privatePEM, algorithm: .es256)
        let credentials = try AppleCredentials(teamId: "TEAM123456", keyId: "KEY1234567", clientId: "com.example.app", key: key)
        let transport = SameAnswer(HTTPResponse(status: 400, json: #"{"error":"invalid_grant"}"#))
        let channel = ServiceChannel(service: "apple", transport: transport, retry: RetryPolicy(maxAttempts: 2), maxInFlight: 1)
        let apple = AppleClient(credentials: credentials, endpoint: try Endpoint(AppleClient.productionBase, service: "apple"), channel: channel)
        let effects = LiveEffects(identityToolkit: nil, apple: apple, facebook: nil, webhook: nil,
                                  dataStores: DataStores(config: nil, firestore: nil, database: nil, storage: nil), channels: [channel],
                                  batchDeleteRate: 1)
        let now: Int64 = 1_790_000_000_000
        let code = StoredAppleToken(kind: .authorizationCode, token: Secret(value: "c-1", fingerprint: "f00"), capturedAt: now - 60_000)
        #expect(try await effects.revokeApple(code, now: now, resent: false)
            == .notPossible("Apple refused the authorization code (invalid_grant: expired or already used)"))
        await #expect {
            _ = try await effects.revokeApple(code, now: now, resent: true)
        } throws: { error in
            "\(error)".contains("which the interrupted send may have used") && !"\(error)".contains("c-1")
        }
        #expect(transport.sent.withLock { $0 } == 2)
        // Captured later than now, beyond what clocks a little apart explain: not sent, and a failure (the account kept
        // by default), where Apple's refusal made it "not revocable" and let the account go.
        let later = StoredAppleToken(kind: .authorizationCode, token: Secret(value: "c-2", fingerprint: "f01"), capturedAt: now + 3_600_000)
        await #expect {
            _ = try await effects.revokeApple(later, now: now, resent: false)
        } throws: { error in
            (error as? ConnectorError).map { !$0.stopsRun } == true && "\(error)".contains("code-captured-later") && !"\(error)".contains("c-2")
        }
        #expect(transport.sent.withLock { $0 } == 2, "nothing sent for it")
    }
}
