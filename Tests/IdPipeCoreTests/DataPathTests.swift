import Testing
@testable import IdPipeCore

@Suite struct DataPathTests {
    func pipeline(_ delete: String) throws(PipelineFileError) -> PipelineDefinition {
        try PipelineDefinition.parse(yaml: """
            version: 1
            name: t
            source: {path: x.json}
            select: {disabled: true}
            stages:
              delete:
            \(delete)
            """, file: "t.yaml")
    }

    @Test func parsesTheThreeStores() throws {
        let definition = try pipeline("""
                firestore:
                  database: users-db
                  mode: recursive
                  paths:
                    - users/{uid}
                    - inbox/{uid}/items
                realtime_database:
                  url: https://my-app-default-rtdb.europe-west1.firebasedatabase.app/
                  paths:
                    - /users/{uid}
                storage:
                  paths:
                    - my-app.appspot.com/users/{uid}/
            """)
        let delete = try #require(definition.stages.delete)
        #expect(delete.firestore?.database == "users-db" && delete.firestore?.mode == .recursive)
        #expect(delete.realtimeDatabase?.instance == "my-app-default-rtdb")
        #expect(delete.realtimeDatabase?.url == "https://my-app-default-rtdb.europe-west1.firebasedatabase.app")
        #expect(delete.pathKinds == [.deleteFirestore, .deleteDatabase, .deleteStorage])
        #expect(DataPath.isCollection("inbox/u1/items") && !DataPath.isCollection("users/u1"))
    }

    @Test(arguments: [
        ("firestore:\n      paths:\n        - users/all", "has no {uid}"),
        ("firestore:\n      paths:\n        - /users/{uid}", "no leading or trailing '/'"),
        ("firestore:\n      paths:\n        - users//{uid}", "a segment is empty"),
        ("firestore:\n      mode: deep\n      paths:\n        - users/{uid}", "'deep' is not one of: shallow, recursive"),
        ("realtime_database:\n      url: https://example.com\n      paths:\n        - /users/{uid}", "is neither https://<instance>.firebaseio.com"),
        ("realtime_database:\n      url: https://a.firebaseio.com\n      paths:\n        - users/{uid}", "starts at the root with '/'"),
        ("storage:\n      paths:\n        - bucket/users/{uid}", "also matches every account whose uid starts with this one"),
        ("storage:\n      paths:\n        - /users/{uid}/", "a storage path is bucket/prefix"),
        ("storage:\n      paths: []", "the list of paths is empty"),
        ("storage:\n      paths:\n        - \"b/a; b/{uid}/\"", "does not take '; '"),
    ])
    func refusesPathsThatWouldReachTheWrongData(yaml: String, message: String) {
        let indented = yaml.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
        #expect(throws: PipelineFileError.self) { try pipeline(indented) }
        do { _ = try pipeline(indented) } catch { #expect(error.description.contains(message), "\(error.description)") }
    }

    @Test func expandsTheUidAndRefusesOnesThatWouldChangeThePath() {
        #expect(DataPath.expand("users/{uid}/posts", uid: "u1", kind: .deleteFirestore) == .success("users/u1/posts"))
        #expect(DataPath.expand("b/{uid}-pic.png", uid: "u1", kind: .deleteStorage) == .success("b/u1-pic.png"))
        #expect(throws: DataPathRefusal.self) { try DataPath.expand("users/{uid}", uid: "a/b", kind: .deleteStorage).get() }
        #expect(throws: DataPathRefusal.self) { try DataPath.expand("/users/{uid}", uid: "a.b", kind: .deleteDatabase).get() }
        #expect(throws: DataPathRefusal.self) { try DataPath.expand("users/{uid}", uid: "__x__", kind: .deleteFirestore).get() }
        #expect(DataPath.databaseInstance(url: "https://x.firebaseio.com") == "x")
        #expect(DataPath.databaseInstance(url: "http://x.firebaseio.com") == nil)
        #expect(DataPath.databaseInstance(url: "https://x.firebaseio.com/path") == nil)
    }

    @Test func theAccountWaitsForItsDataAndAUidThatCannotNameAPathKeepsIt() throws {
        let definition = try pipeline("""
                firestore:
                  paths:
                    - users/{uid}
                storage:
                  paths:
                    - b/users/{uid}/
            """)
        let planner = Planner(stages: definition.stages, asOf: 0)
        #expect(planner.deletions(after: [], uid: "u1").map(\.kind) == [.deleteFirestore, .deleteStorage, .deleteAccount])
        let odd = planner.deletions(after: [], uid: "a/b")
        #expect(odd.map(\.state) == [.notPossible, .notPossible, .blocked])
        #expect(odd.last?.reason?.contains("delete-firestore: the uid contains '/'") == true)
    }

    @Test func describedCountsReadBack() {
        let counts = [PathCount(template: "users/{uid}", count: 3), PathCount(template: "/presence/{uid}", count: 0)]
        #expect(PathCount.describe(counts) == "users/{uid}: 3; /presence/{uid}: 0")
        #expect(PathCount.parse(PathCount.describe(counts)) == counts)
    }
}
