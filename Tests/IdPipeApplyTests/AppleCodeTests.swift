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
    }
}
