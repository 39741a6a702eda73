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

    public init(position: SourcePosition, localId: String?, field: String, reason: String) {
        self.position = position
        self.localId = localId
        self.field = field
        self.reason = reason
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
