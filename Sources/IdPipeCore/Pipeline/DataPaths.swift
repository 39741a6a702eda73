/// Where an app keeps each user's data, as paths with `{uid}` (the Delete User Data extension's convention).
/// `stages.delete.firestore`, `.realtime_database` and `.storage` in a pipeline file.
public struct FirestorePaths: Sendable, Equatable {
    /// `(default)` or a named database.
    public var database = "(default)"
    public var mode = FirestoreDeleteMode.shallow
    /// Document paths (an even number of segments) or collection paths (odd: the collection is deleted whole).
    public var paths: [String] = []
    public init() {}
}

public enum FirestoreDeleteMode: String, Sendable, Equatable, CaseIterable {
    /// The document only; its subcollections stay.
    case shallow
    /// The document and every subcollection under it, at any depth.
    case recursive
}

public struct DatabasePaths: Sendable, Equatable {
    /// `https://<instance>.firebaseio.com` or `https://<instance>.<region>.firebasedatabase.app`.
    public var url: String
    /// The database instance named by the URL (the emulator's `ns`).
    public var instance: String
    /// Paths from the root, starting with `/`.
    public var paths: [String]
}

public struct StoragePaths: Sendable, Equatable {
    /// `bucket/prefix`: every object whose name starts with the prefix is deleted.
    public var paths: [String]
}

/// A configured path, and what it becomes for one account.
public enum DataPath {
    public static let placeholder = "{uid}"

    /// Why `uid` cannot be put in a path of `kind` (a uid holding `/` would reach outside the user's own data), or nil.
    public static func refusal(uid: String, kind: ActionKind) -> DataPathRefusal? {
        if uid.isEmpty || uid.contains("/") { return DataPathRefusal(reason: "the uid contains '/' or is empty: it cannot name a path") }
        if kind == .deleteDatabase, uid.contains(where: { ".$#[]".contains($0) }) {
            return DataPathRefusal(reason: "the uid contains one of . $ # [ ], which a Realtime Database key cannot hold")
        }
        if kind == .deleteFirestore, uid == "." || uid == ".." || (uid.hasPrefix("__") && uid.hasSuffix("__")) {
            return DataPathRefusal(reason: "the uid is not a valid Firestore document id")
        }
        return nil
    }

    /// The path for `uid`, or why it cannot have one.
    public static func expand(_ template: String, uid: String, kind: ActionKind) -> Result<String, DataPathRefusal> {
        if let refusal = refusal(uid: uid, kind: kind) { return .failure(refusal) }
        return .success(template.replacing(placeholder, with: uid))
    }

    /// Firestore: a path with an odd number of segments is a collection.
    public static func isCollection(_ firestorePath: String) -> Bool {
        firestorePath.split(separator: "/").count % 2 == 1
    }

    /// The instance named by a Realtime Database URL, or nil when it has neither documented form.
    public static func databaseInstance(url: String) -> String? {
        guard url.hasPrefix("https://") else { return nil }
        var host = Substring(url.dropFirst(8))
        while host.hasSuffix("/") { host.removeLast() }
        guard !host.contains("/"), !host.contains(":") else { return nil }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let valid = { (label: String) in !label.isEmpty && label.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } }
        if labels.count == 3, labels[1] == "firebaseio", labels[2] == "com", valid(labels[0]) { return labels[0] }
        if labels.count == 4, labels[2] == "firebasedatabase", labels[3] == "app", valid(labels[0]), valid(labels[1]) { return labels[0] }
        return nil
    }
}

public struct DataPathRefusal: Error, Sendable, Equatable {
    public var reason: String
}
