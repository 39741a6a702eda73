import Foundation
import IdPipeSandbox
import Testing

/// `accounts:lookup` in the sandbox: by every kind of identifier, its indexes kept up to date by every write.
@Suite struct SandboxLookupTests {
    let accounts = "/identitytoolkit.googleapis.com/v1/projects/demo-idpipe/accounts:"

    func send(_ service: SandboxService, _ call: String, _ body: String) throws -> (status: Int, body: [String: Any]) {
        let request = SandboxRequest(method: "POST", target: accounts + call,
                                     headers: [("Authorization", "Bearer owner"), ("Content-Type", "application/json")], body: Array(body.utf8))
        guard case .respond(let response, _) = service.handle(request) else { return (0, [:]) }
        return (response.status, try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:])
    }

    /// The uids found, in the order given.
    func found(_ service: SandboxService, _ body: String) throws -> [String] {
        let (status, answer) = try send(service, "lookup", body)
        #expect(status == 200, "\(answer)")
        return (answer["users"] as? [[String: Any]] ?? []).compactMap { $0["localId"] as? String }
    }

    @Test func accountsAreFoundByEmailPhoneAndLinkUntilTheyChangeOrGo() throws {
        let service = try SandboxService(config: SandboxConfig(projectId: "demo-idpipe"))
        let created = try send(service, "batchCreate", """
            {"users": [{"localId": "a", "email": "ann@x.example", "phoneNumber": "+14155550100",
                        "providerUserInfo": [{"providerId": "apple.com", "rawId": "001.a"}, {"providerId": "password", "rawId": "ann@x.example"}]},
                       {"localId": "b", "email": "ANN@x.example"}]}
            """)
        #expect(created.status == 200 && (created.body["error"] as? [Any])?.isEmpty == true, "\(created.body)")
        // Emails in any case; an account found twice is given once.
        #expect(try found(service, #"{"email": ["Ann@X.example"]}"#) == ["a", "b"])
        #expect(try found(service, #"{"localId": ["a"], "phoneNumber": ["+14155550100"], "federatedUserId": [{"providerId": "apple.com", "rawId": "001.a"}]}"#) == ["a"])
        // A password link is the email again, not a sign-in found by link.
        #expect(try found(service, #"{"federatedUserId": [{"providerId": "password", "rawId": "ann@x.example"}]}"#) == [])

        // Overwritten by an import, the old email and link no longer find it; the new ones do.
        _ = try send(service, "batchCreate", #"{"users": [{"localId": "a", "email": "new@x.example", "providerUserInfo": [{"providerId": "apple.com", "rawId": "001.z"}]}]}"#)
        #expect(try found(service, #"{"email": ["ann@x.example"]}"#) == ["b"])
        #expect(try found(service, #"{"phoneNumber": ["+14155550100"], "federatedUserId": [{"providerId": "apple.com", "rawId": "001.a"}]}"#) == [])
        #expect(try found(service, #"{"email": ["new@x.example"], "federatedUserId": [{"providerId": "apple.com", "rawId": "001.z"}]}"#) == ["a"])
        // Deleted, nothing finds it.
        _ = try send(service, "batchDelete", #"{"localIds": ["a", "b"], "force": true}"#)
        let gone = try send(service, "lookup", #"{"email": ["new@x.example", "ann@x.example"], "localId": ["a"]}"#)
        #expect(gone.status == 200 && gone.body["users"] == nil, "\(gone.body)")

        let tooMany = "{\"localId\": [" + (0..<60).map { "\"u\($0)\"" }.joined(separator: ", ") + "], \"email\": ["
            + (0..<41).map { "\"e\($0)@x.example\"" }.joined(separator: ", ") + "]}"
        #expect(try send(service, "lookup", tooMany).status == 400)
        #expect(try send(service, "lookup", #"{"federatedUserId": [{"providerId": "apple.com"}]}"#).status == 400)
    }
}
