import IdPipeCore
import IdPipeStore

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
        switch format {
        case .md: "\(stem).md"
        case .json: "\(stem).json"
        case .csv: "ledger.csv"
        }
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

    func write(_ format: Format, to path: String? = nil) throws -> String {
        let target = path ?? "\(out)/\(fileName(format))"
        let file = try FileOutput(path: target)
        var stream = file
        do {
            try render(format, into: &stream)
        } catch {
            try? file.close()
            throw error
        }
        try file.close()
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
