import GRDB
import IdPipeCore

extension StateStore: ReportSource {
    public func run() throws -> RunRecord {
        guard let run = try loadRun() else { throw StoreError.corrupt("it holds no run (was `idpipe plan` run with this --state?)") }
        return run
    }

    /// The totals only (the checkpoint's seen-id hashes are for resuming a plan, not for reports).
    public func tally() throws -> Tally {
        try queue.read { db in
            try String.fetchOne(db, sql: "SELECT tally FROM checkpoint WHERE id = 1").map { try JSONCoding.decode(Tally.self, $0) } ?? Tally()
        }
    }

    static func condition(_ list: AccountList?) -> String {
        switch list {
        case nil: "1"
        case .consentReview?: "a.consent_review IS NOT NULL"
        case .nameFill?: "a.name_outcome LIKE 'fill from %'"
        case .selected?: "a.selection = 'selected'"
        case .protected?: "a.selection = 'protected'"
        case .filteredByProvider?: "a.selection = 'filtered-by-provider'"
        case .requestNotActedOn?: "a.deletion_request IS NOT NULL AND a.selection = 'not-selected'"
        case .repaired?: "a.repairs != 0"
        }
    }

    /// One scan of the table for every list: a count each cost the Markdown report a scan of its own.
    public func counts() throws -> [AccountList: Int] {
        let lists = AccountList.allCases
        return try queue.read { db in
            let sums = lists.map { "coalesce(sum(\(Self.condition($0))), 0)" }.joined(separator: ", ")
            guard let row = try Row.fetchOne(db, sql: "SELECT \(sums) FROM account a") else { return [:] }
            return Dictionary(uniqueKeysWithValues: lists.enumerated().map { ($0.element, row[$0.offset] as Int) })
        }
    }

    /// In (seq, step) order, which is the order of the row ids (`commit` writes them so): read in table order, not
    /// through the (seq, kind) index and a sort, which cost each report a lookup per action.
    public func actions(limit: Int?, _ body: (ReportAction) throws -> Void) throws {
        try queue.read { db in
            let rows = try RawRows(db, sql: "SELECT \(Self.actionColumns) FROM action ORDER BY id \(limit.map { "LIMIT \($0)" } ?? "")")
            while try rows.next() { try body(Self.action(rows)) }
        }
    }

    /// Both in one pass: two cursors in sequence order, merged, so memory stays flat however many accounts there are.
    /// Every account is read on a thread of its own, at most about a thousand accounts ahead of `body`.
    public func accountsWithActions(_ list: AccountList?, limit: Int?, _ body: (ReportAccount, [ReportAction]) throws -> Void) throws {
        guard list == nil, limit == nil else {
            return try queue.read { db in try Self.readAccountsWithActions(db, list, limit: limit) { try body($0.0, $0.1) } }
        }
        try ReadAhead<(ReportAccount, [ReportAction])>().run(produce: { [self] emit in
            try queue.read { db in try Self.readAccountsWithActions(db, nil, limit: nil, emit) }
        }) { item in
            try body(item.0, item.1)
        }
    }

    private static func readAccountsWithActions(_ db: Database, _ list: AccountList?, limit: Int?,
                                                _ body: ((ReportAccount, [ReportAction])) throws -> Void) throws {
        let accounts = try RawRows(db, sql: accountSQL(list, limit: limit))
        let listed = list == nil && limit == nil ? "" : "WHERE seq IN (SELECT a.seq \(accountsFrom(list, limit: limit)))"
        let actions = try RawRows(db, sql: "SELECT \(actionColumns) FROM action \(listed) ORDER BY id")
        var next = try actions.next() ? Self.action(actions) : nil
        while try accounts.next() {
            let account = Self.account(accounts)
            var own: [ReportAction] = []
            while let action = next, action.sequence <= account.sequence {
                // Skipping it would drop an action from the reports without a word.
                guard action.sequence == account.sequence else { throw Self.unplaced(action) }
                own.append(action)
                next = try actions.next() ? Self.action(actions) : nil
            }
            try body((account, own))
        }
        if let action = next { throw Self.unplaced(action) }
    }

    /// An action the merge cannot place: its account has no row, or the action table is not in sequence order.
    private static func unplaced(_ action: ReportAction) -> StoreError {
        .corrupt("the \(action.kind) action of account #\(action.sequence) (\(action.uid)) is out of sequence order or has no account row")
    }

    private static func accountSQL(_ list: AccountList?, limit: Int?) -> String {
        """
        SELECT a.seq, a.uid, a.file, a.line, a.relay, a.consent_review, a.selection, a.selection_detail, a.name_outcome, a.email,
               a.display_name, a.phone, a.providers, a.deletion_request, a.repairs
        \(accountsFrom(list, limit: limit))
        """
    }

    private static func accountsFrom(_ list: AccountList?, limit: Int?) -> String {
        "FROM account a WHERE \(condition(list)) ORDER BY a.seq \(limit.map { "LIMIT \($0)" } ?? "")"
    }

    // Rows are read by position (in the order of the SELECT lists): a lookup by name costs more than the value.
    private static func account(_ row: RawRows) -> ReportAccount {
        ReportAccount(
            sequence: row.integer(0), uid: row.string(1), file: row.string(2), line: Int(row.integer(3)), relay: row.text(4),
            consentReview: row.text(5), selection: row.string(6), selectionDetail: row.text(7), nameOutcome: row.text(8), email: row.text(9),
            displayName: row.text(10), phone: row.text(11), providers: row.string(12), deletionRequest: row.text(13),
            repairs: RepairSet(bits: UInt32(truncatingIfNeeded: row.integer(14))))
    }

    private static let actionColumns = "seq, uid, kind, state, detail, reason, value, attempts, result, policy, resent, dry_count, dry_detail, deleted_count"

    private static func action(_ row: RawRows) -> ReportAction {
        ReportAction(sequence: row.integer(0), uid: row.string(1), kind: row.string(2), state: row.string(3), detail: row.string(4),
                     reason: row.text(5), value: row.text(6), attempts: Int(row.integer(7)), result: row.text(8), policy: row.text(9),
                     resent: Int(row.integer(10)), wouldDelete: row.optionalInteger(11).map(Int.init), counted: row.text(12),
                     deleted: row.optionalInteger(13).map(Int.init))
    }

    public func quarantine(limit: Int?, _ body: (Int64, QuarantineEntry) throws -> Void) throws {
        try queue.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM quarantine ORDER BY seq \(limit.map { "LIMIT \($0)" } ?? "")")
            while let row = try rows.next() {
                let position = SourcePosition(file: row["file"], line: row["line"])
                let others = try (row["other_issues"] as String?).map { try JSONCoding.decode([[String]].self, $0) } ?? []
                try body(row["seq"], QuarantineEntry(position: position, localId: row["uid"], field: row["field"], reason: row["reason"],
                                                     otherIssues: try others.map { pair in
                    guard pair.count == 2 else { throw StoreError.corrupt("a quarantined row's other issues are not [field, reason] pairs") }
                    return RecordIssue(field: pair[0], reason: pair[1])
                }))
            }
        }
    }

    public func applySummary() throws -> ApplySummary? {
        try queue.read { db in
            // A session killed before it ended counts until its own last record (not the next session's): of an action, or
            // of an import request.
            let sessions = try Row.fetchAll(db, sql: """
                SELECT s.*, (SELECT max(x.t) FROM (SELECT updated_at AS t FROM action
                                                   UNION ALL SELECT coalesce(finished_at, first_sent_at) FROM import_request) x
                             WHERE x.t >= s.started_at
                               AND x.t < coalesce((SELECT min(n.started_at) FROM apply_session n WHERE n.id > s.id), 9223372036854775807)
                            ) AS last_record
                FROM apply_session s ORDER BY id
                """).map { row in
                ApplySummary.Session(command: row["command"], startedAt: row["started_at"],
                                     endedAt: (row["ended_at"] as Int64?) ?? max(row["started_at"] as Int64, (row["last_record"] as Int64?) ?? 0),
                                     resent: row["resent"], outcome: row["outcome"], idpipeVersion: row["idpipe_version"])
            }
            guard !sessions.isEmpty else { return nil }
            var states: [ActionKind: [ActionState: Int]] = [:]
            var busy: [ActionKind: Double] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT kind, state, count(*) AS n, min(first_sent_at) AS first, max(finished_at) AS last FROM action GROUP BY kind, state
                """) {
                guard let kind = ActionKind(rawValue: row["kind"]), let state = ActionState(rawValue: row["state"]) else { continue }
                states[kind, default: [:]][state] = row["n"]
                if state == .done, let first = row["first"] as Int64?, let last = row["last"] as Int64? {
                    busy[kind] = Double(max(0, last - first)) / 1000
                }
            }
            let kinds = ActionKind.allCases.compactMap { kind in
                states[kind].map { ApplySummary.KindFigures(kind: kind, states: $0, busySeconds: busy[kind] ?? 0) }
            }
            let policies = try Row.fetchAll(db, sql: """
                SELECT kind, policy, state, count(*) AS n FROM action WHERE policy IS NOT NULL GROUP BY kind, policy, state ORDER BY kind, state, policy
                """).map { (kind: $0["kind"] as String, policy: $0["policy"] as String, state: $0["state"] as String, count: $0["n"] as Int) }
            let reasons = try Row.fetchAll(db, sql: """
                SELECT kind, state, coalesce(reason, '') AS reason, count(*) AS n FROM action
                WHERE state IN ('failed', 'not-possible', 'blocked') GROUP BY kind, state, reason ORDER BY kind, state, n DESC, reason
                """).map { (kind: $0["kind"] as String, state: $0["state"] as String, reason: $0["reason"] as String, count: $0["n"] as Int) }
            let traffic = try Self.traffic(db, table: "service_stats")
            return ApplySummary(kinds: kinds, policies: policies, reasons: reasons, traffic: traffic, sessions: sessions)
        }
    }

    public func dataSummary(limit: Int) throws -> DataSummary? {
        try queue.read { db in
            let kindList = Self.pathKinds
            // Per-path totals: one pass over the counted actions, in the order paths were configured.
            var perPath: [ActionKind: [PathCount]] = [:]
            let details = try Row.fetchCursor(db, sql: "SELECT kind, dry_detail FROM action WHERE kind IN \(kindList) AND dry_count IS NOT NULL")
            while let row = try details.next() {
                guard let kind = ActionKind(rawValue: row["kind"]) else { continue }
                for count in PathCount.parse(row["dry_detail"]) {
                    if let i = perPath[kind, default: []].firstIndex(where: { $0.template == count.template }) {
                        perPath[kind]![i].count += count.count
                    } else {
                        perPath[kind, default: []].append(count)
                    }
                }
            }
            var kinds: [DataSummary.Kind] = []
            for row in try Row.fetchAll(db, sql: """
                SELECT kind, count(*) AS planned, count(dry_count) AS counted, coalesce(sum(dry_count), 0) AS would,
                       coalesce(sum(CASE WHEN state = 'done' THEN deleted_count END), 0) AS deleted, sum(state = 'done') AS done,
                       sum(\(Self.uncounted)) AS uncounted
                FROM action WHERE kind IN \(kindList) GROUP BY kind
                """) {
                guard let kind = ActionKind(rawValue: row["kind"]) else { continue }
                kinds.append(DataSummary.Kind(kind: kind, planned: row["planned"], counted: row["counted"], wouldDelete: row["would"],
                                              deleted: row["deleted"], done: row["done"], uncounted: row["uncounted"], perPath: perPath[kind] ?? []))
            }
            guard !kinds.isEmpty else { return nil }
            kinds.sort { $0.kind.order < $1.kind.order }
            let notCounted = try Row.fetchAll(db, sql: """
                SELECT dry_detail AS reason, count(*) AS n FROM action WHERE kind IN \(kindList) AND dry_detail IS NOT NULL AND dry_count IS NULL
                GROUP BY dry_detail ORDER BY n DESC, reason
                """).map { (reason: $0["reason"] as String, count: $0["n"] as Int) }
            let traffic = try Self.traffic(db, table: "survey_traffic")
            guard limit > 0 else { return DataSummary(kinds: kinds, notCounted: notCounted, largest: [], traffic: traffic) }
            let largest = try Row.fetchAll(db, sql: """
                SELECT uid, kind, dry_count, dry_detail FROM action WHERE kind IN \(kindList) AND dry_count > 0
                ORDER BY dry_count DESC, seq, kind LIMIT ?
                """, arguments: [limit]).compactMap { row in
                ActionKind(rawValue: row["kind"]).map { DataSummary.Largest(uid: row["uid"], kind: $0, count: row["dry_count"], detail: row["dry_detail"]) }
            }
            return DataSummary(kinds: kinds, notCounted: notCounted, largest: largest, traffic: traffic)
        }
    }

    /// Requests per service, over every session of the table.
    private static func traffic(_ db: Database, table: String) throws -> [ServiceTraffic] {
        try Row.fetchAll(db, sql: """
            SELECT service, sum(requests) AS requests, sum(retries) AS retries, sum(throttled) AS throttled, sum(failures) AS failures
            FROM \(table) GROUP BY service ORDER BY service
            """).map { ServiceTraffic(service: $0["service"], requests: $0["requests"], retries: $0["retries"], throttled: $0["throttled"], failures: $0["failures"]) }
    }
}
