import IdPipeCore
import IdPipeExtract
import IdPipeStore
#if canImport(Glibc)
import Glibc
#endif

/// Writes the three reports of a run from its state store.
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
    }

    func fileName(_ format: Format) -> String {
        Self.fileName(format, stem: stem)
    }

    static func fileName(_ format: Format, stem: String) -> String {
        switch format {
        case .md: "\(stem).md"
        case .json: "\(stem).json"
        case .csv: "ledger.csv"
        }
    }

    /// The files the reports of `stem` write in `out` (each first as a staged file of a new name).
    static func outputs(out: String, stem: String) -> [String] {
        Format.allCases.map { "\(out)/\(fileName($0, stem: stem))" }
    }

    /// The three files at once, each read on its own connection to the store. They replace the previous three only
    /// when all three were rendered whole: one that fails leaves the others as they were too, never a new ledger
    /// beside the plan it does not belong to.
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
        return rendered.map(\.target)
    }

    /// A report rendered whole: staged beside its target until `publish` renames it over it, or written through a
    /// target that is not a file (then there is nothing left to do).
    struct Rendered {
        let target: String
        let staged: String?

        func publish() throws {
            guard let staged, rename(staged, target) != 0 else { return }
            let reason = String(cString: strerror(errno))
            unlink(staged)
            throw CommandError("cannot write \(target): \(reason)")
        }

        func discard() {
            if let staged { unlink(staged) }
        }
    }

    /// Writes one report. A file is written beside its target (`plan.md.partial.XXXXXX`, a name of its own) and
    /// renamed over it once whole: a run stopped while writing, or a full disk, leaves the report as it was, never a
    /// truncated one that reads as complete to a reviewer. A target that is not itself a file (a symlink, a device,
    /// `--output /dev/stdout`, `/dev/fd/3`) is written in place, through it.
    func write(_ format: Format, to path: String? = nil) throws -> String {
        let report = try stage(format, to: path)
        try report.publish()
        return report.target
    }

    /// Renders one report to its staged file (or through its target); see `write`.
    func stage(_ format: Format, to path: String? = nil) throws -> Rendered {
        let target = path ?? "\(out)/\(fileName(format))"
        if case .notGiven(let descriptor) = FileInfo.kind(target) {
            throw CommandError("cannot write \(target): descriptor \(descriptor) was not open when idpipe started; open it in the shell (\(descriptor)> file)")
        }
        let staged = FileInfo.isPlainFileOrMissing(target)
        let body = streamed.flatMap { format == .json ? $0.json : format == .csv ? $0.ledger : nil }
        // A body the plan wrote as it went becomes the report where it lies, once named; else it is copied.
        let named = staged ? body?.name(beside: target) : nil
        let file = try named ?? (staged ? FileOutput(stagedBeside: target) : FileOutput(path: target))
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
            throw error
        }
        return Rendered(target: target, staged: staged ? file.path : nil)
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
        }
    }
}
