import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

/// The bodies of `plan.json` and `ledger.csv` as the plan renders them batch by batch (`ReportFragments`), kept in two
/// files in the output folder that are unlinked as soon as they are made: a plan killed midway leaves nothing
/// behind. When the plan ran whole, the reports are put together from them (`ReportWriter`) instead of being
/// rendered again from the store; plan.md takes its account lists from `lists`, gathered on the way.
final class StreamedReports: PlanReportFollower, @unchecked Sendable {
    let masking: Masking
    let json: BodyFile
    let ledger: BodyFile
    // Used on the committer's thread while the plan runs, then by the thread that writes the reports.
    private(set) var accounts = 0
    // Used on the plan's thread (`gather`), which then writes the reports.
    private(set) var lists: GatheredLists

    init(folder: String, masking: Masking, listLimit: Int) throws {
        self.masking = masking
        lists = GatheredLists(limit: listLimit)
        json = try BodyFile(folder: folder)
        ledger = try BodyFile(folder: folder)
    }

    func add(_ batch: PlanBatch) throws {
        try json.append(batch.reportJSON)
        try ledger.append(batch.reportLedger)
        accounts += batch.reportAccounts
    }

    func gather(_ account: borrowing KeptAccount) {
        lists.add(account.row, actions: account.actions)
    }
}

/// A file with no name (made in a folder, then unlinked), appended to, then copied out whole.
final class BodyFile {
    private let descriptor: Int32
    private(set) var length: Int64 = 0

    init(folder: String) throws {
        var template = Array((folder + "/.idpipe-report-body.XXXXXX").utf8CString)
        descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw CommandError("cannot write in \(folder): \(String(cString: strerror(errno)))") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    }

    deinit { close(descriptor) }

    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + done, buffer.count - done)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw CommandError("cannot write a report: \(count < 0 ? String(cString: strerror(errno)) : "nothing was written")") }
                done += count
            }
        }
        length += Int64(bytes.count)
    }

    /// Copies the whole file to the end of `out`.
    func copy(into out: FileOutput) throws {
        try out.append(from: descriptor, length: length)
    }
}
