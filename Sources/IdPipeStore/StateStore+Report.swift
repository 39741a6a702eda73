import GRDB
import IdPipeCore

extension StateStore: ReportSource {
    public func run() throws -> RunRecord {
        guard let run = try loadRun() else { throw StoreError.corrupt("it holds no run (was `idpipe plan` run with this --state?)") }
        return run
    }

    public func tally() throws -> Tally {
        try loadCheckpoint()?.tally ?? Tally()
    }

    static func condition(_ list: AccountList?) -> String {
        switch list {
        case nil: "1"
        case .consentReview?: "a.consent_review IS NOT NULL"
        case .nameFill?: "a.name_outcome LIKE 'fill from %'"
        case .selected?: "a.selection = 'selected'"
        case .protected?: "a.selection = 'protected'"
        }
    }

    public func count(_ list: AccountList) throws -> Int {
        try queue.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM account a WHERE \(Self.condition(list))") ?? 0
        }
    }

    public func accounts(_ list: AccountList?, limit: Int?, _ body: (ReportAccount) throws -> Void) throws {
        try queue.read { db in
            let sql = """
                SELECT a.*, (SELECT value FROM action x WHERE x.seq = a.seq AND x.kind = 'update-name') AS new_name
                FROM account a WHERE \(Self.condition(list)) ORDER BY a.seq \(limit.map { "LIMIT \($0)" } ?? "")
                """
            let rows = try Row.fetchCursor(db, sql: sql)
            while let row = try rows.next() {
                try body(ReportAccount(
                    sequence: row["seq"], uid: row["uid"], file: row["file"], line: row["line"], relay: row["relay"],
                    consentReview: row["consent_review"], selection: row["selection"], selectionDetail: row["selection_detail"],
                    nameOutcome: row["name_outcome"], email: row["email"], displayName: row["display_name"], phone: row["phone"],
                    providers: row["providers"], deletionRequest: row["deletion_request"], newName: row["new_name"]))
            }
        }
    }

    public func actions(limit: Int?, _ body: (ReportAction) throws -> Void) throws {
        try queue.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM action ORDER BY seq, step \(limit.map { "LIMIT \($0)" } ?? "")")
            while let row = try rows.next() {
                try body(ReportAction(sequence: row["seq"], uid: row["uid"], kind: row["kind"], state: row["state"], detail: row["detail"],
                                      reason: row["reason"], value: row["value"], attempts: row["attempts"]))
            }
        }
    }

    public func quarantine(limit: Int?, _ body: (Int64, QuarantineEntry) throws -> Void) throws {
        try queue.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM quarantine ORDER BY seq \(limit.map { "LIMIT \($0)" } ?? "")")
            while let row = try rows.next() {
                let position = SourcePosition(file: row["file"], line: row["line"])
                try body(row["seq"], QuarantineEntry(position: position, localId: row["uid"], field: row["field"], reason: row["reason"]))
            }
        }
    }
}
