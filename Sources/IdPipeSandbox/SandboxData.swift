/// The sandbox's data stores, loaded from a fixture and dumped back in the same form:
/// `{"firestore": {db: {docPath: fields}}, "database": {instance: tree}, "storage": {bucket: {name: {size, contentType}}}}`.
final class FirestoreDocument {
    /// nil: the document does not exist (it may still have subcollections: a "missing" document).
    var fields: SJSON?
    var collections: [String: [String: FirestoreDocument]] = [:]

    /// The segments of a document path (collection/id/…): non-empty, an even number of them; nil for anything else.
    static func segments(_ path: Substring) -> [String]? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !segments.isEmpty, segments.count % 2 == 0, !segments.contains(where: \.isEmpty) else { return nil }
        return segments
    }

    /// It exists or holds an existing document somewhere below it.
    var hasData: Bool {
        fields != nil || collections.values.contains { $0.values.contains { $0.hasData } }
    }

    func collectionIds() -> [String] {
        collections.filter { $0.value.values.contains { $0.hasData } }.keys.sorted()
    }

    /// The document at `segments` (collection, id, collection, id…), made on the way when `create`.
    func document(_ segments: ArraySlice<String>, create: Bool) -> FirestoreDocument? {
        guard segments.count >= 2 else { return segments.isEmpty ? self : nil }
        let collection = segments[segments.startIndex], id = segments[segments.startIndex + 1]
        var child = collections[collection]?[id]
        if child == nil, create {
            child = FirestoreDocument()
            collections[collection, default: [:]][id] = child
        }
        return child?.document(segments.dropFirst(2), create: create)
    }

    /// Drops the documents along `segments` that neither exist nor hold anything any more, from the deepest up.
    func prune(_ segments: ArraySlice<String>) {
        guard segments.count >= 2 else { return }
        let collection = segments[segments.startIndex], id = segments[segments.startIndex + 1]
        guard let child = collections[collection]?[id] else { return }
        child.prune(segments.dropFirst(2))
        if child.fields == nil, child.collections.isEmpty {
            collections[collection]?[id] = nil
            if collections[collection]?.isEmpty == true { collections[collection] = nil }
        }
    }

    func dump(prefix: String, into out: inout [(String, SJSON)]) {
        for collection in collections.keys.sorted() {
            for id in collections[collection]!.keys.sorted() {
                let document = collections[collection]![id]!
                let path = prefix.isEmpty ? "\(collection)/\(id)" : "\(prefix)/\(collection)/\(id)"
                if let fields = document.fields { out.append((path, fields)) }
                document.dump(prefix: path, into: &out)
            }
        }
    }
}

/// A Realtime Database node: a leaf value, or children.
final class DatabaseNode {
    var leaf: SJSON?
    var children: [String: DatabaseNode] = [:]

    init(_ value: SJSON) {
        if let members = value.members {
            for (key, child) in members where child != .null { children[key] = DatabaseNode(child) }
        } else if let items = value.array {
            for (index, child) in items.enumerated() where child != .null { children[String(index)] = DatabaseNode(child) }
        } else {
            leaf = value
        }
    }

    var isEmpty: Bool { leaf == nil && children.isEmpty }

    /// The node itself and every node under it.
    var count: Int { isEmpty ? 0 : 1 + children.values.reduce(0) { $0 + $1.count } }

    var json: SJSON {
        if let leaf { return leaf }
        if children.isEmpty { return .null }
        return .object(children.keys.sorted().map { ($0, children[$0]!.json) })
    }

    func node(_ keys: ArraySlice<String>) -> DatabaseNode? {
        guard let first = keys.first else { return self }
        return children[first]?.node(keys.dropFirst())
    }

    /// Removes the node at `keys` and returns how many nodes went; parents left empty go too, as in the database.
    func remove(_ keys: ArraySlice<String>) -> Int {
        guard let first = keys.first, let child = children[first] else { return 0 }
        if keys.count == 1 {
            children[first] = nil
            return child.count
        }
        let removed = child.remove(keys.dropFirst())
        if child.isEmpty { children[first] = nil }
        return removed
    }
}

/// One bucket's objects, by name, with the names kept sorted for prefix listing.
struct StorageBucket {
    var objects: [String: SJSON] = [:]
    var names: [String] = []

    mutating func insert(_ name: String, _ metadata: SJSON) {
        if objects.updateValue(metadata, forKey: name) == nil {
            names.insert(name, at: lowerBound(name))
        }
    }

    mutating func remove(_ name: String) -> Bool {
        guard objects.removeValue(forKey: name) != nil else { return false }
        names.remove(at: lowerBound(name))
        return true
    }

    /// Up to `limit` names that start with `prefix`, after `start`; and whether more follow.
    func list(prefix: String, after start: String?, limit: Int) -> ([String], more: Bool) {
        var index = lowerBound(max(prefix, start.map { $0 + "\u{0}" } ?? prefix))
        var page: [String] = []
        while index < names.count, names[index].hasPrefix(prefix) {
            if page.count == limit { return (page, true) }
            page.append(names[index])
            index += 1
        }
        return (page, false)
    }

    private func lowerBound(_ name: String) -> Int {
        var low = 0, high = names.count
        while low < high {
            let middle = (low + high) / 2
            if names[middle] < name { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension SandboxService {
    /// Loads a data fixture (see the file's top); returns documents, database nodes and objects loaded.
    @discardableResult
    public func loadData(json bytes: [UInt8], file: String) throws -> (documents: Int, nodes: Int, objects: Int) {
        let document: SJSON
        do { document = try SJSON.parse(bytes) } catch { throw SandboxError("\(file): not JSON: \(error)") }
        return try state.withLock { state in
            var counts = (documents: 0, nodes: 0, objects: 0)
            for (database, documents) in document["firestore"]?.members ?? [] {
                let root = state.firestore[database] ?? FirestoreDocument()
                for (path, fields) in documents.members ?? [] {
                    guard let segments = FirestoreDocument.segments(path[...]), fields.members != nil else {
                        throw SandboxError("\(file): firestore.\(database): '\(path)' is not a document path with an object of fields")
                    }
                    root.document(segments[...], create: true)!.fields = fields
                    counts.documents += 1
                }
                state.firestore[database] = root
            }
            for (instance, tree) in document["database"]?.members ?? [] {
                let root = DatabaseNode(tree)
                state.database[instance] = root
                counts.nodes += root.count
            }
            for (bucket, objects) in document["storage"]?.members ?? [] {
                var contents = state.storage[bucket] ?? StorageBucket()
                for (name, metadata) in objects.members ?? [] {
                    contents.insert(name, metadata)
                    counts.objects += 1
                }
                state.storage[bucket] = contents
            }
            return counts
        }
    }

    /// Everything the data stores hold now, in the fixture's form (keys sorted): what tests compare.
    func dataDump() -> SJSON {
        state.withLock { state in
            let firestore = state.firestore.keys.sorted().map { database -> (String, SJSON) in
                var documents: [(String, SJSON)] = []
                state.firestore[database]!.dump(prefix: "", into: &documents)
                return (database, .object(documents))
            }
            let database = state.database.keys.sorted().map { ($0, state.database[$0]!.json) }
            let storage = state.storage.keys.sorted().map { bucket -> (String, SJSON) in
                let contents = state.storage[bucket]!
                return (bucket, .object(contents.names.map { ($0, contents.objects[$0]!) }))
            }
            return .object([("firestore", .object(firestore)), ("database", .object(database)), ("storage", .object(storage))])
        }
    }
}
