/// Firestore REST v1 (get, list with showMissing, listCollectionIds, commit with deletes, documents.delete), the
/// Realtime Database REST API (`GET`/`DELETE` on `{path}.json?ns=`), and the Cloud Storage JSON API (objects list
/// with prefix and paging, objects delete): each checks the Google access token and its scopes as the real
/// service does, and records every deletion in the ledger.
extension SandboxService {
    static let firestoreScopes = ["https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/datastore"]
    static let storageScopes = ["https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/devstorage.full_control",
                                "https://www.googleapis.com/auth/devstorage.read_write"]
    static let databaseScopes = ["https://www.googleapis.com/auth/firebase.database", "https://www.googleapis.com/auth/firebase"]

    enum GoogleBearer {
        /// The emulator's `Bearer owner`, when the sandbox accepts it.
        case owner
        case missing
        /// Not issued by the sandbox, or expired.
        case unknown
        case issued(scopes: Set<String>)
    }

    /// What the request's Google bearer token is.
    func googleBearer(_ state: State, _ request: SandboxRequest) -> GoogleBearer {
        let bearer = request.header("Authorization") ?? ""
        let token = bearer.lowercased().hasPrefix("bearer ") ? String(bearer.dropFirst(7)) : ""
        if token.lowercased() == "owner" && state.config.acceptOwnerToken { return .owner }
        guard !token.isEmpty else { return .missing }
        guard let expires = state.googleTokens[token], expires > SandboxTime.unixNow() else { return .unknown }
        return .issued(scopes: state.googleScopes[token] ?? [])
    }

    /// nil when the bearer token is one the sandbox issued, unexpired, with one of `scopes` (and every one of `alsoNeeded`).
    func refuseToken(_ state: State, _ request: SandboxRequest, scopes: [String], alsoNeeded: [String] = []) -> (status: Int, message: String)? {
        switch googleBearer(state, request) {
        case .owner: return nil
        case .missing: return (401, "The request does not have valid authentication credentials.")
        case .unknown: return (401, "Request had invalid authentication credentials. Expected OAuth 2 access token.")
        case .issued(let granted):
            guard scopes.contains(where: granted.contains), alsoNeeded.allSatisfy(granted.contains) else {
                return (403, "Request had insufficient authentication scopes.")
            }
            return nil
        }
    }

    static func statusError(_ status: Int, _ code: String, _ message: String) -> SandboxResponse {
        .json(status, .object([("error", .object([("code", .number(String(status))), ("message", .string(message)), ("status", .string(code))]))]))
    }

    static func timestamp() -> String {
        SandboxTime.formatRFC3339(SandboxTime.unixMillisNow())
    }

    // MARK: - Firestore

    func firestore(_ state: inout State, route: Route, request: SandboxRequest) -> SandboxResponse {
        if let refusal = refuseToken(state, request, scopes: Self.firestoreScopes) {
            return Self.statusError(refusal.status, refusal.status == 401 ? "UNAUTHENTICATED" : "PERMISSION_DENIED", refusal.message)
        }
        guard route.project == state.config.projectId else {
            return Self.statusError(403, "PERMISSION_DENIED", "Permission denied on resource project \(route.project ?? "").")
        }
        let databaseId = route.subject ?? ""
        guard let root = state.firestore[databaseId] ?? (databaseId == "(default)" ? FirestoreDocument() : nil) else {
            return Self.statusError(404, "NOT_FOUND", "The database \(databaseId) does not exist for project \(route.project ?? "")")
        }
        state.firestore[databaseId] = root
        let prefix = "projects/\(route.project!)/databases/\(databaseId)/documents"
        // What follows `/documents`: "", ":commit", "/users/u1", "/users/u1:listCollectionIds", "/users".
        var rest = route.remainder
        var method = ""
        if let colon = rest.lastIndex(of: ":"), !rest[colon...].contains("/") {
            method = String(rest[rest.index(after: colon)...])
            rest = String(rest[..<colon])
        }
        if rest.hasPrefix("/") { rest.removeFirst() }
        let segments = rest.isEmpty ? [] : rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if segments.contains(where: \.isEmpty) { return Self.statusError(400, "INVALID_ARGUMENT", "A document path has an empty segment.") }
        let query = Dictionary(request.query, uniquingKeysWith: { first, _ in first })
        switch (request.method, method) {
        case ("POST", "commit") where segments.isEmpty:
            return firestoreCommit(&state, root: root, prefix: prefix, databaseId: databaseId, body: request.body)
        case ("POST", "listCollectionIds") where segments.count % 2 == 0:
            let body = (try? SJSON.parse(request.body)) ?? .object([])
            let document = root.document(segments[...], create: false)
            let ids = document?.collectionIds() ?? []
            let size = Int(body["pageSize"]?.int ?? 0)
            let after = body["pageToken"]?.string.flatMap(Self.decodePageToken)
            let (page, more) = Self.page(ids, after: after, size: size > 0 ? size : Int.max)
            var members: [(String, SJSON)] = [("collectionIds", .array(page.map(SJSON.string)))]
            Self.appendPageToken(&members, page, more: more)
            return .json(200, .object(members))
        case ("GET", "") where segments.count % 2 == 0 && !segments.isEmpty:
            guard let document = root.document(segments[...], create: false), let fields = document.fields else {
                return Self.statusError(404, "NOT_FOUND", "Document \"\(prefix)/\(rest)\" not found.")
            }
            return .json(200, Self.firestoreJSON(name: "\(prefix)/\(rest)", fields: Self.masked(fields, query), time: Self.timestamp()))
        case ("GET", "") where segments.count % 2 == 1:
            let parent = root.document(segments.dropLast(), create: false)
            let documents = parent?.collections[segments.last!] ?? [:]
            let showMissing = query["showMissing"] == "true"
            let ids = documents.keys.sorted().filter { id in
                let document = documents[id]!
                return document.fields != nil || (showMissing && document.hasData)
            }
            let size = Int(query["pageSize"] ?? "") ?? 0
            let (page, more) = Self.page(ids, after: query["pageToken"].flatMap(Self.decodePageToken), size: size > 0 ? min(size, 300) : 300)
            let time = Self.timestamp()
            var members: [(String, SJSON)] = [("documents", .array(page.map { id in
                let name = "\(prefix)/\(rest)/\(id)"
                guard let fields = documents[id]!.fields else { return .object([("name", .string(name))]) }
                return Self.firestoreJSON(name: name, fields: Self.masked(fields, query), time: time)
            }))]
            Self.appendPageToken(&members, page, more: more)
            return .json(200, .object(members))
        case ("DELETE", "") where segments.count % 2 == 0 && !segments.isEmpty:
            deleteDocument(&state, root: root, databaseId: databaseId, path: rest)
            return .json(200, .object([]))
        default:
            return Self.statusError(400, "INVALID_ARGUMENT", "\(request.method) \(route.name) is not part of the sandbox's Firestore subset.")
        }
    }

    private func firestoreCommit(_ state: inout State, root: FirestoreDocument, prefix: String, databaseId: String, body bytes: [UInt8]) -> SandboxResponse {
        guard let body = try? SJSON.parse(bytes), let writes = body["writes"]?.array else {
            return Self.statusError(400, "INVALID_ARGUMENT", "Invalid JSON payload: 'writes' must be a list.")
        }
        guard writes.count <= 500 else {
            return Self.statusError(400, "INVALID_ARGUMENT", "maximum 500 writes allowed per request")
        }
        var paths: [String] = []
        for write in writes {
            guard let members = write.members, members.count == 1, let name = write["delete"]?.string else {
                return Self.statusError(400, "INVALID_ARGUMENT", "The sandbox's commit takes only writes of the form {\"delete\": name}.")
            }
            guard name.hasPrefix(prefix + "/"), FirestoreDocument.segments(name.dropFirst(prefix.count + 1)) != nil else {
                return Self.statusError(400, "INVALID_ARGUMENT", "Document name \"\(name)\" lacks \"\(prefix)/\" or is not a document path.")
            }
            paths.append(String(name.dropFirst(prefix.count + 1)))
        }
        // All or nothing, as a commit is: every name was checked before the first delete.
        for path in paths { deleteDocument(&state, root: root, databaseId: databaseId, path: path) }
        let time = Self.timestamp()
        return .json(200, .object([("writeResults", .array(paths.map { _ in .object([]) })), ("commitTime", .string(time))]))
    }

    /// `path` is a checked document path (`FirestoreDocument.segments` accepts it).
    private func deleteDocument(_ state: inout State, root: FirestoreDocument, databaseId: String, path: String) {
        let segments = FirestoreDocument.segments(path[...]) ?? []
        let document = root.document(segments[...], create: false)
        let existed = document?.fields != nil
        document?.fields = nil
        if existed { root.prune(segments[...]) }
        Self.record(&state, service: "firestore", action: "delete-document", target: "\(databaseId)/\(path)", changed: existed)
    }

    static func firestoreJSON(name: String, fields: SJSON?, time: String) -> SJSON {
        var members: [(String, SJSON)] = [("name", .string(name))]
        if let fields { members.append(("fields", .object((fields.members ?? []).map { ($0.0, firestoreValue($0.1)) }))) }
        members += [("createTime", .string(time)), ("updateTime", .string(time))]
        return .object(members)
    }

    /// `mask.fieldPaths=__name__` (or any mask without a stored field) leaves the fields out.
    static func masked(_ fields: SJSON, _ query: [String: String]) -> SJSON? {
        guard let mask = query["mask.fieldPaths"] else { return fields }
        return .object((fields.members ?? []).filter { $0.0 == mask })
    }

    static func firestoreValue(_ value: SJSON) -> SJSON {
        switch value {
        case .null: .object([("nullValue", .string("NULL_VALUE"))])
        case .bool(let flag): .object([("booleanValue", .bool(flag))])
        case .number(let text): text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
            ? .object([("doubleValue", .number(text))]) : .object([("integerValue", .string(text))])
        case .string(let text): .object([("stringValue", .string(text))])
        case .array(let items): .object([("arrayValue", .object([("values", .array(items.map(firestoreValue)))]))])
        case .object(let members): .object([("mapValue", .object([("fields", .object(members.map { ($0.0, firestoreValue($0.1)) }))]))])
        }
    }

    // MARK: - Realtime Database

    func realtimeDatabase(_ state: inout State, route: Route, request: SandboxRequest) -> SandboxResponse {
        if let refusal = refuseToken(state, request, scopes: Self.databaseScopes, alsoNeeded: ["https://www.googleapis.com/auth/userinfo.email"]) {
            return .json(401, .object([("error", .string(refusal.status == 401 ? "Unauthorized request." : "Permission denied."))]))
        }
        let query = Dictionary(request.query, uniquingKeysWith: { first, _ in first })
        guard let instance = query["ns"], let root = state.database[instance] ?? (instance.isEmpty ? nil : DatabaseNode(.null)) else {
            return .json(404, .object([("error", .string("Namespace not specified (the sandbox is reached as the emulator is: ?ns=<instance>)"))]))
        }
        state.database[instance] = root
        let keys = route.remainder.split(separator: "/").map(String.init)
        if keys.contains(where: { $0.contains(where: { ".$#[]".contains($0) }) }) {
            return .json(400, .object([("error", .string("Invalid path: keys must not contain . $ # [ ]"))]))
        }
        switch request.method {
        case "GET":
            return .json(200, root.node(keys[...])?.json ?? .null)
        case "DELETE":
            guard !keys.isEmpty else { return .json(400, .object([("error", .string("the sandbox refuses to delete a whole database"))])) }
            let removed = root.remove(keys[...])
            Self.record(&state, service: "database", action: "delete", target: "\(instance)/\(keys.joined(separator: "/"))", changed: removed > 0,
                        detail: "nodes=\(removed)")
            return query["print"] == "silent" ? .empty(204) : .json(200, .null)
        default:
            return .json(405, .object([("error", .string("the sandbox's Realtime Database takes GET and DELETE"))]))
        }
    }

    // MARK: - Cloud Storage

    func storage(_ state: inout State, route: Route, request: SandboxRequest) -> SandboxResponse {
        if let refusal = refuseToken(state, request, scopes: Self.storageScopes) {
            return Self.googleError(refusal.status, refusal.message)
        }
        let bucket = route.subject ?? ""
        guard let contents = state.storage[bucket] else { return Self.googleError(404, "The specified bucket does not exist.") }
        let query = Dictionary(request.query, uniquingKeysWith: { first, _ in first })
        switch (request.method, route.remainder) {
        case ("GET", ""):
            let size = Int(query["maxResults"] ?? "") ?? 1000
            let (page, more) = contents.list(prefix: query["prefix"] ?? "", after: query["pageToken"].flatMap(Self.decodePageToken),
                                             limit: max(1, min(size, 1000)))
            var members: [(String, SJSON)] = [("kind", .string("storage#objects"))]
            members.append(("items", .array(page.map { name in
                let metadata = contents.objects[name]!
                return .object([("kind", .string("storage#object")), ("name", .string(name)), ("bucket", .string(bucket)),
                                ("size", .string(metadata["size"]?.int.map { String($0) } ?? "0")),
                                ("contentType", metadata["contentType"] ?? .string("application/octet-stream"))])
            })))
            Self.appendPageToken(&members, page, more: more)
            return .json(200, .object(members))
        case ("DELETE", let name) where !name.isEmpty:
            let existed = state.storage[bucket]!.remove(name)
            Self.record(&state, service: "storage", action: "delete-object", target: "\(bucket)/\(name)", changed: existed)
            return existed ? .empty(204) : Self.googleError(404, "No such object: \(bucket)/\(name)")
        default:
            return Self.googleError(400, "\(request.method) \(route.name) is not part of the sandbox's Storage subset.")
        }
    }

    // MARK: - Paging

    /// An opaque page token: the last id of the page, in hex.
    static func pageToken(_ last: String) -> String {
        last.utf8.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    static func decodePageToken(_ token: String) -> String? {
        let digits = Array(token.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func appendPageToken(_ members: inout [(String, SJSON)], _ page: [String], more: Bool) {
        if more, let last = page.last { members.append(("nextPageToken", .string(pageToken(last)))) }
    }

    static func page(_ ids: [String], after: String?, size: Int) -> ([String], more: Bool) {
        let rest = after.map { last in ids.drop { $0 <= last } } ?? ids[...]
        return (Array(rest.prefix(size)), rest.count > size)
    }
}
