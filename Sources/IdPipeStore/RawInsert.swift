import GRDB
import GRDBSQLite

/// A cached INSERT bound and stepped through SQLite's C API. GRDB's `execute(arguments:)` boxes every value in a
/// `DatabaseValue` array first, which costs more than the insert on a plan's hundreds of thousands of rows.
/// Values are bound in the order of the statement's `?`s; `run` steps once and makes it ready for the next row.
struct RawInsert {
    private let statement: Statement
    private let connection: OpaquePointer?
    private var position: Int32 = 0
    private let row: RowBytes

    /// For text that does not fit in `row`: SQLite copies the bytes (the Swift strings they come from are not kept alive).
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        connection = db.sqliteConnection
        row = RowBytes(statement: statement.sqliteStatement, capacity: 64 << 10)
    }

    mutating func bind(_ value: String?) {
        position += 1
        guard var value else {
            sqlite3_bind_null(statement.sqliteStatement, position)
            return
        }
        _ = value.withUTF8 { bytes in
            let count = bytes.count
            if row.used + count <= row.capacity {
                // An empty buffer may have no address; the row's own bytes always have one (a null pointer binds NULL, not '').
                if let start = bytes.baseAddress { (row.base + row.used).copyMemory(from: start, byteCount: count) }
                sqlite3_bind_text(statement.sqliteStatement, position, (row.base + row.used).assumingMemoryBound(to: CChar.self), Int32(count), nil)
                row.used += count
            } else {
                sqlite3_bind_text(statement.sqliteStatement, position, UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self),
                                  Int32(count), Self.transient)
            }
        }
    }

    mutating func bind(_ value: Int64) {
        position += 1
        sqlite3_bind_int64(statement.sqliteStatement, position, value)
    }

    mutating func bind(_ value: Int) { bind(Int64(value)) }

    mutating func run() throws {
        defer {
            sqlite3_reset(statement.sqliteStatement)
            position = 0
            row.used = 0
        }
        let code = sqlite3_step(statement.sqliteStatement)
        guard code == SQLITE_DONE else { throw DatabaseError.step(code, statement, connection) }
    }
}

/// The text of the row being bound, copied one value after the other. SQLite reads it where it is (`SQLITE_STATIC`)
/// when the row is stepped, instead of allocating and freeing a copy of every value; the next row overwrites it.
/// The cached statement outlives it, so its bindings are cleared before the bytes are freed.
private final class RowBytes {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    var used = 0
    private let statement: OpaquePointer

    init(statement: OpaquePointer, capacity: Int) {
        self.statement = statement
        self.capacity = capacity
        base = .allocate(byteCount: capacity, alignment: 1)
    }

    deinit {
        sqlite3_clear_bindings(statement)
        base.deallocate()
    }
}
