/// Where reading stopped: enough to open the input again and go on from there.
public struct InputCheckpoint: Sendable, Equatable, Codable {
    public var offset: Int64
    public var line: Int
    /// Records read so far (accounts and malformed rows).
    public var records: Int64
    /// Source-specific state (a JSON reader's "array closed" flag, a live API page token…).
    public var state: String?

    public init(offset: Int64 = 0, line: Int = 1, records: Int64 = 0, state: String? = nil) {
        self.offset = offset
        self.line = line
        self.records = records
        self.state = state
    }
}

/// One decoded input record: an account with its position, or a row that goes to the quarantine.
public enum DecodedRecord: Sendable {
    case account(Account, SourcePosition)
    /// An account whose values the fast path found already as the normalize stage leaves them
    /// (`FastPathVerdict.normalized`): the full path skips that stage.
    case normalized(Account, SourcePosition)
    case malformed(QuarantineEntry)
    /// The input cannot be read past this point.
    case fatal(InputError)

    /// `.normalized` when the fast path found the account's values normal already, else `.account`.
    public static func account(_ account: Account, _ position: SourcePosition, normalized: Bool) -> DecodedRecord {
        normalized ? .normalized(account, position) : .account(account, position)
    }
}

/// A batch of raw input, decoded in parts on the worker pool.
public protocol RawBatch: Sendable {
    /// How many independent parts the batch splits into.
    var partCount: Int { get }
    /// Decodes one part, handing each record over in input order; parts are decoded concurrently and their
    /// results joined in part order. Records are handed over, not collected: a part's accounts are processed as
    /// they are decoded, with no copy of each account on the way.
    func decode(part: Int, each: (consuming DecodedRecord) -> Void)
    /// The same, where the decoder may take the fast path: it asks `fastPath.fastPath` of each record it can read as
    /// bytes, and hands the accounts taken to `plain`, the others to `each` (as `.normalized` when the verdict says so),
    /// all in input order. Without its own, a batch
    /// hands every record to `each`.
    func decode(part: Int, fastPath: AccountProcessor, each: (consuming DecodedRecord) -> Void, plain: (borrowing PlainRecord) -> Void)
    /// Decodes one part for its ids alone (the duplicate check's survey, `PlanRunner.surveyIds`): a record the decoder
    /// can read as bytes goes to `plain` with only its id's hash set (`PlainRecord.account.idHash`), the others to
    /// `each`, as `decode` hands them over. Without its own, a batch hands every record to `each`.
    func decodeIds(part: Int, each: (consuming DecodedRecord) -> Void, plain: (borrowing PlainRecord) -> Void)
    /// Where the input stands after this batch.
    var checkpoint: InputCheckpoint { get }
    /// Asked once its parts are decoded: when a part did not end where the next one began, as reading the whole batch
    /// in one go would have (a cut that guessed a record boundary wrong), the parts after it are dropped and `batch`,
    /// the rest read in one go from where that part stopped, takes their place. Nil when every part did.
    func remainder() -> (after: Int, batch: any RawBatch)?
    /// The input's bytes the batch holds, from the file offset `start` (through its checkpoint at least), when it holds
    /// them: the input's fingerprint is taken from them.
    var inputBytes: (bytes: [UInt8], start: Int64)? { get }
}

extension RawBatch {
    public func remainder() -> (after: Int, batch: any RawBatch)? { nil }
    public var inputBytes: (bytes: [UInt8], start: Int64)? { nil }

    public func decode(part: Int, fastPath _: AccountProcessor, each: (consuming DecodedRecord) -> Void, plain _: (borrowing PlainRecord) -> Void) {
        decode(part: part, each: each)
    }

    public func decodeIds(part: Int, each: (consuming DecodedRecord) -> Void, plain _: (borrowing PlainRecord) -> Void) {
        decode(part: part, each: each)
    }
}

/// An account the fast path took, as a decoder hands it over: its counts, and where it is should it turn out to be
/// a duplicate. `localId` points into the decoder's buffer: valid during the call only.
public struct PlainRecord {
    public var account: PlainAccount
    public var localId: UnsafeBufferPointer<UInt8>
    public var file: String
    public var line: Int
    public var byteOffset: Int64

    public init(account: PlainAccount, localId: UnsafeBufferPointer<UInt8>, file: String, line: Int, byteOffset: Int64) {
        self.account = account
        self.localId = localId
        self.file = file
        self.line = line
        self.byteOffset = byteOffset
    }
}

extension RawBatch {
    /// The records of one part, collected (for tests and small inputs).
    public func decode(part: Int) -> [DecodedRecord] {
        var records: [DecodedRecord] = []
        decode(part: part) { records.append($0) }
        return records
    }
}

/// How a batch of records is cut into parts: as evenly as they go, in order, every record in exactly one part.
public enum BatchParts {
    public static func range(_ part: Int, of parts: Int, count: Int) -> Range<Int> {
        count * part / parts..<count * (part + 1) / parts
    }
}

/// A streaming source of accounts. Memory stays bounded by the batch size, not the input size.
public protocol AccountSource: AnyObject {
    var path: String { get }
    var totalBytes: Int64 { get }
    /// The next batch of about `records` records, or nil at the end.
    func nextBatch(records: Int, parts: Int) throws -> (any RawBatch)?
    /// Whether the plan may read the next batch while it merges the last: a file's costs nothing that a plan stopped
    /// there would regret; the live API's is a request.
    var readsAhead: Bool { get }
    /// Whether opening the input again and reading it once more costs only the reading: a file's does, so a plan whose
    /// duplicate check outgrows its memory reads the rest of the file once for its ids (`DuplicateCheck`); the live
    /// API's would download every account twice.
    var rereadable: Bool { get }
    /// Asked once both batches are decoded, `next` having been read right after `batch`: true when `next` starts where
    /// the decoding of `batch` stopped. A source that reads its next batch before the last is decoded, from where it
    /// guessed that one ends, can be wrong; the plan then drops the batches read after `batch` and calls `readAgain`.
    /// Reads only the batches (it is asked while the source reads on, on another thread).
    func follows(_ next: any RawBatch, after batch: any RawBatch) -> Bool
    /// Sets the source to read on from where the decoding of `batch` stopped (called while nothing else reads it).
    func readAgain(after batch: any RawBatch)
    /// Where reading started: a table's first row after its header, or where an interrupted plan stopped.
    var start: InputCheckpoint { get }
}

extension AccountSource {
    public var readsAhead: Bool { true }
    public var rereadable: Bool { true }
    public func follows(_: any RawBatch, after _: any RawBatch) -> Bool { true }
    public func readAgain(after _: any RawBatch) {}
    public var start: InputCheckpoint { InputCheckpoint() }
}

/// An input that cannot be read on (not a bad row: those are quarantined and reading goes on).
public struct InputError: Error, Sendable, CustomStringConvertible {
    public var position: SourcePosition?
    public var path: String
    public var message: String

    public init(path: String, position: SourcePosition? = nil, message: String) {
        self.path = path
        self.position = position
        self.message = message
    }

    public var description: String {
        if let position { return "\(position): \(message)" }
        return "\(path): \(message)"
    }
}
