/// The configured data paths: what the dry run counted and what apply deleted.
public struct DataSummary: Sendable {
    public struct Kind: Sendable, Equatable {
        public var kind: ActionKind
        /// Path deletions in the plan (one per selected account), whatever their state.
        public var planned: Int
        public var counted: Int
        /// Items (documents, nodes, objects) the dry run found.
        public var wouldDelete: Int
        /// Items apply deleted, over its done actions.
        public var deleted: Int
        public var done: Int
        /// Planned and not counted yet (no credentials to read with, or counting was interrupted).
        public var uncounted: Int
        /// Per `{uid}` template: items found by the dry run, in configuration order of first appearance.
        public var perPath: [PathCount]

        public init(kind: ActionKind, planned: Int, counted: Int, wouldDelete: Int, deleted: Int, done: Int, uncounted: Int, perPath: [PathCount]) {
            self.uncounted = uncounted
            self.kind = kind
            self.planned = planned
            self.counted = counted
            self.wouldDelete = wouldDelete
            self.deleted = deleted
            self.done = done
            self.perPath = perPath
        }

        /// What one item is, for people.
        public var unit: String {
            switch kind {
            case .deleteFirestore: "documents"
            case .deleteDatabase: "nodes"
            default: "objects"
            }
        }
    }

    public struct Largest: Sendable, Equatable {
        public var uid: String
        public var kind: ActionKind
        public var count: Int
        public var detail: String

        public init(uid: String, kind: ActionKind, count: Int, detail: String) {
            self.uid = uid
            self.kind = kind
            self.count = count
            self.detail = detail
        }
    }

    public var kinds: [Kind]
    /// Why counting failed, and for how many actions.
    public var notCounted: [(reason: String, count: Int)]
    /// The accounts with the most data, largest first.
    public var largest: [Largest]
    /// What counting cost each service it read, over every counting process.
    public var traffic: [ServiceTraffic]

    public init(kinds: [Kind], notCounted: [(reason: String, count: Int)], largest: [Largest], traffic: [ServiceTraffic] = []) {
        self.kinds = kinds
        self.notCounted = notCounted
        self.largest = largest
        self.traffic = traffic
    }
}
