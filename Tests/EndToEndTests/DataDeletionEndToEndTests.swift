import Foundation
import Testing

/// Everything a data fixture (or a sandbox dump) holds, flattened to comparable keys: `firestore (default)/users/u1`,
/// `database demo-idpipe-default-rtdb/users/u1/score` (leaves), `storage demo-idpipe.appspot.com/users/u1/avatar.jpg`.
struct DataItems: Equatable {
    var firestore: Set<String> = []
    var database: Set<String> = []
    var storage: Set<String> = []

    init(_ dump: [String: Any]) {
        for (db, documents) in dump["firestore"] as? [String: Any] ?? [:] {
            for path in (documents as? [String: Any] ?? [:]).keys { firestore.insert("\(db)/\(path)") }
        }
        func leaves(_ value: Any, _ path: String) {
            if let object = value as? [String: Any] {
                for (key, child) in object { leaves(child, path + "/" + key) }
            } else if let array = value as? [Any] {
                for (index, child) in array.enumerated() { leaves(child, path + "/\(index)") }
            } else if !(value is NSNull) {
                database.insert(path)
            }
        }
        for (instance, tree) in dump["database"] as? [String: Any] ?? [:] { leaves(tree, instance) }
        for (bucket, objects) in dump["storage"] as? [String: Any] ?? [:] {
            for name in (objects as? [String: Any] ?? [:]).keys { storage.insert("\(bucket)/\(name)") }
        }
    }

    static func fixture(_ path: String) throws -> DataItems {
        DataItems(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any] ?? [:])
    }

    /// What the sample cleanup's configured paths cover for `uids` (its pipeline: users/{uid} recursive, profiles/{uid},
    /// inbox/{uid}/items; /users/{uid}, /presence/{uid}; demo-idpipe.appspot.com/users/{uid}/).
    func covered(by uids: Set<String>) -> DataItems {
        var result = DataItems([:])
        result.firestore = firestore.filter { item in
            let segments = item.split(separator: "/").map(String.init)
            guard segments.count >= 3 else { return false }
            let uid = segments[2]
            guard uids.contains(uid) else { return false }
            return segments[1] == "users" || (segments[1] == "profiles" && segments.count == 3) || (segments[1] == "inbox" && segments.count >= 5 && segments[3] == "items")
        }
        result.database = database.filter { item in
            let segments = item.split(separator: "/").map(String.init)
            return segments.count >= 3 && (segments[1] == "users" || segments[1] == "presence") && uids.contains(segments[2])
        }
        result.storage = storage.filter { item in
            let segments = item.split(separator: "/").map(String.init)
            return segments.count >= 4 && segments[1] == "users" && uids.contains(segments[2])
        }
        return result
    }

    func subtracting(_ other: DataItems) -> DataItems {
        var result = self
        result.firestore.subtract(other.firestore)
        result.database.subtract(other.database)
        result.storage.subtract(other.storage)
        return result
    }

    var total: Int { firestore.count + database.count + storage.count }
}

@Suite(.serialized) struct DataDeletionEndToEndTests {
    let asOf = "2026-11-21T00:00:00Z"
    let e2e = ApplyEndToEndTests()
    static let samplesData = Binary.root.appendingPathComponent("Samples/data.json").path

    @Test func theSampleCleanupDeletesExactlyTheConfiguredDataOfTheSelectedAccounts() throws {
        let (sandbox, pipeline) = try e2e.sampleCleanup()
        defer { Binary.removeVariant(pipeline) }
        let before = DataItems(try sandbox.data())
        #expect(before == (try DataItems.fixture(Self.samplesData)), "the sandbox serves the fixture as it is")

        // The dry run counts and changes nothing.
        let out = Binary.temporaryDirectory()
        let (planCode, planOutput) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(planCode == 1, "\(planOutput)")
        #expect(DataItems(try sandbox.data()) == before, "counting changed nothing")
        #expect(SandboxLedger(try sandbox.ledger()).changes.isEmpty)
        let plan = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(plan.contains("## Data to delete"))
        // What the counting cost each store: in the last section of plan.md and in plan.json.
        #expect(plan.components(separatedBy: "## Run timing and traffic").last?.contains("Counting the data to delete") == true, "\(plan)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as? [String: Any]
        let traffic = ((json?["data"] as? [String: Any])?["traffic"] as? [[String: Any]]) ?? []
        let requests = Dictionary(uniqueKeysWithValues: traffic.map { ($0["service"] as? String ?? "", $0["requests"] as? Int ?? 0) })
        let counted = try e2e.ledgerRows(out + "/state.sqlite").filter { $0["action"] == "delete-firestore" && !$0["counted"].isEmpty }.count
        #expect(counted > 0 && (requests["firestore"] ?? 0) >= counted, "\(requests), \(counted) firestore counts")
        #expect(Set(requests.keys).isSubset(of: ["firestore", "database", "storage", "google-oauth"]) && requests.values.allSatisfy { $0 > 0 }, "\(requests)")

        let (code, output) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"])
        #expect(code == 1, "done; the samples hold quarantined rows: \(output)")
        let rows = try e2e.ledgerRows(out + "/state.sqlite")
        let deleted = Set(rows.filter { $0["action"] == "delete-account" && $0["state"] == "done" }.map { $0["uid"] })
        #expect(deleted.count == 10)

        // Exactly the configured data of the deleted accounts is gone; everything else is as it was.
        let after = DataItems(try sandbox.data())
        let expectedGone = before.covered(by: deleted)
        #expect(expectedGone.firestore.count > 20 && expectedGone.database.count > 10 && expectedGone.storage.count > 5, "the samples give each store work")
        #expect(after == before.subtracting(expectedGone), "gone: \(before.subtracting(after).total), expected \(expectedGone.total)")
        let otherAccounts = Set(before.firestore.compactMap { $0.split(separator: "/").dropFirst(2).first.map(String.init) }).subtracting(deleted)
        #expect(otherAccounts.count > 200 && before.covered(by: otherAccounts).subtracting(after).total == 0, "nothing of the other accounts went")
        #expect(after.storage.contains { $0.contains("-archive/") } == before.storage.contains { $0.contains("-archive/") },
                "a uid-prefixed name outside users/{uid}/ stays")

        // Each account's data went before its account, each effect once, and the dry run's counts match what went.
        let ledger = SandboxLedger(try sandbox.ledger())
        e2e.checkOrderAndOnce(rows, ledger)
        for uid in deleted {
            let accountDeletion = try #require(ledger.firstChange("identitytoolkit", "delete", uid))
            let dataChanges = ledger.changes.enumerated().filter { $0.element.hasPrefix("firestore ") || $0.element.hasPrefix("database ") || $0.element.hasPrefix("storage ") }
                .filter { $0.element.contains("/\(uid)") }
            #expect(!dataChanges.isEmpty && dataChanges.allSatisfy { $0.offset < accountDeletion }, "\(uid): data deleted before the account")
        }
        for (kind, service) in [("delete-firestore", "firestore"), ("delete-database", "database"), ("delete-storage", "storage")] {
            let actions = rows.filter { $0["action"] == kind && $0["state"] == "done" }
            #expect(actions.count == 10)
            let counted = actions.reduce(0) { $0 + (Int($1["would_delete"]) ?? -1) }
            let removed = actions.reduce(0) { $0 + (Int($1["deleted"]) ?? -1) }
            #expect(counted == removed, "\(kind): dry run \(counted), apply \(removed)")
            let sandboxCount = service == "database"
                ? ledger.entries.filter { $0["service"] as? String == "database" }.reduce(0) { $0 + (Int(($1["detail"] as? String ?? "").dropFirst(6)) ?? 0) }
                : ledger.count(service, service == "firestore" ? "delete-document" : "delete-object")
            #expect(counted == sandboxCount, "\(kind): the dry run counted \(counted), the sandbox deleted \(sandboxCount)")
        }
        let deepest = expectedGone.firestore.map { $0.split(separator: "/").count }.max() ?? 0
        #expect(deepest >= 9, "a reactions document three subcollections below users/{uid} was among the deleted")
    }

    @Test func recursiveDeletionReachesNestedSubcollectionsUnderAMissingDocument() throws {
        // One account whose users/{uid} document does not exist, with data four collection levels down.
        let folder = Binary.temporaryDirectory()
        let uid = "deepUser0001"
        let accounts = #"{"users": [{"localId": "\#(uid)", "disabled": true, "providerUserInfo": []}, {"localId": "keepUser0002", "providerUserInfo": []}]}"#
        try accounts.write(toFile: folder + "/accounts.json", atomically: true, encoding: .utf8)
        let fixture = """
            {"firestore": {"(default)": {
              "users/\(uid)/chats/c1": {"t": 1},
              "users/\(uid)/chats/c1/messages/m1": {"t": 2},
              "users/\(uid)/chats/c1/messages/m1/reactions/r1": {"t": 3},
              "users/\(uid)/chats/c1/messages/m1/reactions/r1/seen/s1": {"t": 4},
              "users/\(uid)/chats/c2/messages/m2/reactions/r2": {"t": 5},
              "users/keepUser0002/chats/c1": {"t": 6},
              "users/\(uid)x/chats/c1": {"t": 7}
            }}, "database": {"demo-idpipe-default-rtdb": {}}, "storage": {"demo-idpipe.appspot.com": {}}}
            """
        try fixture.write(toFile: folder + "/data.json", atomically: true, encoding: .utf8)
        let sandbox = try SandboxProcess(accounts: folder + "/accounts.json", data: folder + "/data.json")
        let pipeline = try e2e.pipeline(from: "Pipelines/cleanup-deleted-accounts.yaml", sandbox: sandbox, replacing: [
            ("../Samples/accounts.json", folder + "/accounts.json"), ("  deletion_requested: true\n", "  disabled: true\n"),
            ("inputs:\n  deletion_requests: ../Samples/deletion-requests.csv\n  stored_tokens: ../Samples/stored-tokens.jsonl\n", ""),
            ("  max_deletion_share: 0.10", "  max_deletion_share: 1"),
        ])
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["run", pipeline, "--yes", "--out", out, "--as-of", asOf])
        #expect(code == 0, "\(output)")
        let left = DataItems(try sandbox.data()).firestore
        #expect(left == ["(default)/users/keepUser0002/chats/c1", "(default)/users/\(uid)x/chats/c1"])
        let row = try #require(try e2e.ledgerRows(out + "/state.sqlite").first { $0["action"] == "delete-firestore" })
        #expect(row["would_delete"] == "5" && row["deleted"] == "5", "\(row.fields)")
    }
}
