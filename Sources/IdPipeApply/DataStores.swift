import IdPipeConnect
import IdPipeCore

/// The configured Firestore, Realtime Database and Cloud Storage paths of `stages.delete`, on their clients:
/// counted by the dry run and deleted by apply, the same way, so the two agree on what a path holds.
public final class DataStores: Sendable {
    let config: DeleteConfig?
    let firestore: FirestoreClient?
    let database: DatabaseClient?
    let storage: StorageClient?

    public init(config: DeleteConfig?, firestore: FirestoreClient?, database: DatabaseClient?, storage: StorageClient?) {
        self.config = config
        self.firestore = firestore
        self.database = database
        self.storage = storage
    }

    /// The kinds of path deletion configured.
    public var kinds: [ActionKind] { config?.pathKinds ?? [] }

    /// The pipeline keys a path deletion needs, or nil when its client exists.
    func missingService(for kind: ActionKind) -> String? {
        switch kind {
        case .deleteFirestore: firestore == nil ? "stages.delete.firestore and services.google" : nil
        case .deleteDatabase: database == nil ? "stages.delete.realtime_database and services.google" : nil
        case .deleteStorage: storage == nil ? "stages.delete.storage and services.google" : nil
        default: nil
        }
    }

    public func count(_ kind: ActionKind, uid: String) async throws -> [PathCount] {
        try await eachPath(kind, uid: uid) { path in
            switch kind {
            case .deleteFirestore: return try await self.firestoreDocuments(path).count
            case .deleteDatabase: return try await self.client(self.database, kind).nodeCount(path)
            default:
                let (bucket, prefix) = Self.bucketAndPrefix(path)
                return try await self.client(self.storage, kind).objects(bucket: bucket, prefix: prefix).count
            }
        }
    }

    public func delete(_ kind: ActionKind, uid: String) async throws -> [PathCount] {
        try await eachPath(kind, uid: uid) { path in
            switch kind {
            case .deleteFirestore:
                let documents = try await self.firestoreDocuments(path)
                let client = try self.client(self.firestore, kind)
                var start = 0
                while start < documents.count {
                    let end = min(start + FirestoreClient.maxWrites, documents.count)
                    try await client.delete(Array(documents[start..<end]))
                    start = end
                }
                return documents.count
            case .deleteDatabase:
                let client = try self.client(self.database, kind)
                let nodes = try await client.nodeCount(path)
                if nodes > 0 { try await client.delete(path) }
                return nodes
            default:
                let (bucket, prefix) = Self.bucketAndPrefix(path)
                let client = try self.client(self.storage, kind)
                let names = try await client.objects(bucket: bucket, prefix: prefix)
                for name in names { try await client.delete(bucket: bucket, object: name) }
                return names.count
            }
        }
    }

    /// Runs `body` on each configured path of `kind`, expanded for `uid`, in configuration order.
    private func eachPath(_ kind: ActionKind, uid: String, _ body: (String) async throws -> Int) async throws -> [PathCount] {
        guard let config else { throw ConnectorError.configuration(service: "idpipe", message: "stages.delete is not configured") }
        var counts: [PathCount] = []
        for template in config.paths(kind) {
            switch DataPath.expand(template, uid: uid, kind: kind) {
            case .failure(let refusal):
                throw ConnectorError.rejected(service: kind.service, code: "invalid-uid", message: refusal.reason)
            case .success(let path):
                counts.append(PathCount(template: template, count: try await body(path)))
            }
        }
        return counts
    }

    private func firestoreDocuments(_ path: String) async throws -> [String] {
        try await client(firestore, .deleteFirestore).documents(at: path, recursive: config?.firestore?.mode == .recursive)
    }

    private func client<T>(_ client: T?, _ kind: ActionKind) throws -> T {
        try required(client, for: kind, missing: missingService(for: kind))
    }

    static func bucketAndPrefix(_ path: String) -> (String, String) {
        let slash = path.firstIndex(of: "/")!
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }
}

/// The client an action of `kind` needs; without one, a configuration error naming the pipeline keys to add
/// (the same words for every kind of action).
func required<T>(_ client: T?, for kind: ActionKind, missing: String?) throws -> T {
    guard let client else {
        throw ConnectorError.configuration(service: "idpipe", message: "\(missing ?? kind.rawValue) must be configured for \(kind.rawValue) actions")
    }
    return client
}
