/// One `accounts:batchCreate` request of apply's import (`stages.import`): a run of whole user objects of the import
/// file, by byte range, and how far it got.
public struct ImportRequest: Sendable, Equatable {
    /// From 1, in file order.
    public var id: Int64
    /// The bytes of its user objects in the import file: from the first's `{` to the last's `}`, the separators between.
    public var start: Int64
    public var end: Int64
    public var users: Int
    /// Planned, sent (its answer not recorded: sent again), or done.
    public var state: ActionState

    public init(id: Int64, start: Int64, end: Int64, users: Int, state: ActionState = .planned) {
        self.id = id
        self.start = start
        self.end = end
        self.users = users
        self.state = state
    }
}

/// An account of the import file that was not imported, and why: the API refused it, or the project has it already.
public struct ImportFailure: Sendable, Equatable {
    /// Its place in the request's users, from 0.
    public var position: Int
    public var uid: String
    public var message: String
    /// Left out because another account of the project has its email, phone number or federated link.
    public var clash: ImportClash?

    public init(position: Int, uid: String, message: String, clash: ImportClash? = nil) {
        self.position = position
        self.uid = uid
        self.message = message
        self.clash = clash
    }
}

/// What an account of the import file shares with another account the project has already: imported, it would be a
/// second account for one address, number or sign-in, which the API's import does not check (PROTOCOLS §2).
public struct ImportClash: Sendable, Equatable {
    /// `email`, `phoneNumber`, or `providerUserInfo (apple.com)`: the field, with the provider of a link.
    public var field: String
    /// The project's account that has it.
    public var projectUid: String

    public init(field: String, projectUid: String) {
        self.field = field
        self.projectUid = projectUid
    }
}

/// Where apply's import stands: what the reports and `status` say of it.
public struct ImportSummary: Sendable, Equatable {
    /// Requests by state: planned, sent (its answer not recorded: sent again by the next apply), done.
    public var requests: [ActionState: Int] = [:]
    /// Accounts in all requests, and in the requests that are done.
    public var users = 0
    public var usersInDoneRequests = 0
    /// Accounts the API refused, one by one (their request done).
    public var refused = 0
    /// The first of them, in file order (at most the report's list limit).
    public var firstRefused: [ImportFailure] = []
    /// Requests sent more than once: their answer was lost to a stop (an import overwrites what it made, with the same).
    public var resentRequests = 0
    /// Accounts left as the project has them, their uid being there already (`stages.import.existing_accounts: keep`),
    /// in the requests that are done; and the first of them, in file order.
    public var keptExisting = 0
    public var firstKept: [ImportFailure] = []
    /// Accounts left out because another account of the project has their email, phone number or federated link
    /// (`existing_accounts: keep`), in the requests that are done, by the field they share (`email`, `phoneNumber`,
    /// `providerUserInfo (apple.com)`); and the first of them, in file order.
    public var clashingByField: [String: Int] = [:]
    public var firstClashing: [ImportFailure] = []
    public var clashing: Int { clashingByField.values.reduce(0, +) }

    public init() {}

    /// Accounts the API took.
    public var imported: Int { usersInDoneRequests - notImported }
    /// Accounts of the done requests that are not in the project as the file has them.
    public var notImported: Int { refused + keptExisting + clashing }
    public var openRequests: Int { requests.open }
    public var totalRequests: Int { requests.values.reduce(0, +) }

    /// What the accounts left out share with the project's, in words: `email`, `phone number or sign-in`.
    public var clashingWhat: String {
        let fields = clashingByField.keys
        let words = [("email", fields.contains("email")), ("phone number", fields.contains("phoneNumber")),
                     ("sign-in", fields.contains { $0.hasPrefix("providerUserInfo") })].filter(\.1).map(\.0)
        guard let last = words.last else { return "email, phone number or sign-in" }
        return words.count == 1 ? last : words.dropLast().joined(separator: ", ") + " or " + last
    }
}
