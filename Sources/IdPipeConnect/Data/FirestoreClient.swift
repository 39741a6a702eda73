import IdPipeCore

/// Cloud Firestore REST v1, the subset a data deletion needs: get a document, list a collection's documents
/// (with the missing ones that still have subcollections), list a document's collection ids, and `commit`
/// deletes in batches of up to 500 writes.
public final class FirestoreClient: Sendable {
    public static let productionBase = "https://firestore.googleapis.com/v1"
    /// Firestore takes at most 500 writes in one commit.
    public static let maxWrites = 500
    static let pageSize = 300

    /// `projects/{p}/databases/{d}/documents`: the prefix of every document name.
    let documentsName: String
    /// `{base}/projects/{p}/databases/{d}/documents`
    let documentsURL: String
    let call: GoogleCall
    let limiter: RateLimiter

    public init(projectId: String, database: String, base: Endpoint, tokens: any AccessTokenSource, channel: ServiceChannel, rate: Double) {
        documentsName = "projects/\(projectId)/databases/\(database)/documents"
        documentsURL = base.url("/projects/\(PathSegment.escape(projectId))/databases/\(PathSegment.escape(database))/documents")
        call = GoogleCall(channel: channel, tokens: tokens)
        limiter = .perSecond(rate, clock: channel.clock)
    }

    // MARK: - Reads

    /// `GET …/documents/{path}?mask.fieldPaths=__name__`: whether the document exists (its fields are not fetched).
    func exists(_ path: String) async throws -> Bool {
        let response = try await call.send("GET", "\(documentsURL)/\(PathSegment.escapePath(path))?mask.fieldPaths=__name__", json: nil,
                                           limiter: limiter, accept: [404], operation: "documents.get")
        return response.status != 404
    }

    /// One page of `GET …/documents/{collection}?showMissing=true`: each document's path and whether it exists
    /// (a missing document has no fields and no createTime, but has subcollections).
    func listDocuments(collection: String, pageToken: String?) async throws -> (documents: [(path: String, exists: Bool)], next: String?) {
        var url = "\(documentsURL)/\(PathSegment.escapePath(collection))?pageSize=\(Self.pageSize)&showMissing=true&mask.fieldPaths=__name__"
        if let pageToken { url += "&pageToken=\(FormBody.escape(pageToken))" }
        let body = try await call.object("GET", url, json: nil, limiter: limiter, operation: "documents.list")
        let documents = try (body["documents"]?.array ?? []).map { document -> (String, Bool) in
            guard let name = document["name"]?.string, let path = relative(name) else {
                throw ConnectorError.badResponse(service: call.channel.service, message: "documents.list: a document without a name under \(documentsName)")
            }
            return (path, document["createTime"]?.string != nil)
        }
        return (documents, GoogleCall.nextPageToken(body))
    }

    /// `POST …/documents[/{path}]:listCollectionIds`, every page: the ids of the collections directly under a document.
    func collectionIds(under document: String) async throws -> [String] {
        let url = "\(documentsURL)/\(PathSegment.escapePath(document)):listCollectionIds"
        var ids: [String] = []
        var token: String?
        repeat {
            var request: [String: JSONValue] = ["pageSize": .int(Int64(Self.pageSize))]
            if let token { request["pageToken"] = .string(token) }
            let body = try await call.object("POST", url, json: .object(request), limiter: limiter, operation: "listCollectionIds",
                                           readOnly: true)
            ids += (body["collectionIds"]?.array ?? []).compactMap(\.string)
            token = GoogleCall.nextPageToken(body)
        } while token != nil
        return ids
    }

    // MARK: - Finding what a path holds

    /// The existing documents a path covers, deepest first: a document (with everything under it when
    /// `recursive`) or a collection (always whole, with its subcollections).
    public func documents(at path: String, recursive: Bool) async throws -> [String] {
        var found: [String] = []
        if DataPath.isCollection(path) {
            try await walkCollection(path, into: &found)
        } else {
            if recursive { try await walkDocument(path, into: &found) }
            if try await exists(path) { found.append(path) }
        }
        return found
    }

    private func walkDocument(_ document: String, into found: inout [String]) async throws {
        for id in try await collectionIds(under: document) {
            try await walkCollection("\(document)/\(id)", into: &found)
        }
    }

    private func walkCollection(_ collection: String, into found: inout [String]) async throws {
        var token: String?
        repeat {
            let page = try await listDocuments(collection: collection, pageToken: token)
            for document in page.documents {
                try await walkDocument(document.path, into: &found)
                if document.exists { found.append(document.path) }
            }
            token = page.next
        } while token != nil
    }

    // MARK: - Deleting

    /// `POST …/documents:commit` with up to 500 deletes. Deleting a document that is already gone succeeds.
    public func delete(_ paths: [String]) async throws {
        precondition((1...Self.maxWrites).contains(paths.count))
        let writes: [JSONValue] = paths.map { .object(["delete": .string("\(documentsName)/\($0)")]) }
        let body = try await call.object("POST", "\(documentsURL):commit", json: ["writes": .array(writes)], limiter: limiter, operation: "commit")
        guard body["writeResults"]?.array?.count == paths.count else {
            throw ConnectorError.badResponse(service: call.channel.service, message: "commit: expected \(paths.count) write results")
        }
    }

    // MARK: - Plumbing

    private func relative(_ name: String) -> String? {
        guard name.hasPrefix(documentsName + "/") else { return nil }
        return String(name.dropFirst(documentsName.count + 1))
    }
}
