import IdPipeCore
import IdPipeCSV

/// A CSV with a header row (a legacy user table), read through the pipeline's column mapping.
struct MappedCSVDecoder: CSVRecordDecoder {
    let width: Int
    /// Account field → column index.
    let columns: [String: Int]
    /// Provider id → column index of its rawId.
    let providers: [(String, Int)]
    let headers: [String]
    let timestamps: TimestampFormat
    /// The zone of its RFC 3339 times written without one; nil: such a time is quarantined.
    let zone: TimestampZone?
    /// The texts a cell holds for NULL (`source.null_values`): read as an empty cell.
    let nullCells: [[UInt8]]
    /// How the normalize stage reads the table, for the other problems of a row that cannot be read; nil with it off.
    let normalize: AccountNormalizer.Options?
    var idColumn: Int? { columns["localId"] }
    var fieldsAtLeast: Int? { width }

    init(header: CSVRecord, mapping: ColumnMapping, timestamps: TimestampFormat, zone: TimestampZone? = nil,
         nullCells: [String] = SourceConfig.defaultNullValues, normalize: AccountNormalizer.Options? = nil, path: String) throws {
        // Trimmed, as the side-input tables' headers are.
        let headers = (0..<header.count).map { (header.field($0) ?? "").trimmingSpaces }
        self.headers = headers
        width = header.count
        let line = SourcePosition(file: path, line: header.firstLine)
        // The mapped names the header lacks, each with its field and a header name that differs in letter case only: all
        // of them in one error, so that a header is fixed in one go.
        var missing: [(name: String, field: String, near: String?)] = []
        func index(_ name: String, for field: String) throws -> Int {
            guard let found = headers.firstIndex(of: name) else {
                missing.append((name, field, headers.first { $0.lowercased() == name.lowercased() }))
                return -1
            }
            // Two columns of that name: which one holds the field is no guess to make.
            guard headers[(found + 1)...].firstIndex(of: name) == nil else {
                throw InputError(path: path, position: line, message: "the header has the column '\(name)' (mapped to \(field)) twice")
            }
            return found
        }
        var columns: [String: Int] = [:]
        // In the order of the fields' names: the same file gets the same error each run.
        for (field, name) in mapping.columns.sorted(by: { $0.key < $1.key }) { columns[field] = try index(name, for: field) }
        self.columns = columns
        providers = try mapping.providers.sorted { $0.key < $1.key }.map { ($0.key, try index($0.value, for: $0.key)) }
        if let first = missing.first {
            let caseRule = "names are matched as written, letter case included"
            // With none of the mapped names there, the first row is data (a table without a header): its cells,
            // personal data, are not shown. A header with a name mistyped is.
            if missing.allSatisfy({ $0.near == nil }),
               !mapping.columns.values.contains(where: headers.contains) && !mapping.providers.values.contains(where: headers.contains) {
                throw InputError(path: path, position: line, message: "the mapping names column '\(first.name)' for \(first.field), but the first row has "
                    + "none of the mapped columns: is it a header? (its \(headers.count) cells are not shown: they may be personal data)")
            }
            if missing.count == 1 {
                // A name that differs in letter case only: the row is a header, and the cell is the one meant.
                if let near = first.near {
                    throw InputError(path: path, position: line, message: "the mapping names column '\(first.name)' for \(first.field), but the header has "
                        + "'\(near)': \(caseRule)")
                }
                throw InputError(path: path, position: line,
                                 message: "the mapping names column '\(first.name)' for \(first.field), but the header has: \(headers.joined(separator: ", "))")
            }
            let named = missing.map { "'\($0.name)' for \($0.field)" + ($0.near.map { " (it has '\($0)')" } ?? "") }
            throw InputError(path: path, position: line, message: "the mapping names \(missing.count) columns the header does not have: "
                + named.joined(separator: ", ") + (missing.contains { $0.near != nil } ? "; \(caseRule)" : "")
                + "; the header has: \(headers.joined(separator: ", "))")
        }
        self.timestamps = timestamps
        self.zone = zone
        self.nullCells = nullCells.map { Array($0.utf8) }
        self.normalize = normalize
    }

    /// A cell with no value: empty, or a text the table writes for NULL.
    func isEmpty(_ record: CSVRecord, _ index: Int) -> Bool {
        let bytes = record.fieldBytes(index)
        return bytes.isEmpty || nullCells.contains { $0.elementsEqual(bytes) }
    }

    /// Why a cell's text is not taken as a value: NULL written as a word, or as `\N` (when the pipeline's list leaves it
    /// out), which the pipeline does not say the table uses for NULL (as a name or a provider's id it went into the
    /// import file as one).
    static func unnamedNull(_ value: String, column: String) -> String? {
        guard value == "NULL" || value == "null" || value == "\\N" else { return nil }
        return "holds the text \(value) (\(column)): if the table writes NULL so, list it in source.null_values to read it as no value"
    }

    /// Epoch times before March 1973 in milliseconds are seconds, and after the year 5138 in seconds milliseconds, as no
    /// account of a table is that old or that new (`AccountNormalizer.secondsThreshold`, an export's rule): what `parsed`
    /// (milliseconds) would be in the other unit, with what is wrong.
    static func otherUnit(_ parsed: Int64, _ format: TimestampFormat) -> (problem: String, unit: String, format: String, millis: Int64)? {
        let threshold = AccountNormalizer.secondsThreshold
        switch format {
        case .epochMilliseconds where parsed > 0 && parsed < threshold:
            return ("before March 1973 in epoch milliseconds", "seconds", TimestampFormat.epochSeconds.rawValue, parsed * 1000)
        case .epochSeconds where parsed / 1000 >= threshold:
            return ("after the year 5000 in epoch seconds", "milliseconds", TimestampFormat.epochMilliseconds.rawValue, parsed / 1000)
        default:
            return nil
        }
    }

    /// Epoch seconds as milliseconds, with a fraction as PostgreSQL's `EXTRACT(EPOCH FROM …)` writes it (`1551699296.5`),
    /// cut to the millisecond; nil for anything else, or seconds beyond what milliseconds can hold (the product trapped).
    static func epochSeconds(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let seconds = Int64(parts[0]) else { return nil }
        var (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return nil }
        if parts.count == 2 {
            guard TextScan.isDigits(parts[1]) else { return nil }
            // The first three digits, as milliseconds: ".5" is 500.
            let firstThree = String(parts[1].prefix(3))
            let part = Int64(firstThree + String(repeating: "0", count: 3 - firstThree.count))!
            (milliseconds, overflow) = parts[0].hasPrefix("-") ? milliseconds.subtractingReportingOverflow(part) : milliseconds.addingReportingOverflow(part)
            guard !overflow else { return nil }
        }
        return milliseconds
    }

    func decode(_ record: CSVRecord) -> Result<Account, RecordIssue> {
        guard record.count == width else {
            return .failure(RecordIssue(field: "record", reason: "has \(record.count == 1 ? "1 field" : "\(record.count) fields"); the header has \(width)"))
        }
        // Issues name the account's field (as the other formats do) and the table's column in the reason.
        // In double quotes: a reason's first single-quoted text is the value, which reports mask by field.
        func column(_ index: Int) -> String { "column \"\(headers[index])\"" }
        func text(_ field: String) throws(RecordIssue) -> String? {
            guard let index = columns[field] else { return nil }
            if isEmpty(record, index) { return nil }
            guard let value = record.field(index) else { throw RecordIssue(field: field, reason: "is not valid UTF-8 (\(column(index)))") }
            if let null = Self.unnamedNull(value, column: column(index)) { throw RecordIssue(field: field, reason: null) }
            return value
        }
        func time(_ field: String) throws(RecordIssue) -> Int64? {
            guard let value = try text(field) else { return nil }
            let parsed: Int64?
            switch timestamps {
            case .rfc3339: parsed = Timestamp.parseRFC3339(value, zone: zone)
            case .epochMilliseconds: parsed = Int64(value)
            case .epochSeconds: parsed = Self.epochSeconds(value)
            }
            guard let parsed else {
                // MySQL writes a DATETIME it holds no date in as zeros (masked in a report, a row of #).
                if timestamps == .rfc3339 && value.hasPrefix("0000-00-00") {
                    throw RecordIssue(field: field, reason: "is MySQL's zero date, \(value) (\(column(columns[field]!))): no date; if the table "
                        + "writes no date so, list it in source.null_values to read it as none")
                }
                // Masked in a report, the value no longer says what is wrong with it: the flaw is named.
                let named = timestamps == .rfc3339 ? Timestamp.rfc3339Flaw(value, zone: zone) : nil
                // A SQL DATETIME: the zone it was written in is the pipeline's to say.
                let hint = named == Timestamp.Flaw.noOffset.rawValue
                    ? " (a SQL DATETIME?): source.timestamp_zone says the zone the column was written in (UTC, or an offset such as +01:00)" : ""
                let flaw = named.map { ": \($0)\(hint)" } ?? ""
                throw RecordIssue(field: field, reason: "\(Quoted.value(value)) is not \(timestamps.described) (\(column(columns[field]!)))\(flaw)")
            }
            // A number in the other unit: seconds read as milliseconds land in January 1970, milliseconds read as seconds
            // in the year 55,000, and either went into the import file (and an inactivity rule) without a word. Tables
            // mix the two; 0 passes (a table's "never").
            if let other = Self.otherUnit(parsed, timestamps) {
                throw RecordIssue(field: field, reason: "\(Quoted.value(value)) is \(other.problem) (\(column(columns[field]!))): read as \(other.unit) it is "
                    + "\(Timestamp.formatRFC3339(other.millis)); is the column in \(other.unit) (source.timestamp_format: \(other.format))?")
            }
            return parsed
        }
        func flag(_ field: String) throws(RecordIssue) -> Bool {
            try CSVFields.bool(try text(field), field: field, column: columns[field].map(column) ?? "")
        }
        // Each field is read whatever the others gave (one that cannot be is left unset), so a row is fixed in one go.
        var issues: [RecordIssue] = []
        func read<T>(_ reader: (String) throws(RecordIssue) -> T, _ field: String, or unread: T) -> T {
            do { return try reader(field) } catch { issues.append(error); return unread }
        }
        var account = Account(localId: read(text, "localId", or: nil) ?? "")
        account.email = read(text, "email", or: nil)
        account.displayName = read(text, "displayName", or: nil)
        account.photoUrl = read(text, "photoUrl", or: nil)
        account.phoneNumber = read(text, "phoneNumber", or: nil)
        account.emailVerified = read(flag, "emailVerified", or: false)
        account.disabled = read(flag, "disabled", or: false)
        account.createdAt = read(time, "createdAt", or: nil)
        account.lastSignedInAt = read(time, "lastSignedInAt", or: nil)
        for (id, index) in providers where !isEmpty(record, index) {
            let field = "providerUserInfo[\(account.providers.count)].rawId"
            guard let rawId = record.field(index) else {
                issues.append(RecordIssue(field: field, reason: "is not valid UTF-8 (\(column(index)))"))
                // Kept in its place (unread), so that the next provider's problems are named at its own index.
                account.providers.append(ProviderLink(providerId: id, rawId: ""))
                continue
            }
            if let null = Self.unnamedNull(rawId, column: column(index)) {
                issues.append(RecordIssue(field: field, reason: null))
            } else if id == ProviderID.facebook && !TextScan.isDigits(rawId.trimmingSpaces) {
                // A Facebook user id (app-scoped, as Facebook Login gives it) is a number; anything else would be
                // imported as a sign-in no one can use.
                issues.append(RecordIssue(field: field, reason: "\(Quoted.value(rawId)) is not a Facebook user id, which is digits only (\(column(index)))"))
            }
            // The link has no email of its own: the table holds none (the account's may not be what the provider gave).
            account.providers.append(ProviderLink(providerId: id, rawId: rawId))
        }
        guard let issue = RecordIssue(issues) else { return .success(account) }
        return .failure(AccountNormalizer.issue(decoded: issue, in: account, options: normalize))
    }
}
