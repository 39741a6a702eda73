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

    /// Control characters in the id and the reason (which may quote a value) are written as escapes, `\u{0}`: a NUL
    /// ended the text wherever a C string carried it (the report named the account `a2` for `a2\0zz`, and showed a
    /// masked value cut short, unmasked), and an ESC would have reached a reviewer's terminal.
    public init(position: SourcePosition, localId: String?, field: String, reason: String) {
        self.position = position
        self.localId = localId.map(Self.visible)
        self.field = field
        self.reason = Self.visible(reason)
    }

    static func visible(_ text: String) -> String {
        guard TextScan.hasControlByte(text.utf8) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {  // C0, DEL and C1: what `hasControlByte` finds
                shown += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }
}

/// A record-level failure raised by a decoder or a stage: which field, and why.
public struct RecordIssue: Error, Sendable, Equatable {
    public var field: String
    public var reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }
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
