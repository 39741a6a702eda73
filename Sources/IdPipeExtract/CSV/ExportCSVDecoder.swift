import IdPipeCore
import IdPipeCSV

/// The 52 columns of a `firebase auth:export` CSV row (PROTOCOLS §1), 0-based.
struct ExportCSVDecoder: CSVRecordDecoder {
    static let columnCount = 52
    /// The first column of each provider's 4 (`rawId, email, displayName, photoUrl`).
    static let providerColumns: [(String, Int)] = [
        ("google.com", 7), ("facebook.com", 11), ("twitter.com", 15), ("github.com", 19),
        ("apple.com", 28), ("microsoft.com", 32), ("gc.apple.com", 36), ("playgames.google.com", 40),
        ("linkedin.com", 44), ("yahoo.com", 48),
    ]
    static let names: [Int: String] = [
        0: "localId", 1: "email", 2: "emailVerified", 3: "passwordHash", 4: "salt", 5: "displayName", 6: "photoUrl",
        23: "createdAt", 24: "lastSignedInAt", 25: "phoneNumber", 26: "disabled", 27: "customAttributes",
    ]

    static let providerFields = ["rawId", "email", "displayName", "photoUrl"]

    /// How many fields the rows of this file have: 53 (the trailing comma, as the CLI writes), 52 (saved again without
    /// it), or nil when it could not be told. A row with the other count has lost or gained a field: in a file of
    /// 53-field rows, a 52-field row missing an empty field among the logins shifted a Microsoft email into a rawId,
    /// and the account, protected by its domain, was planned for deletion.
    var fieldsPerRow: Int?
    var idColumn: Int? { 0 }
    var fieldsAtLeast: Int? { Self.columnCount }

    /// A column's field as the JSON export names it (the convention of every quarantine entry); the column number goes
    /// in the reason. A provider's columns are named by its place among the providers the row links, as in JSON.
    static func fieldName(_ index: Int, in record: CSVRecord) -> String {
        if let name = names[index] { return name }
        var linked = 0
        for (_, first) in providerColumns {
            if index >= first && index < first + 4 { return "providerUserInfo[\(linked)].\(providerFields[index - first])" }
            if (first..<first + 4).contains(where: { !record.fieldBytes($0).isEmpty }) { linked += 1 }
        }
        return "column \(index + 1)"
    }

    func decode(_ record: CSVRecord) -> Result<Account, RecordIssue> {
        let result = decodeColumns(record)
        // 52 fields is a row without its trailing comma (a file saved again by a spreadsheet), or a row missing a
        // field, whose later columns then hold their neighbours' values: a fault found in it says so.
        guard record.count == Self.columnCount, fieldsPerRow != Self.columnCount + 1, case .failure(var issue) = result else { return result }
        issue.reason += "; the row has one field too few (52, and no empty field after a trailing comma): a field may be missing and the columns after it shifted"
        return .failure(issue)
    }

    private func decodeColumns(_ record: CSVRecord) -> Result<Account, RecordIssue> {
        let count = record.count
        guard count == Self.columnCount + 1 || count == Self.columnCount else {
            return .failure(RecordIssue(field: "record", reason: "has \(count) fields; an auth:export row has 52 and a trailing comma"))
        }
        // A header row of the export's columns (a table exported with one): its 'email' is no address either way, and
        // the reason said only "'e•••' is not true or false".
        if record.fieldBytes(1).count == 5, record.fieldBytes(1).map({ $0 | 0x20 }).elementsEqual("email".utf8) {
            return .failure(RecordIssue(field: "record", reason: "looks like a header row (its second field is the word email): an auth:export CSV has none"))
        }
        if let expected = fieldsPerRow, count != expected {
            return .failure(RecordIssue(field: "record", reason: expected == Self.columnCount + 1
                ? "has 52 fields where the rows of this file have 52 and a trailing comma: a field is missing and the columns after it shifted"
                : "has 53 fields where the rows of this file have 52 (no trailing comma): a field too many, and the columns after it shifted"))
        }
        if count == Self.columnCount + 1 && !record.fieldBytes(Self.columnCount).isEmpty {
            return .failure(RecordIssue(field: "column 53", reason: "should be empty (the trailing comma)"))
        }
        if let invalid = record.firstInvalidField(Self.columnCount) {
            return .failure(RecordIssue(field: Self.fieldName(invalid, in: record), reason: "is not valid UTF-8 (column \(invalid + 1))"))
        }
        // Each column is read straight into the account (an array of all 52 first cost more to build and free than
        // the account).
        var account = Account(localId: record.text(0) ?? "")
        account.email = record.text(1)
        if count == Self.columnCount, let email = account.email, !email.utf8.contains(UInt8(ascii: "@")) {
            return .failure(RecordIssue(field: "email", reason: "has no @ (column 2)"))
        }
        account.passwordHash = record.text(3)
        account.salt = record.text(4)
        account.displayName = record.text(5)
        account.photoUrl = record.text(6)
        account.phoneNumber = record.text(25)
        account.customAttributes = record.text(27)
        // Custom claims are a JSON object. In a row one field short, the Apple columns after them shift into their
        // place (an Apple id read as the claims, the Apple email as its id): a value that cannot be claims says so.
        if count == Self.columnCount, let claims = account.customAttributes, !(claims.hasPrefix("{") && claims.hasSuffix("}")) {
            return .failure(RecordIssue(field: "customAttributes", reason: "\(Quoted.value(claims)) is not a JSON object (column 28)"))
        }
        do {
            account.emailVerified = try CSVFields.bool(record.text(2), field: "emailVerified", column: "column 3")
            account.disabled = try CSVFields.bool(record.text(26), field: "disabled", column: "column 27")
            account.createdAt = try CSVFields.epochMilliseconds(record.text(23), field: "createdAt", column: "column 24")
            account.lastSignedInAt = try CSVFields.epochMilliseconds(record.text(24), field: "lastSignedInAt", column: "column 25")
        } catch {
            return .failure(error)
        }
        for (id, first) in Self.providerColumns {
            let rawId = record.text(first), email = record.text(first + 1), name = record.text(first + 2), photo = record.text(first + 3)
            if rawId == nil && email == nil && name == nil && photo == nil { continue }
            guard let rawId else {
                return .failure(RecordIssue(field: "providerUserInfo[\(account.providers.count)].rawId",
                                            reason: "is empty (column \(first + 1); other \(id) columns are set)"))
            }
            account.providers.append(ProviderLink(providerId: id, rawId: rawId, email: email, displayName: name, photoUrl: photo))
        }
        return .success(account)
    }
}

extension ExportCSVDecoder {
    /// The decoder for the export at `path`, told how many fields its rows have: the count most of its first 100
    /// well-formed rows have (52, or 53 with the last empty); nil on a tie. A file none of whose first 100 rows has
    /// the export's fields is refused: another file given as the export (a JSON export, a table with semicolons)
    /// had every row quarantined, and the plan ended "done, with quarantined rows".
    static func forFile(_ path: String) throws -> ExportCSVDecoder {
        var withComma = 0, without = 0, seen = 0
        var first: (line: Int, fields: Int)?
        try readingCSV(path) {
            let reader = try CSVRecordReader(path: path)
            while withComma + without < 100, seen < 100, let item = try reader.next() {
                seen += 1
                guard case .record(let record) = item else { continue }
                if first == nil { first = (record.firstLine, record.count) }
                if record.count == columnCount { without += 1 }
                if record.count == columnCount + 1 && record.fieldBytes(columnCount).isEmpty { withComma += 1 }
            }
        }
        if withComma + without == 0, seen > 0 {
            let shown = first.map { "line \($0.line) has \($0.fields == 1 ? "1 field" : "\($0.fields) fields")" } ?? "its lines are no CSV rows"
            throw InputError(path: path, position: first.map { SourcePosition(file: path, line: $0.line) },
                             message: "not an auth:export CSV file: none of its first \(seen == 1 ? "row" : "\(seen) rows") has the export's "
                                + "52 fields (and trailing comma); \(shown)")
        }
        var decoder = ExportCSVDecoder()
        if withComma != without { decoder.fieldsPerRow = withComma > without ? columnCount + 1 : columnCount }
        return decoder
    }

    /// The first column of each provider of `providerColumns`: read for every row, where walking `providerColumns`
    /// retained and released each id string.
    static let providerFirstColumns = providerColumns.map(\.1)

    /// The provider ids of `providerColumns` as bytes that live as long as the process (the fast path's links point
    /// at them).
    /// Never written after it is made, so safe to read from any thread.
    nonisolated(unsafe) static let providerIdBytes: [UnsafeBufferPointer<UInt8>] = providerColumns.map { id, _ in
        let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: id.utf8.count)
        _ = bytes.initialize(from: id.utf8)
        return UnsafeBufferPointer(bytes)
    }

    /// The row's fields as bytes for the fast path, where `decode` would read it with no issue: 52 columns and the
    /// empty one after the trailing comma, valid UTF-8, booleans and timestamps as the export writes them, every
    /// linked provider with its rawId. Anything else is left to `decode` (false).
    func scanPlain(_ record: CSVRecordView, into account: inout AccountBytes) -> Bool {
        guard record.count == Self.columnCount + 1, record.fieldBytes(Self.columnCount).isEmpty,
              record.firstInvalidField(Self.columnCount) == nil else { return false }
        func text(_ index: Int) -> UnsafeBufferPointer<UInt8>? {
            let field = record.fieldBytes(index)
            return field.isEmpty ? nil : field
        }
        guard let id = text(0), Self.plainBool(record.fieldBytes(2)) != nil, let disabled = Self.plainBool(record.fieldBytes(26)),
              let created = Self.plainDigits(record.fieldBytes(23)), let last = Self.plainDigits(record.fieldBytes(24)) else { return false }
        account.localId = id
        account.email = text(1)
        account.displayName = text(5)
        account.phoneNumber = text(25)
        account.disabled = disabled
        account.createdAt = created
        account.lastSignedInAt = last
        for (index, first) in Self.providerFirstColumns.enumerated() {
            let rawId = text(first), email = text(first + 1), name = text(first + 2)
            if rawId == nil && email == nil && name == nil && text(first + 3) == nil { continue }
            guard let rawId else { return false }
            account.links.append(LinkBytes(providerId: Self.providerIdBytes[index], rawId: rawId, email: email, displayName: name))
        }
        return true
    }

    /// A boolean as `CSVFields.bool` reads it, for the forms the export writes (empty, true, false); nil for others.
    static func plainBool(_ field: UnsafeBufferPointer<UInt8>) -> Bool? {
        if field.isEmpty { return false }
        if TextScan.sameBytes(field, "true") { return true }
        if TextScan.sameBytes(field, "false") { return false }
        return nil
    }

    /// A timestamp as `CSVFields.epochMilliseconds` reads it, when written as 1 to 18 digits: `.some(nil)` for an empty
    /// field, nil for any other form.
    static func plainDigits(_ field: UnsafeBufferPointer<UInt8>) -> Int64?? {
        if field.isEmpty { return .some(nil) }
        guard field.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in field {
            guard byte >= 48 && byte <= 57 else { return nil }
            value = value * 10 + Int64(byte - 48)
        }
        return value
    }
}

enum CSVFields {
    /// Field names are the account's (as in the JSON export); the column (`column 3`, `column "is_disabled"`) goes in the reason.
    /// True or false, whatever the letter case; legacy tables also write yes/no, y/n, and t/f (PostgreSQL's COPY).
    static func bool(_ text: String?, field: String, column: String) throws(RecordIssue) -> Bool {
        switch text?.lowercased() {
        case nil, "false", "0", "no", "n", "f": return false
        case "true", "1", "yes", "y", "t": return true
        case _?:
            throw RecordIssue(field: field, reason: "\(Quoted.value(text ?? "")) is not true or false (\(column)): "
                + "true/false, 1/0, yes/no, y/n or t/f are read, in any letter case")
        }
    }

    static func epochMilliseconds(_ text: String?, field: String, column: String) throws(RecordIssue) -> Int64? {
        guard let text else { return nil }
        guard let value = Int64(text) else {
            throw RecordIssue(field: field, reason: "\(Quoted.value(text)) is not a timestamp in epoch milliseconds (\(column))")
        }
        return value
    }
}

/// Runs `body`, which reads the CSV file at `path`, with its reading errors as the input errors a plan reports.
func readingCSV<T>(_ path: String, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as CSVReadError {
        throw InputError(path: path, message: error.message)
    }
}
