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

    static let partialSuffix = ".partial"

    /// Every file the reports of `stem` write in `out`, staged ones included.
    static func outputs(out: String, stem: String) -> [String] {
        Format.allCases.flatMap { format in ["\(out)/\(fileName(format, stem: stem))", "\(out)/\(fileName(format, stem: stem))\(partialSuffix)"] }
    }

    /// The three files at once, each read on its own connection to the store.
    func writeAll() throws -> [String] {
        let formats = Format.allCases
        let written = WorkerPool(width: formats.count).map(formats.count) { index -> Result<String, any Error> in
            Result {
                var writer = self
                if index > 0 && store.path != ":memory:" { writer.store = try StateStore(readingFrom: store.path) }
                return try writer.write(formats[index])
            }
        }
        return try written.map { try $0.get() }
    }

    /// Writes one report. A file is written beside its target (`plan.md.partial`) and renamed over it once whole:
    /// a run stopped while writing, or a full disk, leaves the report as it was, never a truncated one that reads as
    /// complete to a reviewer. A target that is not a file (`--output /dev/stdout`) is written in place.
    func write(_ format: Format, to path: String? = nil) throws -> String {
        let target = path ?? "\(out)/\(fileName(format))"
        let staged: String
        switch FileInfo.kind(target) {
        case .missing, .file: staged = target + Self.partialSuffix
        case let kind where kind.problem != nil: throw CommandError("cannot write \(target): it \(kind.problem ?? "")")
        default: staged = target
        }
        let file = try FileOutput(path: staged)
        var stream = file
        do {
            try render(format, into: &stream)
            try file.close()
            if staged != target && rename(staged, target) != 0 {
                throw CommandError("cannot write \(target): \(String(cString: strerror(errno)))")
            }
        } catch {
            try? file.close()
            if staged != target { unlink(staged) }
            throw error
        }
        return target
    }

    func render(_ format: Format, into stream: inout some TextOutputStream) throws {
        let masking = Masking(reveal: reveal)
        switch format {
        case .md: try MarkdownReport(source: store, masking: masking, listLimit: listLimit).render(into: &stream)
        case .json: try JSONReport(source: store, masking: masking).render(into: &stream)
        case .csv: try CSVLedger(source: store, masking: masking).render(into: &stream)
        }
    }
}
