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
    /// How the normalize stage reads the table, for the other problems of a row that cannot be read; nil with it off.
    let normalize: AccountNormalizer.Options?
    var idColumn: Int? { columns["localId"] }
    var fieldsAtLeast: Int? { width }

    init(header: CSVRecord, mapping: ColumnMapping, timestamps: TimestampFormat, zone: TimestampZone? = nil, normalize: AccountNormalizer.Options? = nil,
         path: String) throws {
        // Trimmed, as the side-input tables' headers are.
        let headers = (0..<header.count).map { (header.field($0) ?? "").trimmingSpaces }
        self.headers = headers
        width = header.count
        func index(_ name: String, for field: String) throws -> Int {
            let line = SourcePosition(file: path, line: header.firstLine)
            guard let found = headers.firstIndex(of: name) else {
                // A name that differs in letter case only: the row is a header, and the cell is the one meant.
                if let near = headers.first(where: { $0.lowercased() == name.lowercased() }) {
                    throw InputError(path: path, position: line, message: "the mapping names column '\(name)' for \(field), but the header has "
                        + "'\(near)': names are matched as written, letter case included")
                }
                // With none of the mapped names there, the first row is data (a table without a header): its cells,
                // personal data, are not shown. A header with a name mistyped is.
                guard mapping.columns.values.contains(where: headers.contains) || mapping.providers.values.contains(where: headers.contains) else {
                    throw InputError(path: path, position: line, message: "the mapping names column '\(name)' for \(field), but the first row has "
                        + "none of the mapped columns: is it a header? (its \(headers.count) cells are not shown: they may be personal data)")
                }
                throw InputError(path: path, position: line,
                                 message: "the mapping names column '\(name)' for \(field), but the header has: \(headers.joined(separator: ", "))")
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
        self.timestamps = timestamps
        self.zone = zone
        self.normalize = normalize
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

    func decode(_ record: CSVRecord) -> Result<Account, RecordIssue> {
        guard record.count == width else {
            return .failure(RecordIssue(field: "record", reason: "has \(record.count == 1 ? "1 field" : "\(record.count) fields"); the header has \(width)"))
        }
        // Issues name the account's field (as the other formats do) and the table's column in the reason.
        // In double quotes: a reason's first single-quoted text is the value, which reports mask by field.
        func column(_ index: Int) -> String { "column \"\(headers[index])\"" }
        func text(_ field: String) throws(RecordIssue) -> String? {
            guard let index = columns[field] else { return nil }
            if record.fieldBytes(index).isEmpty { return nil }
            guard let value = record.field(index) else { throw RecordIssue(field: field, reason: "is not valid UTF-8 (\(column(index)))") }
            return value
        }
        func time(_ field: String) throws(RecordIssue) -> Int64? {
            guard let value = try text(field) else { return nil }
            let parsed: Int64?
            switch timestamps {
            case .rfc3339: parsed = Timestamp.parseRFC3339(value, zone: zone)
            case .epochMilliseconds: parsed = Int64(value)
            case .epochSeconds:
                // Seconds beyond what milliseconds can hold are no time (the product trapped).
                parsed = Int64(value).flatMap { seconds in
                    let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
                    return overflow ? nil : milliseconds
                }
            }
            guard let parsed else {
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
        for (id, index) in providers where !record.fieldBytes(index).isEmpty {
            guard let rawId = record.field(index) else {
                issues.append(RecordIssue(field: "providerUserInfo[\(account.providers.count)].rawId", reason: "is not valid UTF-8 (\(column(index)))"))
                // Kept in its place (unread), so that the next provider's problems are named at its own index.
                account.providers.append(ProviderLink(providerId: id, rawId: ""))
                continue
            }
            account.providers.append(ProviderLink(providerId: id, rawId: rawId, email: id == ProviderID.apple ? account.email : nil))
        }
        guard let issue = RecordIssue(issues) else { return .success(account) }
        return .failure(AccountNormalizer.issue(decoded: issue, in: account, options: normalize))
    }
}
