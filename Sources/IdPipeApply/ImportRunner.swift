import Foundation
import IdPipeConnect
import IdPipeCore
import IdPipeStore
import Logging

/// Apply's import (`stages.import`): the plan's import file, sent to `accounts:batchCreate` a request at a time.
///
/// The file is split once, at the first apply, into requests of whole user objects (byte ranges, kept in the store),
/// so that a resumed apply sends the same requests. Each is recorded as sent before it goes and as done, with the
/// accounts the API refused, after its answer. A request whose answer was lost (a kill) is sent again: an import
/// with an existing uid overwrites that account with the same values (PROTOCOLS §2), so it makes nothing twice.
/// A refusal of a whole request (a missing or wrong hash parameter, a permission) stops the import with nothing
/// more sent: it would refuse the next ones alike, and after the fix the same command sends it again.
/// With `lookup` (`stages.import.existing_accounts: keep`), a request's accounts are looked up before it is first sent:
/// those the project has already (by uid), and those whose email, phone number or federated link another account of the
/// project has (the import would make a second account for it), are left out of it and recorded, with it marked sent:
/// sent again, it leaves out the same ones (the lookup would find its own accounts then).
public final class ImportRunner: Sendable {
    public enum Outcome: Sendable, Equatable {
        case completed
        case interrupted
        /// Why it stopped: a refusal of a whole request, a service down or misconfigured. Resumable once fixed.
        case stopped(String)
    }

    /// Sends one request's users; returns the refused ones by their index in `users`.
    public typealias Send = @Sendable ([JSONValue]) async throws -> [BatchCreateFailure]
    /// The project's accounts found by these identifiers (any number of them: a request's).
    public typealias Lookup = @Sendable ([AccountIdentifier]) async throws -> [JSONValue]

    let store: StateStore
    let path: String
    let send: Send
    let lookup: Lookup?
    /// Whether an account whose email another account of the project has is left out (not with
    /// `output.allow_duplicate_emails`, for a project that allows several accounts per email).
    let checksEmails: Bool
    let clock: @Sendable () -> Int64

    public init(store: StateStore, importFile path: String, clock: @escaping @Sendable () -> Int64, lookup: Lookup? = nil,
                checksEmails: Bool = true, send: @escaping Send) {
        self.store = store
        self.path = path
        self.send = send
        self.lookup = lookup
        self.checksEmails = checksEmails
        self.clock = clock
    }

    /// Splits the file into requests and records them, unless an earlier apply did; returns them all.
    public static func prepare(store: StateStore, importFile path: String, usersPerRequest: Int) throws -> [ImportRequest] {
        let recorded = try store.importRequests()
        if !recorded.isEmpty { return recorded }
        let requests = try ImportFileSplitter.requests(path: path, usersPerRequest: usersPerRequest)
        try store.planImportRequests(requests)
        return requests
    }

    /// Sends every request not done yet, in file order; `progress(done, total)` in requests after each. `shouldStop` is
    /// asked before each: the request in flight is answered and recorded first.
    public func run(shouldStop: @Sendable () -> Bool, progress: @Sendable (Int, Int) -> Void) async throws -> Outcome {
        let requests = try store.importRequests()
        var done = requests.filter { !$0.state.isOpen }.count
        let file = try ImportFileReader(path: path)
        let open = requests.filter(\.state.isOpen)
        // The next request's lookups, made while this one is sent: at the default paces (a request a second, 20 reads a
        // second), the 10 of a request of 1000 uids take half a second, which the import then does not wait for (the 20
        // or so more for the emails and links of accounts not found by uid make it wait about half a second a request).
        // Its users are kept for it: read twice, the file's JSON cost as much again as the rest of the import.
        var next: (users: [JSONValue], lookup: Task<[ImportFailure], any Error>)?
        defer { next?.lookup.cancel() }
        for (index, request) in open.enumerated() {
            if shouldStop() { return .interrupted }
            let users = try next?.users ?? file.users(of: request)
            let uids = Self.uids(users)
            let named = "request \(request.id) of \(requests.count) (accounts \(Self.range(request, in: requests)))"
            var kept: Set<Int> = []
            if request.state == .planned, let lookup {
                let leftOut: [ImportFailure]
                do {
                    leftOut = try await (next?.lookup ?? lookUp(users, with: lookup)).value
                } catch let error as ConnectorError {
                    return .stopped("accounts:lookup, before \(named): \(error)")
                }
                kept = Set(leftOut.map(\.position))
                try await store.markImportSent(request.id, at: clock(), kept: leftOut)
            } else {
                // Sent before: it leaves out what it left out then.
                kept = try store.keptExisting(request: request.id)
                try await store.markImportSent(request.id, at: clock())
            }
            next = nil
            if let lookup, index + 1 < open.count, open[index + 1].state == .planned {
                let following = try file.users(of: open[index + 1])
                next = (following, lookUp(following, with: lookup))
            }
            // Positions in the request of the accounts sent.
            let sent = users.indices.filter { !kept.contains($0) }
            var refused: [BatchCreateFailure] = []
            if !sent.isEmpty {
                do {
                    refused = try await send(sent.map { users[$0] })
                } catch let error as ConnectorError {
                    return .stopped("accounts:batchCreate, \(named): \(error)")
                }
            }
            let failures = refused.map { ImportFailure(position: sent[$0.index], uid: uids[sent[$0.index]], message: $0.message) }
            try await store.finishImport(request.id, refused: failures, at: clock())
            done += 1
            progress(done, requests.count)
        }
        return .completed
    }

    private func lookUp(_ users: [JSONValue], with lookup: @escaping Lookup) -> Task<[ImportFailure], any Error> {
        let emails = checksEmails
        return Task { try await ProjectAccounts.leftOut(users, emails: emails, lookup: lookup) }
    }

    static func uids(_ users: [JSONValue]) -> [String] {
        users.map { $0["localId"]?.string ?? "" }
    }

    /// The accounts of a request by their place in the file, from 1 (`1001–2000`).
    static func range(_ request: ImportRequest, in requests: [ImportRequest]) -> String {
        let before = requests.prefix { $0.id < request.id }.reduce(0) { $0 + $1.users }
        return "\(before + 1)–\(before + request.users)"
    }
}

/// Reads a request's user objects back from the import file, as `accounts:batchCreate` takes them.
struct ImportFileReader {
    let path: String
    let handle: FileHandle

    init(path: String) throws {
        self.path = path
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ImportFileError(path: path, offset: nil, message: "cannot open it (it was there when the plan ended)")
        }
        self.handle = handle
    }

    func users(of request: ImportRequest) throws -> [JSONValue] {
        try handle.seek(toOffset: UInt64(request.start))
        let data = try handle.read(upToCount: Int(request.end - request.start)) ?? Data()
        guard data.count == request.end - request.start,
              case .array(let users)? = JSONValue.decode([UInt8]("[".utf8) + [UInt8](data) + [UInt8]("]".utf8)),
              users.count == request.users else {
            throw ImportFileError(path: path, offset: request.start, message: "request \(request.id)'s \(request.users) accounts could not be read back")
        }
        return users.map(Self.asUploaded)
    }

    /// A user object of the file as the API takes it: the export's `lastSignedInAt` is `lastLoginAt` there (the API
    /// refuses the export's name, `Unknown name "lastSignedInAt"`); every other field is the API's already.
    static func asUploaded(_ user: JSONValue) -> JSONValue {
        guard case .object(var fields) = user, let last = fields.removeValue(forKey: "lastSignedInAt") else { return user }
        fields["lastLoginAt"] = last
        return .object(fields)
    }
}

public struct ImportFileError: Error, CustomStringConvertible {
    public var path: String
    public var offset: Int64?
    public var message: String
    public var description: String { "\(path)\(offset.map { " (byte \($0))" } ?? ""): \(message)" }
}

/// Splits an import file (`{"users": [ {…}, {…} ]}`) into requests of whole user objects, by byte ranges, reading it in
/// blocks: a file of millions of accounts is never held whole.
enum ImportFileSplitter {
    static func requests(path: String, usersPerRequest: Int) throws -> [ImportRequest] {
        precondition(usersPerRequest >= 1)
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ImportFileError(path: path, offset: nil, message: "cannot open it") }
        defer { try? handle.close() }
        var scanner = Scanner()
        var requests: [ImportRequest] = []
        var open: (start: Int64, end: Int64, users: Int)?
        var offset: Int64 = 0
        while let block = try handle.read(upToCount: 4 << 20), !block.isEmpty {
            block.withUnsafeBytes { bytes in
                for (index, byte) in bytes.enumerated() {
                    let at = offset + Int64(index)
                    switch scanner.feed(byte) {
                    case .none: break
                    case .userStart:
                        if open == nil { open = (at, at, 0) }
                    case .userEnd:
                        open!.end = at + 1
                        open!.users += 1
                        if open!.users == usersPerRequest {
                            requests.append(ImportRequest(id: Int64(requests.count + 1), start: open!.start, end: open!.end, users: open!.users))
                            open = nil
                        }
                    }
                }
            }
            offset += Int64(block.count)
        }
        if let open { requests.append(ImportRequest(id: Int64(requests.count + 1), start: open.start, end: open.end, users: open.users)) }
        if let problem = scanner.problem { throw ImportFileError(path: path, offset: problem.offset, message: problem.message) }
        guard scanner.finished else {
            throw ImportFileError(path: path, offset: offset, message: "ends before its users list does (not the file the plan wrote)")
        }
        return requests
    }

    /// The file's structure, a byte at a time: strings (with escapes) skipped, depth counted, the users list found.
    struct Scanner {
        enum Event { case none, userStart, userEnd }

        var depth = 0
        var inString = false
        var escaped = false
        /// The text of the last key read at depth 1, to find `users`.
        var key: [UInt8] = []
        var readingKey = false
        /// Inside the users list (its elements at depth 2).
        var inUsers = false
        var finished = false
        var problem: (offset: Int64, message: String)?
        var position: Int64 = 0

        mutating func feed(_ byte: UInt8) -> Event {
            defer { position += 1 }
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    readingKey = false
                } else if readingKey { key.append(byte) }
                return .none
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                readingKey = depth == 1
                if readingKey { key = [] }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                if depth == 1, byte == UInt8(ascii: "["), key == Array("users".utf8) { inUsers = true }
                depth += 1
                if depth == 3, inUsers {
                    guard byte == UInt8(ascii: "{") else { return fail("an element of 'users' is not an account object") }
                    return .userStart
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 2, inUsers, byte == UInt8(ascii: "}") { return .userEnd }
                if depth == 1, inUsers { inUsers = false }
                if depth == 0 { finished = true }
            default:
                if depth == 2, inUsers, !(byte == UInt8(ascii: ",") || byte == 0x20 || byte == 0x0a || byte == 0x0d || byte == 0x09) {
                    return fail("an element of 'users' is not an account object")
                }
            }
            return .none
        }

        private mutating func fail(_ message: String) -> Event {
            if problem == nil { problem = (position, message) }
            return .none
        }
    }
}
