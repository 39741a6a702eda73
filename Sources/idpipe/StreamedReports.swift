import CLinux
import IdPipeCore
import IdPipeExtract
#if canImport(Glibc)
import Glibc
#endif

/// `plan.json` and `ledger.csv` as the plan renders them batch by batch (`ReportFragments`): each is written, from its
/// first byte to its last account, into a file of the output folder that has no name yet (`ReportBody`), so a plan
/// killed midway leaves nothing behind. When the plan ran whole, `ReportWriter` appends what comes after the accounts
/// and gives each file its name, instead of rendering the reports again from the store; plan.md takes its account
/// lists from `lists`, gathered on the way.
final class StreamedReports: PlanReportFollower, @unchecked Sendable {
    let masking: Masking
    let json: ReportBody
    let ledger: ReportBody
    // Used on the committer's thread while the plan runs, then by the thread that writes the reports.
    private(set) var accounts = 0
    // Used on the plan's thread (`gather`), which then writes the reports.
    private(set) var lists: GatheredLists

    init(folder: String, masking: Masking, listLimit: Int) throws {
        self.masking = masking
        lists = GatheredLists(limit: listLimit)
        json = try ReportBody(folder: folder, opening: JSONReport.opening)
        ledger = try ReportBody(folder: folder, opening: CSVLedger.opening)
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

/// A report's first part, written as the plan goes into a file with no name in the output folder (`O_TMPFILE`), which
/// becomes the report once its end is appended (`name`): the 120 MB of a 1M-account plan.json are never copied.
/// Where the filesystem makes no file without a name, a named one is unlinked at once, and `copy` puts its bytes into
/// the report at the end (so too for a report written through a link).
final class ReportBody {
    private let descriptor: Int32
    /// True when the file has no name yet and can be given one (`name`).
    private(set) var nameable: Bool
    /// The bytes written through `append` (what `copy` copies; not what was appended once named).
    private(set) var length: Int64 = 0

    init(folder: String, opening: String) throws {
        do {
            (descriptor, nameable) = try UnnamedFile.make(in: folder, fallbackName: ".idpipe-report-body", mode: 0o666)
        } catch {
            throw CommandError(error.description)
        }
        try append(Array(opening.utf8))
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

    /// Gives the file a name beside `target` (`NAME.idpipe-partial.XXXXXX`, as `FileOutput(stagedBeside:)` makes), with the
    /// mode `target` has or a new file would get, and returns a `FileOutput` that appends to it. Nil when the file
    /// cannot be named (it has a name already, or the kernel refuses): then it is to be copied (its first `length`
    /// bytes, so a second report from it is whole too).
    func name(beside target: String, privately: Bool) -> FileOutput? {
        guard nameable else { return nil }
        // Locked before it has a name: never seen unlocked while it is written.
        let lock = StagedReportLock(descriptor)
        fchmod(descriptor, FileOutput.stagedMode(for: target, privately: privately))
        var generator = SystemRandomNumberGenerator()
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        for _ in 0..<100 {
            let staged = target + LeftoverReports.infix + String(decoding: (0..<6).map { _ in letters.randomElement(using: &generator)! }, as: UTF8.self)
            if linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, staged, AT_SYMLINK_FOLLOW) == 0 {
                nameable = false
                guard let output = try? FileOutput(appendingTo: descriptor, path: staged, lock: lock) else {
                    unlink(staged)
                    return nil
                }
                return output
            }
            if errno != EEXIST { return nil }
        }
        return nil
    }
}
