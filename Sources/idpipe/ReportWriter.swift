import IdPipeCore
import IdPipeExtract
import IdPipeStore
#if canImport(Glibc)
import Glibc
#endif

/// Writes the reports of a run from its state store.
struct ReportWriter {
    var store: StateStore
    let out: String
    let reveal: Bool
    let listLimit: Int
    /// `plan` for the dry run's files, `report` once apply has run (plan.md stays as it was reviewed).
    var stem = "plan"
    /// plan.json and the ledger up to their last account, written as the plan committed its batches, and plan.md's
    /// account lists, gathered then: when given, the two files become the reports once the store's quarantine, run and
    /// totals follow the accounts, and plan.md takes its lists from them, instead of reading every row back.
    var streamed: StreamedReports?

    enum Format: String, CaseIterable {
        case md, json, csv
        /// The quarantined input rows (`quarantine.csv`).
        case quarantine

        /// The extension of its file: a `.csv` output is the ledger unless its name or `--format` says quarantine.
        var fileExtension: String { self == .quarantine ? "csv" : rawValue }
    }

    func fileName(_ format: Format) -> String {
        Self.fileName(format, stem: stem)
    }

    static func fileName(_ format: Format, stem: String) -> String {
        switch format {
        case .md: "\(stem).md"
        case .json: "\(stem).json"
        case .csv: "ledger.csv"
        case .quarantine: "quarantine.csv"
        }
    }

    /// The files the reports of `stem` write in `out` (each first as a staged file of a new name); apply's reports, the
    /// reviewed ledger it keeps too.
    static func outputs(out: String, stem: String) -> [String] {
        Format.allCases.map { "\(out)/\(fileName($0, stem: stem))" } + (stem == "report" ? ["\(out)/\(reviewedLedger)"] : [])
    }

    /// The plan's ledger as it was reviewed, kept beside apply's ledger.csv (`writeReviewedLedger`).
    static let reviewedLedger = "plan-ledger.csv"

    /// Writes the plan's ledger as `plan-ledger.csv` in `folder` from the store, as a run's apply starts (its first session,
    /// every action still as planned): the same file the plan wrote as ledger.csv, which apply's outcomes replace in any
    /// later session that writes its reports there. From the store rather than that file, which may not be the plan's
    /// (another run's, or anything so named); masked as the plan's reports were.
    func writeReviewedLedger(in folder: String) throws -> String {
        try write(.csv, to: "\(folder)/\(Self.reviewedLedger)")
    }

    /// The four files at once, each read on its own connection to the store. They replace the previous ones only when
    /// all four were rendered whole: one that fails leaves the others as they were too, never a new ledger beside the
    /// plan it does not belong to.
    func writeAll() throws -> [String] {
        let formats = Format.allCases
        let results = WorkerPool(width: formats.count).map(formats.count) { index -> Result<Rendered, any Error> in
            Result {
                var writer = self
                if index > 0 && store.path != ":memory:" { writer.store = try StateStore(readingFrom: store.path) }
                return try writer.stage(formats[index])
            }
        }
        let rendered = results.compactMap { try? $0.get() }
        if rendered.count < results.count {
            for report in rendered { report.discard() }
            for result in results { _ = try result.get() }
        }
        // A rename that fails (rare: the staged file sits beside its target) leaves the rest unpublished and removed.
        for (index, report) in rendered.enumerated() {
            do { try report.publish() } catch {
                for rest in rendered[(index + 1)...] { rest.discard() }
                throw error
            }
        }
        sayLeftoversRemoved(beside: rendered.filter { $0.staged != nil }.map(\.target))
        return rendered.map(\.target)
    }

    private func sayLeftoversRemoved(beside targets: [String]) {
        for path in LeftoverReports.remove(beside: targets) {
            Console.error("idpipe: removed \(path), a report left half written by a run that was stopped")
        }
    }

    /// A report rendered whole: staged beside its target until `publish` renames it over it, or written through a
    /// target that is not a file (then there is nothing left to do).
    struct Rendered {
        let target: String
        let staged: String?
        /// Held until the staged file is renamed or removed: what `LeftoverReports` sees unlocked is no live run's.
        let lock: StagedReportLock?

        func publish() throws {
            defer { lock?.release() }
            guard let staged, rename(staged, target) != 0 else { return }
            let reason = String(cString: strerror(errno))
            unlink(staged)
            throw CommandError("cannot write \(target): \(reason)")
        }

        func discard() {
            if let staged { unlink(staged) }
            lock?.release()
        }
    }

    /// Writes one report. A file is written beside its target (`plan.md.idpipe-partial.XXXXXX`, a name of its own) and
    /// renamed over it once whole: a run stopped while writing, or a full disk, leaves the report as it was, never a
    /// truncated one that reads as complete to a reviewer. A target that is not itself a file (a symlink, a device,
    /// `--output /dev/stdout`, `/dev/fd/3`) is written in place, through it.
    func write(_ format: Format, to path: String? = nil) throws -> String {
        let report = try stage(format, to: path)
        try report.publish()
        if report.staged != nil { sayLeftoversRemoved(beside: [report.target]) }
        return report.target
    }

    /// Renders one report to its staged file (or through its target); see `write`.
    func stage(_ format: Format, to path: String? = nil) throws -> Rendered {
        let target = path ?? "\(out)/\(fileName(format))"
        // Written through a link to the store (or its WAL), the report replaced it.
        if let identity = FileInfo.identity(target), StateStore.databaseFiles(at: store.path).contains(where: { FileInfo.identity($0) == identity }) {
            throw CommandError("cannot write \(target): it is the state store the report is read from (or its WAL)")
        }
        if case .notGiven(let descriptor) = FileInfo.kind(target) {
            throw CommandError("cannot write \(target): descriptor \(descriptor) was not open when idpipe started; open it in the shell (\(descriptor)> file)")
        }
        let staged = FileInfo.isPlainFileOrMissing(target)
        let body = streamed.flatMap { format == .json ? $0.json : format == .csv ? $0.ledger : nil }
        // A body the plan wrote as it went becomes the report where it lies, once named; else it is copied.
        // Personal data shown: readable by the owner only.
        let named = staged ? body?.name(beside: target, privately: reveal) : nil
        let file = try named ?? (staged ? FileOutput(stagedBeside: target, privately: reveal) : FileOutput(path: target))
        var stream = file
        do {
            if let body {
                if named == nil { try body.copy(into: file) }
                try finish(format, into: &stream)
            } else {
                try render(format, into: &stream)
            }
            try file.close()
        } catch {
            try? file.close()
            if staged { unlink(file.path) }
            file.lock?.release()
            throw error
        }
        return Rendered(target: target, staged: staged ? file.path : nil, lock: file.lock)
    }

    /// What follows the accounts in a streamed plan.json (the quarantine, the run, the totals), or in the ledger (nothing).
    private func finish(_ format: Format, into stream: inout some TextOutputStream) throws {
        guard format == .json, let streamed else { return }
        try JSONReport(source: source, masking: Masking(reveal: reveal)).renderTail(accounts: streamed.accounts, into: &stream)
    }

    /// The store, with the account lists gathered as the plan went when there are some.
    private var source: any ReportSource {
        guard let streamed else { return store }
        return GatheredListsSource(base: store, lists: streamed.lists)
    }

    func render(_ format: Format, into stream: inout some TextOutputStream) throws {
        let masking = Masking(reveal: reveal)
        switch format {
        case .md: try MarkdownReport(source: source, masking: masking, listLimit: listLimit).render(into: &stream)
        case .json: try JSONReport(source: source, masking: masking).render(into: &stream)
        case .csv: try CSVLedger(source: source, masking: masking).render(into: &stream)
        case .quarantine: try QuarantineCSV.render(source, masking: masking, into: &stream)
        }
    }
}

/// The lock of a report being written under a staged name (`NAME.idpipe-partial.XXXXXX`): an exclusive `flock` on its own
/// descriptor, taken as the file is made and held until it is renamed or removed. A run killed meanwhile leaves the
/// file unlocked, which is how `LeftoverReports` tells it from one that another run is still writing.
final class StagedReportLock: @unchecked Sendable {
    private var descriptor: Int32

    init(_ file: Int32) {
        descriptor = dup(file)
        if descriptor >= 0 { flock(descriptor, LOCK_EX | LOCK_NB) }
    }

    /// Once only (from the thread that publishes); the file's other descriptors may stay open, the lock goes now.
    func release() {
        guard descriptor >= 0 else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}

/// Removes what runs killed while writing their reports left beside them (`plan.json.idpipe-partial.Ab3xYz`, a whole
/// account list unfinished): after a run has written its own, the staged files of the same reports that no run holds
/// locked (`StagedReportLock`). One made in the last seconds is left, as it may not be locked yet.
enum LeftoverReports {
    static let minimumAge: Int = 2
    /// Between a report's name and the six letters of its staged file: a name of idpipe's own (with `.partial.`, a
    /// user's `plan.md.partial.v2copy` was taken for one and removed).
    static let infix = ".idpipe-partial."

    /// The paths removed.
    static func remove(beside targets: [String]) -> [String] {
        var removed: [String] = []
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        for target in targets {
            let folder = folder(of: target)
            let prefix = (target.split(separator: "/").last.map(String.init) ?? target) + infix
            for name in FileInfo.names(in: folder) where isStagedName(name, prefix: prefix) {
                let path = folder + "/" + name
                if removeIfLeft(path, before: now.tv_sec - minimumAge) { removed.append(path) }
            }
        }
        return removed.sorted()
    }

    /// `PREFIX` and six letters or digits, as `mkstemp` and `ReportBody.name` make them.
    static func isStagedName(_ name: String, prefix: String) -> Bool {
        guard name.hasPrefix(prefix) else { return false }
        let suffix = name.utf8.dropFirst(prefix.utf8.count)
        return suffix.count == 6 && suffix.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
    }

    private static func removeIfLeft(_ path: String, before time: Int) -> Bool {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var opened = stat(), named = stat()
        guard fstat(descriptor, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG, opened.st_mtim.tv_sec < time,
              flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return false }
        // Still the file that was opened and found unlocked.
        guard lstat(path, &named) == 0, named.st_dev == opened.st_dev, named.st_ino == opened.st_ino else { return false }
        return unlink(path) == 0
    }
}
