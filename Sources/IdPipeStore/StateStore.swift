import Foundation
import GRDB
import IdPipeCore
import Logging
import Synchronization

/// The SQLite state store of one run (WAL). The only owner of the database; schema only through migrations.
public final class StateStore: PlanStore, @unchecked Sendable {
    public let path: String
    let queue: DatabaseQueue
    /// The store's file, for the descriptors `syncWhileOpen` keeps (nil in memory).
    private let file: OpenStoreFiles.Key?

    /// Opens (or creates) the store. Each checkpoint syncs its files (`synchronous = NORMAL`): a power loss keeps it
    /// whole. A plan then defers the syncing (`deferSyncing`). A store whose plan wrote without syncing and which the
    /// system's restart may have cut short is refused (`StoreError.unsyncedBeforeRestart`): `discardUnsyncedPlan`.
    public init(path: String) throws {
        self.path = path
        try Self.refuseIfNotADatabase(path)
        try UnsyncedMarker.refuseIfLeftBeforeRestart(statePath: path)
        // The store holds personal data unmasked: a new one is readable by its owner only (SQLite gives its WAL the
        // same mode), where it was created as the umask let it (0644, for every user of the machine).
        let created = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if created >= 0 { close(created) }
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        configuration.busyMode = .timeout(5)
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            file = OpenStoreFiles.open(path)
            try queue.read { db in try Self.refuseForeign(db, path: path) }
            _ = try queue.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
            try Self.migrator.migrate(queue)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.cannotOpen(path: path, underlying: "\(error)")
        }
    }

    deinit {
        // The connection first, then (when no other store of this process has the file open) the descriptors kept for
        // syncing: closed before it, they would drop its locks while it closes.
        try? queue.close()
        if let file { OpenStoreFiles.release(file) }
    }

    /// Throws `StoreError.notADatabase` when `statePath` is a file with bytes that do not start as an SQLite database
    /// does (a missing or empty file is a store to make): before the lock beside it is made, and before SQLite opens it
    /// (whose "file is not a database - while executing `PRAGMA synchronous = NORMAL`" named neither file nor mistake).
    static func refuseIfNotADatabase(_ statePath: String) throws {
        // Only a file: a pipe or a terminal given as the store is SQLite's to refuse, not a read that waits. And not one
        // this process has a store open on, which is a database: a descriptor opened and closed on it here would drop
        // that store's locks (`OpenStoreFiles`), and another process could then take the WAL away from under it.
        var info = stat()
        guard stat(statePath, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              !OpenStoreFiles.isOpen(OpenStoreFiles.Key(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))) else { return }
        let fd = open(statePath, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 16)
        let count = read(fd, &header, 16)
        if count > 0 && header != Array("SQLite format 3\0".utf8) { throw StoreError.notADatabase(path: statePath) }
    }

    /// A database with tables is a state store only if its migrations include idpipe's first: another program's
    /// database given by mistake is left as it was (no journal mode, no tables added).
    private static func refuseForeign(_ db: Database, path: String) throws {
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        guard !tables.isEmpty else { return }
        // Killed while it was created: the migrations' table made, no migration committed yet. A new store still.
        if tables == ["grdb_migrations"], try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM grdb_migrations") == 0 { return }
        if tables.contains("grdb_migrations"),
           try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM grdb_migrations WHERE identifier = 'v1-plan')") == true { return }
        throw StoreError.notAStateStore(path: path, tables: tables)
    }

    /// From now on the operating system writes the store's files when it will (`synchronous = OFF`), for a plan whose
    /// store is new or not finished: the syncs stalled its writer and wrote the store to the disk during the run (5 %
    /// of a 1M-account plan's time, up to 17 % when the disk was busy). A process killed at any moment still loses
    /// nothing; a power loss or a crash of the system can, and the marker written first (`UnsyncedMarker`) tells the
    /// next command so. The finished plan ends with `syncDeferred`; apply starts with `makeDurable`.
    public func deferSyncing() throws {
        guard path != ":memory:" else { return }
        // Without a boot to compare with, a restart could not be told: the store stays synced.
        guard let marking = UnsyncedMarker.current(statePath: path) else { return }
        // Written again even when it says the same: a process killed before it synced its folder left it in place but
        // perhaps not on the disk.
        try UnsyncedMarker.write(statePath: path, marking: marking)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
    }

    /// Whether a plan wrote the store at `path` without syncing it and has not reached its end (where it syncs): it
    /// is going on, or it was killed before its end, perhaps after it was recorded as finished.
    public static func hasUnsyncedWrites(at path: String) -> Bool {
        UnsyncedMarker.read(statePath: path) != nil
    }

    /// Ends what `deferSyncing` began, once the plan is whole: the store's files go to the disk (about 50 ms for a
    /// 1M-account plan's store), then the marker goes. A finished plan, which a reviewer reads and apply may carry out
    /// days later, so survives a restart of the system, and a plan made on one machine can be applied on another.
    public func syncDeferred() throws {
        guard path != ":memory:", UnsyncedMarker.read(statePath: path) != nil else { return }
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        try syncToDisk()
    }

    /// A checkpoint (under NORMAL it syncs the WAL, then the database once the WAL is copied into it), the database's
    /// pages no checkpoint synced, the WAL when a reader kept the checkpoint from emptying it, then the marker's removal
    /// and the folder (the file's entry: the plan created it).
    private func syncToDisk() throws {
        try queue.writeWithoutTransaction { db in _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        guard path != ":memory:" else { return }
        let wal = Self.walFile(at: path)
        for file in [path] + (access(wal, F_OK) == 0 ? [wal] : []) { try syncWhileOpen(file) }
        try UnsyncedMarker.remove(statePath: path)
        try UnsyncedMarker.sync(folder(of: path))
    }

    /// `fsync` of a file SQLite holds open, through a descriptor kept open while any store of this process has the
    /// file open (`OpenStoreFiles`). Closing any descriptor of a file drops every POSIX lock the process holds on it,
    /// SQLite's too: after apply synced its store through a descriptor it closed, a `status`, `report` or refused
    /// `resume` run meanwhile found the store unlocked, took itself for its last user and removed the WAL and shared
    /// memory as it closed. Apply went on writing into the removed files, and a resume after a kill sent done actions
    /// again.
    private func syncWhileOpen(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StoreError.cannotOpen(path: path, underlying: String(cString: strerror(errno))) }
        if let file { OpenStoreFiles.keep(descriptor, for: file) } else { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw StoreError.cannotOpen(path: path, underlying: "fsync: \(String(cString: strerror(errno)))") }
    }

    /// Removes the files of a store that `init` refuses as cut short by a restart of the system (the store, its WAL
    /// and shared memory, then the marker), so that the plan is made again from the start: nothing was applied from it.
    /// False when the store is not such a one (it is left as it is).
    public static func discardUnsyncedPlan(at path: String) throws -> Bool {
        guard UnsyncedMarker.leftBeforeRestart(statePath: path) else { return false }
        // Without this boot's id nothing says a restart came between: refused, not removed.
        guard UnsyncedMarker.currentBoot() != nil else { throw StoreError.unsyncedBeforeRestart(path: path) }
        for file in databaseFiles(at: path) where unlink(file) != 0 && errno != ENOENT {
            throw StoreError.cannotOpen(path: file, underlying: "cannot remove it: \(String(cString: strerror(errno)))")
        }
        // The store's removal on the disk before the marker's: never a store left without its marker.
        try UnsyncedMarker.sync(folder(of: path))
        try UnsyncedMarker.remove(statePath: path)
        try UnsyncedMarker.sync(folder(of: path))
        return true
    }

    /// The store's database at `path`: the file, SQLite's WAL and its shared memory.
    public static func databaseFiles(at path: String) -> [String] { [path, walFile(at: path), path + "-shm"] }
    static func walFile(at path: String) -> String { path + "-wal" }

    /// Every file a store at `path` may have beside its database: the lock, the marker of unsynced writes and its
    /// staged copy. What no input may be.
    public static func files(at path: String) -> [String] {
        databaseFiles(at: path) + [StateLock.path(for: path), UnsyncedMarker.path(for: path), UnsyncedMarker.stagedPath(for: path)]
    }

    /// The status of the run recorded at `path`, read without the checks of `init` (nil when it cannot be read).
    static func recordedStatus(at path: String) -> RunStatus? {
        (try? StateStore(readingFrom: path, unlessLeftBeforeRestart: false).loadRun())?.status
    }

    /// Checks the store and syncs its files to the disk, before apply sends anything on its account: a damaged store
    /// is refused here rather than acted on, and any marker of unsynced writes (`deferSyncing`) goes.
    public func makeDurable() throws {
        let problems: [String]
        do {
            problems = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
        } catch let error as DatabaseError where [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode) {
            // Some damage stops the check itself.
            problems = [error.message ?? "\(error)"]
        }
        guard problems == ["ok"] else {
            throw StoreError.corrupt("\(path): " + problems.prefix(3).joined(separator: "; ") + "; a failing disk, or another program "
                + "writing to the file, can do this: plan again into a new state store")
        }
        try syncToDisk()
        // From here on its rows record what is sent to remote services: each commit is synced (`FULL`; `NORMAL` would
        // let a power loss take back the last ones, and a done action be sent again).
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
    }

    /// Another connection to an existing store, for reading only (the reports read on several at once: WAL lets them).
    public convenience init(readingFrom path: String) throws {
        try self.init(readingFrom: path, unlessLeftBeforeRestart: true)
    }

    /// `refusing`: as `init(path:)`, a store a restart of the system may have cut short.
    private init(readingFrom path: String, unlessLeftBeforeRestart refusing: Bool) throws {
        self.path = path
        try Self.refuseIfNotADatabase(path)
        if refusing { try UnsyncedMarker.refuseIfLeftBeforeRestart(statePath: path) }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            file = OpenStoreFiles.open(path)
        } catch {
            throw StoreError.cannotOpen(path: path, underlying: "\(error)")
        }
    }

    /// An in-memory store, for tests.
    public init() throws {
        path = ":memory:"
        file = nil
        queue = try DatabaseQueue()
        try Self.migrator.migrate(queue)
    }

    public func loadRun() throws -> RunRecord? {
        try queue.read { db in
            guard let json = try String.fetchOne(db, sql: "SELECT record FROM run WHERE id = 1") else { return nil }
            return try JSONCoding.decode(RunRecord.self, json)
        }
    }

    public func saveRun(_ run: RunRecord) throws {
        try queue.write { db in
            try db.execute(sql: "INSERT INTO run (id, record) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET record = excluded.record",
                           arguments: [try JSONCoding.encode(run)])
        }
    }

    public func loadCheckpoint() throws -> PlanCheckpoint? {
        try queue.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT input, input_prefix_sha256, tally, next_sequence, import_length FROM checkpoint WHERE id = 1") else { return nil }
            return PlanCheckpoint(
                input: try JSONCoding.decode(InputCheckpoint.self, row["input"]),
                inputPrefixSHA256: row["input_prefix_sha256"],
                tally: try JSONCoding.decode(Tally.self, row["tally"]),
                nextSequence: row["next_sequence"], importFileLength: row["import_length"])
        }
    }

    public func seenIdCount() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT coalesce(sum(length(hashes)), 0) / 8 FROM seen_ids") ?? 0 }
    }

    public func quarantinedIds() throws -> Set<String> {
        try queue.read { db in
            Set(try String.fetchAll(db, sql: "SELECT DISTINCT uid FROM quarantine WHERE uid IS NOT NULL AND NOT (field = 'localId' AND reason = ?)",
                                    arguments: [PlanRunner.repeatedIdReason]))
        }
    }

    public func plannedDeletionsOfRepeatedIds() throws -> Int {
        let deletions = ActionKind.allCases.filter(\.isDeletion).map { "'\($0.rawValue)'" }.joined(separator: ", ")
        return try queue.read { db in
            // Most plans quarantine no repeated id: then the actions are not looked at.
            let repeated = "SELECT uid FROM quarantine WHERE field = 'localId' AND reason = ?"
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (\(repeated))", arguments: [PlanRunner.repeatedIdReason]) == true else { return 0 }
            return try Int.fetchOne(db, sql: """
                SELECT count(DISTINCT uid) FROM action WHERE state = 'planned' AND kind IN (\(deletions)) AND uid IN (\(repeated))
                """, arguments: [PlanRunner.repeatedIdReason]) ?? 0
        }
    }

    /// One batch's blob at a time: a resumed 10M-account plan does not hold its 80 MB of hashes at once.
    public func forEachSeenIdHashes(_ body: ([UInt64]) throws -> Void) throws {
        try forEachHashBlob(in: "seen_ids", body)
    }

    public func forEachImportKeyHashes(_ body: ([UInt64]) throws -> Void) throws {
        try forEachHashBlob(in: "import_keys", body)
    }

    /// The hashes of a table of one blob per batch (`seen_ids`, `import_keys`), batch by batch.
    private func forEachHashBlob(in table: String, _ body: ([UInt64]) throws -> Void) throws {
        try queue.read { db in
            let blobs = try Data.fetchCursor(db, sql: "SELECT hashes FROM \(table) ORDER BY batch")
            while let blob = try blobs.next() { try body(IdHashes.decode(blob)) }
        }
    }

    /// Writes one batch and its checkpoint in one transaction: after a crash the store holds all of it or none.
    public func commit(_ batch: consuming PlanBatch) throws {
        var accounts: [KeptAccount] = []
        swap(&accounts, &batch.accounts)
        try queue.write { db in
            var accountInsert = try RawInsert(db, sql: """
                INSERT INTO account (seq, uid, file, line, relay, consent_review, selection, selection_detail, name_outcome, email, display_name, phone, providers, deletion_request, repairs)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            var actionInsert = try RawInsert(db, sql: """
                INSERT INTO action (seq, uid, kind, step, state, detail, reason, value, attempts, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0)
                """)
            // Each account moved out and read as a value of its own: read where it lay in the array (through its
            // subscript, or a pointer), each was copied (a retain and a release of every string in it).
            for index in accounts.indices {
                let account = accounts[index].take()
                AccountRow.bind(account.row, to: &accountInsert)
                try accountInsert.run()
                // In step order: with the batches written in sequence order, the table's row ids then follow
                // (seq, step), and the reports read the actions in that order without sorting them.
                for action in account.actions.indices {
                    actionInsert.bind(account.actions[action].sequence)
                    actionInsert.bind(account.actions[action].uid)
                    actionInsert.bind(account.actions[action].kind)
                    actionInsert.bind(account.steps[action])
                    actionInsert.bind(account.actions[action].state)
                    actionInsert.bind(account.actions[action].detail)
                    actionInsert.bind(account.actions[action].reason)
                    actionInsert.bind(account.actions[action].value)
                    try actionInsert.run()
                }
            }
            let quarantineInsert = try db.cachedStatement(sql: "INSERT INTO quarantine (seq, file, line, uid, field, reason, other_issues) VALUES (?, ?, ?, ?, ?, ?, ?)")
            for (sequence, entry) in batch.quarantine {
                let others = entry.otherIssues.isEmpty ? nil : try JSONCoding.encode(entry.otherIssues.map { [$0.field, $0.reason] })
                try quarantineInsert.execute(arguments: [sequence, entry.position.file, entry.position.line, entry.localId, entry.field, entry.reason, others])
            }
            if !batch.newIdHashes.isEmpty {
                try db.execute(sql: "INSERT INTO seen_ids (hashes) VALUES (?)", arguments: [IdHashes.encode(batch.newIdHashes)])
            }
            if !batch.newImportKeyHashes.isEmpty {
                try db.execute(sql: "INSERT INTO import_keys (hashes) VALUES (?)", arguments: [IdHashes.encode(batch.newImportKeyHashes)])
            }
            let checkpoint = batch.checkpoint
            try db.execute(sql: """
                INSERT INTO checkpoint (id, input, input_prefix_sha256, tally, next_sequence, import_length) VALUES (1, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET input = excluded.input, input_prefix_sha256 = excluded.input_prefix_sha256,
                  tally = excluded.tally, next_sequence = excluded.next_sequence, import_length = excluded.import_length
                """, arguments: [try JSONCoding.encode(checkpoint.input), checkpoint.inputPrefixSHA256, try JSONCoding.encode(checkpoint.tally),
                                 checkpoint.nextSequence, checkpoint.importFileLength])
        }
    }
}

public enum StoreError: Error, CustomStringConvertible {
    case cannotOpen(path: String, underlying: String)
    case corrupt(String)
    case locked(path: String, holder: String)
    case notAStateStore(path: String, tables: [String])
    /// A file that is no SQLite database (an export, a report) given as the state store.
    case notADatabase(path: String)
    case unsyncedBeforeRestart(path: String)

    public var description: String {
        switch self {
        case .notAStateStore(let path, let tables):
            "\(path) is an SQLite database but not an idpipe state store (its tables: "
                + tables.prefix(5).joined(separator: ", ") + (tables.count > 5 ? ", …" : "") + "); it was left as it was: give --state a new file"
        case .locked(let path, let holder):
            "the state store \(path) is in use by \(holder); wait for it to finish (or stop it: an interrupted run resumes) before starting another"
        case .cannotOpen(let path, let underlying): "cannot open the state store \(path): \(underlying)"
        case .notADatabase(let path):
            "\(path) is not an idpipe state store (not an SQLite database): give --state the state.sqlite a plan wrote"
        case .corrupt(let what): "the state store is damaged: \(what)"
        case .unsyncedBeforeRestart(let path):
            "the state store \(path) holds a plan that was not yet on the disk when the system restarted (a power loss or a "
                + "crash of the system), so it may have lost some of it; nothing was applied from it. Make the plan again "
                + "with the same command (`idpipe plan`, or `idpipe run`): it starts over"
        }
    }
}

/// The store files this process has open, by identity (a path may be written two ways), with the descriptors kept to
/// sync them: closed only when the last store of the file closes (`StateStore.syncWhileOpen` says why).
enum OpenStoreFiles {
    struct Key: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    private static let files = Mutex<[Key: (stores: Int, descriptors: [Int32])]>([:])

    /// Counts a store opened on `path`; nil when the file cannot be told (the store then keeps no descriptor).
    static func open(_ path: String) -> Key? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let key = Key(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        files.withLock { $0[key, default: (0, [])].stores += 1 }
        return key
    }

    /// Whether a store of this process has the file open.
    static func isOpen(_ key: Key) -> Bool {
        files.withLock { $0[key] != nil }
    }

    static func keep(_ descriptor: Int32, for key: Key) {
        files.withLock { $0[key, default: (1, [])].descriptors.append(descriptor) }
    }

    static func release(_ key: Key) {
        let closing: [Int32] = files.withLock { files in
            guard var entry = files[key] else { return [] }
            entry.stores -= 1
            if entry.stores > 0 {
                files[key] = entry
                return []
            }
            files[key] = nil
            return entry.descriptors
        }
        for descriptor in closing { close(descriptor) }
    }
}
