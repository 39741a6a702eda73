import IdPipeCore
import IdPipeCSV
import IdPipeCrypto
#if canImport(Glibc)
import Glibc
#endif

/// Reads the side inputs: legacy names, deletion requests, stored tokens, protected accounts.
/// They are small next to the export and are held in memory; a bad row stops the run with its file and line,
/// because skipping a deletion request or a token would silently change what the run does.
public enum SideInputReader {
    /// The files are read at the same time, one a core, the largest first: the plan starts when the last one is read,
    /// and in the pipeline's order the largest (the stored tokens) was started last, on whichever core was free, while
    /// the other core, done with the smaller ones, waited. (With the tokens' lines also read in place, the 1M
    /// benchmark's side inputs took 0.22 s instead of 0.285 s.) When several files are bad, the error is the first
    /// one's in the order of the pipeline's `inputs`, whichever thread finished first.
    public static func load(_ config: InputsConfig, relativeTo base: String) throws -> SideInputs {
        var readers: [(path: String, read: @Sendable (String) throws -> Loaded)] = []
        if let path = config.legacyNames { readers.append((resolve(path, base), { .legacyNames(try legacyNames($0)) })) }
        if let path = config.deletionRequests {
            readers.append((resolve(path, base), { path in
                let (rows, repeats) = try deletionRequests(path)
                return .deletionRequests(rows, repeats: repeats)
            }))
        }
        if let path = config.storedTokens { readers.append((resolve(path, base), { .credentials(try storedTokens($0)) })) }
        if let path = config.protectedAccounts { readers.append((resolve(path, base), { .protectedIds(try protectedAccounts($0)) })) }
        let all = readers
        let sizes = all.map { FileInfo.size($0.path) }
        let largestFirst = all.indices.sorted { sizes[$0] > sizes[$1] || (sizes[$0] == sizes[$1] && $0 < $1) }
        let done = WorkerPool(width: all.count).map(all.count) { turn in
            let reader = all[largestFirst[turn]]
            return Result { try reader.read(reader.path) }
        }
        let results = zip(largestFirst, done).sorted { $0.0 < $1.0 }.map(\.1)
        var inputs = SideInputs()
        for result in results {
            switch try result.get() {
            case .legacyNames(let rows): inputs.legacyNames = rows
            case .deletionRequests(let rows, let repeats):
                inputs.deletionRequests = rows
                inputs.repeatedDeletionRequests = repeats
            case .credentials(let rows): inputs.credentials = rows
            case .protectedIds(let ids): inputs.protectedIds = ids
            }
        }
        return inputs
    }

    private enum Loaded: Sendable {
        case legacyNames(KeyedRows<LegacyName>)
        case deletionRequests(KeyedRows<DeletionRequest>, repeats: Int)
        case credentials(KeyedRows<StoredCredentials>)
        case protectedIds(Set<String>)
    }

    /// `path` from the folder `base` unless it is absolute, tidied (`tidied`): a pipeline in `Pipelines/` reading
    /// `../Samples/accounts.json` names it `Samples/accounts.json` in every report, line and quarantine row.
    public static func resolve(_ path: String, _ base: String) -> String {
        tidied(path.hasPrefix("/") || base.isEmpty ? path : base + (base.hasSuffix("/") ? "" : "/") + path)
    }

    /// `path` without its repeated slashes, and with each `.` after a folder and each `folder/..` taken out where the
    /// folder is one the system would go through (not a link to one, which `..` would leave by its target's parent, nor a
    /// name that is not there, nor a folder it may not search): the same file, named as a reader would name it, or
    /// refused alike. A trailing slash stays.
    static func tidied(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var kept: [Substring] = []
        func keptIsSearchableFolder() -> Bool {
            let folder = (absolute ? "/" : "") + kept.joined(separator: "/")
            var info = stat()
            return folder.isEmpty || lstat(folder, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && access(folder, X_OK) == 0
        }
        for part in path.split(separator: "/") {
            if part == ".", keptIsSearchableFolder() { continue }
            if part == "..", let last = kept.last, last != "..", last != ".", keptIsSearchableFolder() {
                kept.removeLast()
                continue
            }
            kept.append(part)
        }
        let joined = (absolute ? "/" : "") + kept.joined(separator: "/")
        if joined.isEmpty { return "." }
        return path.hasSuffix("/") && !joined.hasSuffix("/") ? joined + "/" : joined
    }

    /// The columns of the legacy names table.
    enum NameColumn: Int, TableColumn {
        case uid, givenName, familyName, consent

        var header: String {
            switch self {
            case .uid: "uid"
            case .givenName: "given_name"
            case .familyName: "family_name"
            case .consent: "consent"
            }
        }
    }

    /// The columns of the deletion-request table.
    enum DeletionColumn: Int, TableColumn {
        case uid, requestedAt, source

        var header: String {
            switch self {
            case .uid: "uid"
            case .requestedAt: "requested_at"
            case .source: "source"
            }
        }
    }

    /// A bad value as an error quotes it: masked as the reports mask a value of the wrong field (a row shifted or a
    /// column mixed up puts a name or an address there, and the error went to the terminal in clear).
    static func shown(_ value: String) -> String {
        "'" + Masking(reveal: false).value(value, ofField: "value") + "'"
    }

    /// An invisible character (a control, a zero-width space, a bidi mark) in a side input's id: the row matched no
    /// account, without a word but a line among the unmatched ids that looked like the real one. A stored token so
    /// lost left the account to be deleted with its grant unrevoked; a deletion request, not honoured. Nil when
    /// there is none.
    static func hiddenCharacter(in id: String) -> String? {
        // No Firebase uid is longer (a 40 MB one went whole into plan.md as an unmatched id).
        if id.utf8.count > 128 { return "longer than 128 bytes, which no account id is" }
        // Printable ASCII (every id of most files) has none: seen on the bytes. Asking each scalar its category tripled
        // the side inputs' load time (0.21 to 0.52 s for the 1M-account benchmark's, before the plan can start).
        if id.withUTF8Bytes({ $0.allSatisfy { $0 >= 0x20 && $0 < 0x7F } }) { return nil }
        guard let scalar = id.unicodeScalars.first(where: \.isControlOrFormat) else { return nil }
        return "an invisible character (\(scalar.codePoint)) in the id"
    }

    /// `uid,given_name,family_name,consent`
    public static func legacyNames(_ path: String) throws -> KeyedRows<LegacyName> {
        var result = KeyedRows<LegacyName>()
        result.reserveCapacity(lineCount(path))
        try readTable(path, NameColumn.self) { row in
            let id = try row.id(.uid)
            let name = LegacyName(givenName: row.text(.givenName) ?? "", familyName: row.text(.familyName) ?? "", consent: try row.bool(.consent))
            let added = result.modify(id) { entry in
                guard entry == nil else { return false }
                entry = name
                return true
            }
            // Masked as the reports mask an id that is an address or a phone number (a legacy table keyed by them).
            guard added else { throw row.error(.uid, "'\(Masking(reveal: false).accountId(id))' appears twice") }
        }
        return result
    }

    /// `uid,requested_at,source`; the earliest request for an account counts. `repeats`: the rows of an account an
    /// earlier row already asked for.
    public static func deletionRequests(_ path: String) throws -> (rows: KeyedRows<DeletionRequest>, repeats: Int) {
        var result = KeyedRows<DeletionRequest>()
        var repeats = 0
        result.reserveCapacity(lineCount(path))
        try readTable(path, DeletionColumn.self) { row in
            let id = try row.id(.uid)
            let text = try row.required(.requestedAt)
            guard let at = Timestamp.parseRFC3339(text) else {
                throw row.error(.requestedAt, "\(Self.shown(text)) is not an RFC 3339 time: \(Timestamp.rfc3339Flaw(text) ?? "")")
            }
            let request = DeletionRequest(requestedAt: at, source: row.text(.source) ?? "unspecified")
            result.modify(id) { entry in
                if entry != nil { repeats += 1 }
                if let earlier = entry, earlier.requestedAt <= at { return }
                entry = request
            }
        }
        return (result, repeats)
    }

    /// One uid a line; `#` starts a comment. A line that cannot be a uid as written (invalid UTF-8, a quote, a comma,
    /// inner spaces: another format, as a CSV or a quoted list) stops the run: its id would match no account, and the
    /// account it meant would not be protected.
    public static func protectedAccounts(_ path: String) throws -> Set<String> {
        var result: Set<String> = []
        try forEachLineBytes(path) { bytes, number in
            func fail(_ message: String) -> InputError {
                InputError(path: path, position: SourcePosition(file: path, line: number), message: message)
            }
            guard let line = String(validating: bytes, as: UTF8.self) else { throw fail("is not valid UTF-8") }
            let uid = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map { String($0).trimmingSpaces } ?? ""
            if let problem = Selector.problem(inProtectedId: uid) {
                throw fail("\(problem): give one uid a line, as it is (no quotes, commas or spaces)")
            }
            if !uid.isEmpty { result.insert(uid) }
        }
        return result
    }

    // MARK: - Tables

    /// The columns a table reader asks for: cases numbered from 0 in order (the default raw values), each with the
    /// name it has in the file's header.
    protocol TableColumn: CaseIterable, RawRepresentable where RawValue == Int {
        var header: String { get }
    }

    /// One row of a table: the values of the columns `Column` names, by their raw value.
    struct Row<Column: TableColumn> {
        let path: String
        let line: Int
        /// The values (trimmed), one a column, in the order of the raw values.
        let values: [String]

        /// The value of `column`; nil when it is empty.
        func text(_ column: Column) -> String? {
            values[column.rawValue].isEmpty ? nil : values[column.rawValue]
        }

        func error(_ column: Column, _ message: String) -> InputError {
            InputError(path: path, position: SourcePosition(file: path, line: line), message: "\(column.header): \(message)")
        }

        func required(_ column: Column) throws -> String {
            guard let value = text(column) else { throw error(column, "is empty") }
            return value
        }

        /// An account id, refused when it holds what no id shows (`SideInputReader.hiddenCharacter`).
        func id(_ column: Column) throws -> String {
            let value = try required(column)
            if let problem = hiddenCharacter(in: value) { throw error(column, problem) }
            return value
        }

        func bool(_ column: Column) throws -> Bool {
            // The usual spellings first, without lower-casing a copy of each.
            switch text(column) {
            case nil, "false": return false
            case "true": return true
            case let other?:
                switch other.lowercased() {
                case "true", "1", "yes": return true
                case "false", "0", "no": return false
                default: throw error(column, "\(SideInputReader.shown(other)) is not true or false (nor yes/no, 1/0)")
                }
            }
        }
    }

    /// Reads a CSV table with a header row that names at least the columns of `Column` (in any order, among others),
    /// one row at a time; each row is handed to `body` with the values of those columns and dropped before the next.
    static func readTable<Column>(_ path: String, _: Column.Type, _ body: (Row<Column>) throws -> Void) throws {
        let columns = Column.allCases.map(\.header)
        let reader = try readingCSV(path) { try CSVRecordReader(path: path) }
        guard case .record(let header)? = try reader.next() else { throw InputError(path: path, message: "expected a header row: \(columns.joined(separator: ","))") }
        let names = (0..<header.count).map { header.field($0)?.trimmingSpaces ?? "" }
        // Where each column is in the file: found once, not by name in every row.
        let found = columns.map { column in names.indices.filter { names[$0] == column } }
        if let missing = found.firstIndex(where: \.isEmpty) {
            throw InputError(path: path, position: SourcePosition(file: path, line: 1), message: "the header has no column '\(columns[missing])' (expected \(columns.joined(separator: ",")))")
        }
        if let twice = found.firstIndex(where: { $0.count > 1 }) {
            throw InputError(path: path, position: SourcePosition(file: path, line: 1), message: "the header has the column '\(columns[twice])' twice")
        }
        let positions = found.map { $0[0] }
        var values: [String] = []
        values.reserveCapacity(columns.count)
        // The rows as views into the reader's buffers: a copy of each cost more than reading it.
        try reader.forEach { item in
            switch item {
            case .malformed(let bad):
                throw InputError(path: path, position: SourcePosition(file: path, line: bad.firstLine), message: bad.reason)
            case .record(let record):
                if record.count == 1 && record.fieldBytes(0).isEmpty { return }
                guard record.count == names.count else {
                    throw InputError(path: path, position: SourcePosition(file: path, line: record.firstLine), message: "has \(record.count == 1 ? "1 field" : "\(record.count) fields"); the header has \(names.count)")
                }
                if let invalid = record.firstInvalidField(record.count) {
                    throw InputError(path: path, position: SourcePosition(file: path, line: record.firstLine), message: "\(names[invalid]): is not valid UTF-8")
                }
                values.removeAll(keepingCapacity: true)
                for position in positions { values.append(record.text(position)?.trimmingSpaces ?? "") }
                try body(Row(path: path, line: record.firstLine, values: values))
            }
        }
    }

    /// At most about how many rows a side input holds: its lines plus one (an account may have two lines), counted a
    /// MiB at a time in one extra read of the file. Its table reserves them before reading: grown by doubling, each
    /// array and the hash table were copied at every step, and the allocator kept the pages of the old copies (loaded
    /// alone, the stored tokens peaked 8 MB higher). 0 when the file cannot be read (the reader then says why) or is
    /// not a regular file: a pipe, read here, would be empty when the reader opened it again.
    static func lineCount(_ path: String) -> Int {
        guard let file = fopen(path, "r") else { return 0 }
        defer { fclose(file) }
        var info = stat()
        guard fstat(fileno(file), &info) == 0, case .file = FileInfo.Kind(info) else { return 0 }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var count = 1
        while true {
            let read = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            guard read > 0 else { return count }
            count += buffer.withUnsafeBytes { Newlines.count($0, 0..<read) }
        }
    }

    /// Each line's bytes, without its `\n` or `\r\n`, and its number (from 1); valid only during the call. A byte-order
    /// mark before the first line is skipped, as the export and the tables also allow.
    static func forEachLineBytes(_ path: String, _ body: (UnsafeBufferPointer<UInt8>, Int) throws -> Void) throws {
        guard let file = fopen(path, "r") else { throw InputError(path: path, message: "cannot open: \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        var number = 0
        defer { free(buffer) }
        while true {
            let read = getline(&buffer, &capacity, file)
            guard read >= 0, let buffer else {
                // Not the end: the lines read so far would pass for the whole file.
                if ferror(file) != 0 { throw InputError(path: path, message: "cannot read line \(number + 1): \(String(cString: strerror(errno)))") }
                break
            }
            number += 1
            var length = read
            if length > 0 && buffer[length - 1] == 0x0A { length -= 1 }
            if length > 0 && buffer[length - 1] == 0x0D { length -= 1 }
            try buffer.withMemoryRebound(to: UInt8.self, capacity: read) { bytes in
                let bom = number == 1 && length >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF ? 3 : 0
                try body(UnsafeBufferPointer(start: bytes + bom, count: length - bom), number)
            }
        }
    }
}

