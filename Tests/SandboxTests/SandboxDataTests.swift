import Foundation
import IdPipeSandbox
import Testing

/// The sandbox's data stores, called in process with the emulator's `Bearer owner`.
@Suite struct SandboxDataTests {
    let documents = "/v1/projects/demo-idpipe/databases/(default)/documents"

    func service() throws -> SandboxService {
        let service = try SandboxService(config: SandboxConfig(projectId: "demo-idpipe"))
        try service.loadData(json: Array("""
            {"firestore": {"(default)": {"users/u1": {"a": 1}, "users/u1/chats/c1": {"b": 2}}},
             "storage": {"bkt": {"users/a+b/x.txt": {"size": 1}, "users/a b/y.txt": {"size": 2}}}}
            """.utf8), file: "fixture")
        return service
    }

    func send(_ service: SandboxService, _ method: String, _ target: String, body: String = "") -> (status: Int, body: String) {
        let request = SandboxRequest(method: method, target: target, headers: [("Authorization", "Bearer owner"), ("Content-Type", "application/json")],
                                     body: Array(body.utf8))
        guard case .respond(let response, _) = service.handle(request) else { return (0, "dropped") }
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    @Test func aCommitRefusesANameWithEmptySegmentsAndDeletesNothing() throws {
        let service = try service()
        let name = "projects/demo-idpipe/databases/(default)/documents/users/u1//"
        let refused = send(service, "POST", documents + ":commit", body: #"{"writes": [{"delete": "\#(name)"}]}"#)
        #expect(refused.status == 400, "\(refused.body)")
        #expect(service.ledger.isEmpty)
        let kept = send(service, "GET", documents + "/users/u1")
        #expect(kept.status == 200, "users/u1 is still there")
    }

    /// A misspelt fault was taken as no fault, and answered ok: a test meant to run under faults ran without them.
    @Test func theFaultsEndpointRefusesWhatItDoesNotKnow() throws {
        let service = try service()
        let unknown = send(service, "POST", "/__sandbox/faults", body: #"{"fault503": 1}"#)
        #expect(unknown.status == 400 && unknown.body.contains("unknown fault 'fault503'") && unknown.body.contains("status503"), "\(unknown.body)")
        #expect(send(service, "POST", "/__sandbox/faults", body: #"{"status503": 1.5}"#).status == 400)
        #expect(send(service, "POST", "/__sandbox/faults", body: #"{"latency_ms": -1}"#).status == 400)
        // A burst of 0 was one, and a latency without bound hung every request.
        #expect(send(service, "POST", "/__sandbox/faults", body: #"{"burst429": 1, "burst_length": 0}"#).status == 400)
        #expect(send(service, "POST", "/__sandbox/faults", body: #"{"latency_ms": 9223372036854775807}"#).status == 400)
        #expect(send(service, "POST", "/__sandbox/faults", body: "[]").status == 400)
        #expect(send(service, "GET", documents + "/users/u1").status == 200, "no fault was set by the refused requests")
        #expect(send(service, "POST", "/__sandbox/faults", body: #"{"status503": 1, "seed": 7}"#).status == 200)
        #expect(send(service, "GET", documents + "/users/u1").status == 503)
        // The faults not given are off.
        #expect(send(service, "POST", "/__sandbox/faults", body: "{}").status == 200)
        #expect(send(service, "GET", documents + "/users/u1").status == 200)
    }

    @Test func listingsSeeSubcollectionsAndACommitDeletesDocuments() throws {
        let service = try service()
        #expect(send(service, "POST", documents + "/users/u1:listCollectionIds", body: "{}").body.contains(#""collectionIds":["chats"]"#))
        let name = "projects/demo-idpipe/databases/(default)/documents/users/u1"
        #expect(send(service, "POST", documents + ":commit", body: #"{"writes": [{"delete": "\#(name)"}]}"#).status == 200)
        #expect(send(service, "GET", documents + "/users/u1").status == 404)
        // users/u1 is now a missing document: listed with showMissing only, its subcollection still there.
        #expect(send(service, "GET", documents + "/users?showMissing=true").body.contains("users/u1\""))
        #expect(!send(service, "GET", documents + "/users").body.contains("users/u1\""))
        #expect(send(service, "GET", documents + "/users/u1/chats/c1").status == 200)
    }

    /// In a URL path a literal + is a plus (only form bodies and query strings read it as a space).
    @Test func aPlusInAnObjectNameIsAPlus() throws {
        let service = try service()
        #expect(send(service, "DELETE", "/storage/v1/b/bkt/o/users%2Fa+b%2Fx.txt").status == 204)
        #expect(send(service, "DELETE", "/storage/v1/b/bkt/o/users%2Fa+b%2Fx.txt").status == 404, "gone, and only it")
        #expect(send(service, "GET", "/storage/v1/b/bkt/o?prefix=users%2F").body.contains("users/a b/y.txt"))
    }
}
