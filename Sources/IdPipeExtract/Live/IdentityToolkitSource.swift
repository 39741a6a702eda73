import IdPipeConnect
import IdPipeCore
import IdPipeCrypto

/// The live API as an extract source: `accounts:batchGet` pages of 1000, one page per batch, so the page token
/// is recorded in the state store with every committed page and an interrupted plan goes on from the next page.
/// Positions in the quarantine read `identitytoolkit:projects/P:PAGE` (1-based page, the line of a file).
public final class IdentityToolkitSource: AccountSource {
    public let path: String
    public var totalBytes: Int64 { 0 }
    /// Fetches one page for a page token (nil: the first page). Blocking: the plan runs on a thread of its own.
    private let fetch: (String?) throws -> UserPage
    private var pageToken: String?
    private var finished: Bool
    private var records: Int64
    private var pages: Int

    /// `checkpoint.state` is `next:<token>` after a page with more to come, `end` after the last one.
    public init(project: String, checkpoint: InputCheckpoint, fetch: @escaping (String?) throws -> UserPage) {
        path = "identitytoolkit:projects/\(project)"
        self.fetch = fetch
        records = checkpoint.records
        pages = max(0, checkpoint.line - 1)
        finished = checkpoint.state == "end"
        if let state = checkpoint.state, state.hasPrefix("next:") { pageToken = String(state.dropFirst(5)) }
    }

    /// A page read ahead is a request, wasted when the plan stops after the page before.
    public var readsAhead: Bool { false }
    public var rereadable: Bool { false }

    public func nextBatch(records _: Int, parts: Int) throws -> (any RawBatch)? {
        guard !finished else { return nil }
        let page: UserPage
        do {
            page = try fetch(pageToken)
        } catch {
            throw InputError(path: path, position: SourcePosition(file: path, line: pages + 1), message: "accounts:batchGet failed: \(error)")
        }
        pages += 1
        records += Int64(page.users.count)
        pageToken = page.nextPageToken
        finished = page.nextPageToken == nil
        // offset counts accounts (there are no bytes); line counts pages, so `line - 1` pages are done.
        let checkpoint = InputCheckpoint(offset: records, line: pages + 1, records: records,
                                         state: finished ? "end" : "next:\(page.nextPageToken!)")
        return LivePage(path: path, page: pages, users: page.users.map { $0.encoded() }, ids: page.users.map { $0["localId"]?.string },
                        parts: parts, checkpoint: checkpoint)
    }
}

/// One page of users, decoded in parts by the same decoder as the export JSON (it reads the API's `lastLoginAt`).
struct LivePage: RawBatch {
    let path: String
    let page: Int
    let users: [[UInt8]]
    /// Each user's `localId` as the API sent it: a quarantined account is named by it (there is no line to find it at).
    let ids: [String?]
    let parts: Int
    let checkpoint: InputCheckpoint

    var partCount: Int { users.isEmpty ? 0 : min(parts, users.count) }

    func decode(part: Int, each: (consuming DecodedRecord) -> Void) {
        let position = SourcePosition(file: path, line: page)
        for index in BatchParts.range(part, of: partCount, count: users.count) {
            each(Self.decode(users[index], localId: ids[index], position: position))
        }
    }

    private static func decode(_ bytes: [UInt8], localId: String?, position: SourcePosition) -> DecodedRecord {
        bytes.withUnsafeBufferPointer { buffer in
            var cursor = JSONCursor(bytes: buffer, start: 0, end: buffer.count)
            do throws(JSONCursor.SyntaxError) {
                switch try AccountJSONDecoder.decode(&cursor) {
                case .success(let account): return .account(account, position)
                case .failure(let issue):
                    return .malformed(QuarantineEntry(position: position, localId: localId, issue: issue))
                }
            } catch {
                return .malformed(QuarantineEntry(position: position, localId: localId, field: error.field, reason: error.message))
            }
        }
    }
}

/// The live source's stand-in for an input hash: a remote listing cannot be read again to prove it unchanged,
/// so resume trusts the page token and this records only which project was read.
public final class LiveSourceFingerprint: InputFingerprint {
    private let digest: String

    public init(project: String) {
        digest = SHA256Hasher.hexDigest("identitytoolkit:projects/\(project)")
    }

    public func advance(to offset: Int64) throws -> String { digest }
}
