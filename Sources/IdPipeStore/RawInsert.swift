import GRDB
import GRDBSQLite
import IdPipeCore

/// A cached INSERT bound and stepped through SQLite's C API. GRDB's `execute(arguments:)` boxes every value in a
/// `DatabaseValue` array first, which costs more than the insert on a plan's hundreds of thousands of rows.
/// Values are bound in the order of the statement's `?`s; `run` steps once and makes it ready for the next row.
///
/// Text is copied into a buffer of the insert's own, one value after the other, and SQLite reads it there
/// (`SQLITE_STATIC`) when the row is stepped, instead of allocating and freeing a copy of every value; the next row
/// overwrites it. Not copyable: a copy would share the buffer and overwrite a row being bound. The statement is
/// cached beyond the insert, so its bindings are cleared before the buffer is freed.
struct RawInsert: ~Copyable {
    private let statement: Statement
    private let connection: OpaquePointer?
    private var position: Int32 = 0
    private let text: UnsafeMutableRawPointer
    private let capacity = 64 << 10
    private var used = 0

    /// For text that does not fit in the buffer: SQLite copies the bytes (the Swift strings they come from are not
    /// kept alive).
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        connection = db.sqliteConnection
        text = .allocate(byteCount: capacity, alignment: 1)
    }

    deinit {
        sqlite3_clear_bindings(statement.sqliteStatement)
        text.deallocate()
    }

    mutating func bind(_ value: String?) {
        position += 1
        guard let value else {
            sqlite3_bind_null(statement.sqliteStatement, position)
            return
        }
        // In place (a copy into a `var`, for `withUTF8`, cost a retain and a release).
        value.withUTF8Bytes { bytes in
            let count = bytes.count
            if used + count <= capacity {
                // An empty buffer may have no address; this one always has one (a null pointer binds NULL, not '').
                if let start = bytes.baseAddress { (text + used).copyMemory(from: start, byteCount: count) }
                sqlite3_bind_text(statement.sqliteStatement, position, (text + used).assumingMemoryBound(to: CChar.self), Int32(count), nil)
                used += count
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
            used = 0
        }
        let code = sqlite3_step(statement.sqliteStatement)
        guard code == SQLITE_DONE else { throw DatabaseError.step(code, statement, connection) }
    }
}
