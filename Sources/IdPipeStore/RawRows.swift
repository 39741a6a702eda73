import GRDB
import GRDBSQLite

/// A SELECT stepped through SQLite's C API, its columns read by position. The reports read every account and action
/// of a plan; through GRDB's rows each value went through a `DatabaseValue` first, which cost more than the report's
/// own work on them.
struct RawRows {
    private let statement: Statement
    private let connection: OpaquePointer?

    init(_ db: Database, sql: String) throws {
        statement = try db.makeStatement(sql: sql)
        connection = db.sqliteConnection
    }

    /// How many columns the SELECT has.
    var columnCount: Int32 { sqlite3_column_count(statement.sqliteStatement) }

    /// Moves to the next row; false after the last.
    func next() throws -> Bool {
        switch sqlite3_step(statement.sqliteStatement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw DatabaseError.step(code, statement, connection)
        }
    }

    /// The column's text; nil for NULL. Invalid UTF-8 is repaired, as GRDB does.
    func text(_ column: Int32) -> String? {
        guard let start = sqlite3_column_text(statement.sqliteStatement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement.sqliteStatement, column))
        return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }

    /// The column's text; empty for NULL (for NOT NULL columns).
    func string(_ column: Int32) -> String { text(column) ?? "" }

    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement.sqliteStatement, column) }

    /// The column's integer; nil for NULL.
    func optionalInteger(_ column: Int32) -> Int64? {
        sqlite3_column_type(statement.sqliteStatement, column) == SQLITE_NULL ? nil : integer(column)
    }
}

extension DatabaseError {
    /// A failed `sqlite3_step` of a statement run through the C API, with SQLite's message, as GRDB reports one.
    static func step(_ code: Int32, _ statement: Statement, _ connection: OpaquePointer?) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: connection.map { String(cString: sqlite3_errmsg($0)) }, sql: statement.sql)
    }
}
