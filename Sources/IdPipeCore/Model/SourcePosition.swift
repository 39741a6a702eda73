/// Where a record came from: the file, the line it starts on (1-based) and its byte offset.
public struct SourcePosition: Sendable, Equatable, Codable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var byteOffset: Int64

    public init(file: String, line: Int, byteOffset: Int64 = 0) {
        self.file = file
        self.line = line
        self.byteOffset = byteOffset
    }

    public var description: String { "\(file):\(line)" }
}

/// A row that could not be used, with the reason. Quarantined rows never stop a run and are never dropped.
public struct QuarantineEntry: Sendable, Equatable, Codable {
    public var position: SourcePosition
    /// The account id when it could be read, so a reviewer can find the account.
    public var localId: String?
    /// The field at fault (`email`, `providerUserInfo[1].rawId`, `column 27`…), or `record`.
    public var field: String
    public var reason: String
    /// The row's other problems, in the order found (the first is `field` and `reason`): a row is fixed in one go,
    /// instead of a plan for each of its problems.
    public var otherIssues: [RecordIssue]

    /// Control characters in the id and the reason (which may quote a value) are written as escapes, `\u{0}`: a NUL
    /// ended the text wherever a C string carried it (the report named the account `a2` for `a2\0zz`, and showed a
    /// masked value cut short, unmasked), and an ESC would have reached a reviewer's terminal. Only those: an id with
    /// one is always quarantined, while one with an invisible format character (U+200B) may be an account's, which the
    /// duplicate check and the guards match by the id as it is; the reports write those as codes (`VisibleText`).
    public init(position: SourcePosition, localId: String?, field: String, reason: String, otherIssues: [RecordIssue] = []) {
        self.position = position
        self.localId = localId.map(Self.visible)
        self.field = field
        self.reason = Self.visible(reason)
        self.otherIssues = otherIssues.map { RecordIssue(field: $0.field, reason: Self.visible($0.reason)) }
    }

    /// The row of `issue`, with the others it carries.
    public init(position: SourcePosition, localId: String?, issue: RecordIssue) {
        self.init(position: position, localId: localId, field: issue.field, reason: issue.reason, otherIssues: issue.others)
    }

    /// Every problem of the row, the first one first.
    public var issues: [RecordIssue] { [RecordIssue(field: field, reason: reason)] + otherIssues }

    static func visible(_ text: String) -> String {
        guard TextScan.hasControlByte(text.utf8) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {  // C0, DEL and C1: what `hasControlByte` finds
                shown += VisibleText.code(scalar)
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }
}

/// A record-level failure raised by a decoder or a stage: which field, and why; with the record's other problems, when
/// the one that found it went on looking.
public struct RecordIssue: Error, Sendable, Equatable, Codable {
    public var field: String
    public var reason: String
    /// The record's other problems, in the order found (each with none of its own).
    public var others: [RecordIssue] = []

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    /// The first of `issues` carrying the rest; nil for none.
    public init?(_ issues: [RecordIssue]) {
        guard let first = issues.first else { return nil }
        self = first
        others = issues.dropFirst().flatMap { [RecordIssue(field: $0.field, reason: $0.reason)] + $0.others }
    }

    /// This issue and those it carries, flat.
    public var all: [RecordIssue] { [RecordIssue(field: field, reason: reason)] + others }
}

/// A value as a quarantine reason quotes it: in single quotes, with a quote or backslash inside written `\'` or `\\`.
/// Reports find the value by its quotes to mask it (`Masking.quotedValues`): an apostrophe in `o'brien@@example.com`
/// ended it early, and the rest was shown in clear.
public enum Quoted {
    public static func value(_ text: some StringProtocol) -> String {
        guard text.contains(where: { $0 == "'" || $0 == "\\" }) else { return "'\(text)'" }
        var quoted = "'"
        for character in text {
            if character == "'" || character == "\\" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "'"
    }
}
