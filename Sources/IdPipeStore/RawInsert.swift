import GRDB
import GRDBSQLite

/// A cached INSERT bound and stepped through SQLite's C API. GRDB's `execute(arguments:)` boxes every value in a
/// `DatabaseValue` array first, which costs more than the insert on a plan's hundreds of thousands of rows.
/// Values are bound in the order of the statement's `?`s; `run` steps once and makes it ready for the next row.
struct RawInsert {
    private let statement: Statement
    private let connection: OpaquePointer?
    private var position: Int32 = 0

    /// SQLite copies the bound bytes (the Swift strings they come from are not kept alive).
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        connection = db.sqliteConnection
    }

    mutating func bind(_ value: String?) {
        position += 1
        guard var value else {
            sqlite3_bind_null(statement.sqliteStatement, position)
            return
        }
        _ = value.withUTF8 { bytes in
            if let start = bytes.baseAddress {
                sqlite3_bind_text(statement.sqliteStatement, position, UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self), Int32(bytes.count), Self.transient)
            } else {
                // An empty buffer may have no address, and a null pointer would bind NULL instead of ''.
                sqlite3_bind_text(statement.sqliteStatement, position, "", 0, Self.transient)
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
        }
        let code = sqlite3_step(statement.sqliteStatement)
        guard code == SQLITE_DONE else { throw DatabaseError.step(code, statement, connection) }
    }
}
