import GRDB
import IdPipeCore

extension StateStore {
    /// SQL lists of kinds or states, from the enums themselves.
    static func sqlList<T: RawRepresentable>(_ values: [T]) -> String where T.RawValue == String {
        "(" + values.map { "'\($0.rawValue)'" }.joined(separator: ", ") + ")"
    }

    static let deletionKinds = sqlList(ActionKind.allCases.filter(\.isDeletion))
    static let openStates = sqlList(ActionState.allCases.filter(\.isOpen))
    static let pathKinds = sqlList(ActionKind.allCases.filter(\.isPathDeletion))
    /// A path deletion apply has not started: the dry run counts its data.
    private static let plannedPathDeletion = "kind IN \(pathKinds) AND state = 'planned'"
    /// A planned path deletion the dry run has not counted yet.
    static let uncounted = "\(plannedPathDeletion) AND dry_detail IS NULL"
    /// A planned path deletion whose count gave up on passing faults: the next plan or resume counts it again.
    static let recountable = "\(plannedPathDeletion) AND dry_retry = 1"

    /// Starts an apply session. Actions left `sent` by an earlier process are counted as resent now:
    /// they will be sent again (they are idempotent), and the report says how many.
    public func beginApplySession(command: String, at: Int64) async throws -> (session: Int64, resent: Int) {
        try await queue.write { db in
            try db.execute(sql: "UPDATE action SET resent = resent + 1 WHERE state = 'sent'")
            let resent = db.changesCount
            try db.execute(sql: "INSERT INTO apply_session (command, started_at, resent, idpipe_version) VALUES (?, ?, ?, ?)",
                           arguments: [command, at, resent, IdPipeVersion.text])
            return (db.lastInsertedRowID, resent)
        }
    }

    public func endApplySession(_ session: Int64, at: Int64, outcome: String) async throws {
        try await queue.write { db in
            try db.execute(sql: "UPDATE apply_session SET ended_at = ?, outcome = ? WHERE id = ?", arguments: [at, outcome, session])
        }
    }

    /// The sequence numbers of the next `limit` accounts after a sequence number that have an open action; read along
    /// the (seq, kind) index, a page at a time (see migration v7-no-state-index).
    static let pendingSequencesSQL = "SELECT seq FROM action WHERE seq > ? AND state IN \(openStates) GROUP BY seq ORDER BY seq LIMIT ?"

    /// The next accounts (in input order, after `sequence`) that still have an open action, with all their actions.
    public func pendingAccounts(after sequence: Int64, limit: Int) async throws -> [PendingAccount] {
        try await queue.read { db in
            let sequences = try Int64.fetchAll(db, sql: Self.pendingSequencesSQL, arguments: [sequence, limit])
            guard let first = sequences.first, let last = sequences.last else { return [] }
            let wanted = Set(sequences)
            var accounts: [PendingAccount] = []
            let rows = try Row.fetchCursor(db, sql: """
                SELECT x.id, x.seq, x.uid, x.kind, x.state, x.detail, x.reason, x.value, x.first_sent_at, a.selection
                FROM action x JOIN account a ON a.seq = x.seq WHERE x.seq BETWEEN ? AND ? ORDER BY x.seq, x.step
                """, arguments: [first, last])
            while let row = try rows.next() {
                let seq: Int64 = row["seq"]
                guard wanted.contains(seq) else { continue }
                guard let kind = ActionKind(rawValue: row["kind"]), let state = ActionState(rawValue: row["state"]) else {
                    throw StoreError.corrupt("action \(row["id"] as Int64) has kind '\(row["kind"] as String)' and state '\(row["state"] as String)'")
                }
                let action = PendingAction(id: row["id"], kind: kind, state: state, detail: row["detail"], reason: row["reason"],
                                           value: row["value"], firstSentAt: row["first_sent_at"])
                if accounts.last?.sequence == seq {
                    accounts[accounts.count - 1].actions.append(action)
                } else {
                    accounts.append(PendingAccount(sequence: seq, uid: row["uid"], selected: (row["selection"] as String) == "selected", actions: [action]))
                }
            }
            return accounts
        }
    }

    /// Accounts whose deletion has started (or ended) in this run: what a deletion cap counts.
    public func deletionsStarted() async throws -> Int {
        try await queue.read { db in
            try Int.fetchOne(db, sql: """
                SELECT count(DISTINCT seq) FROM action WHERE kind IN \(Self.deletionKinds) AND state IN ('sent', 'done', 'failed')
                """) ?? 0
        }
    }

    /// Writes a group of state changes in one transaction. `sent` counts an attempt and keeps the first send time.
    public func record(_ updates: [ActionUpdate]) async throws {
        guard !updates.isEmpty else { return }
        try await queue.write { db in
            let sent = try db.cachedStatement(sql: """
                UPDATE action SET state = 'sent', attempts = attempts + 1, first_sent_at = coalesce(first_sent_at, ?), updated_at = ? WHERE id = ?
                """)
            let final = try db.cachedStatement(sql: """
                UPDATE action SET state = ?, result = ?, reason = coalesce(?, reason), policy = coalesce(?, policy), finished_at = ?, updated_at = ?,
                  deleted_count = coalesce(?, deleted_count)
                WHERE id = ?
                """)
            for update in updates {
                if update.state == .sent {
                    try sent.execute(arguments: [update.at, update.at, update.id])
                } else {
                    try final.execute(arguments: [update.state.rawValue, update.result, update.reason, update.policy, update.at, update.at,
                                                  update.count, update.id])
                }
            }
        }
    }

    // MARK: - The dry run's data counts

    /// Planned path deletions (after `id`, in id order) that the dry run has not counted yet.
    public func uncountedPathActions(after id: Int64, limit: Int) async throws -> [UncountedAction] {
        try await queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, uid, kind FROM action WHERE id > ? AND \(Self.uncounted) ORDER BY id LIMIT ?
                """, arguments: [id, limit]).compactMap { row in
                ActionKind(rawValue: row["kind"]).map { UncountedAction(id: row["id"], uid: row["uid"], kind: $0) }
            }
        }
    }

    /// How many planned path deletions are still uncounted.
    public func uncountedPathActionCount() throws -> Int {
        try queue.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM action WHERE \(Self.uncounted)") ?? 0
        }
    }

    /// Counts that gave up on passing faults in an earlier run and can be tried again (still planned).
    public func recountableActionCount() throws -> Int {
        try queue.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM action WHERE \(Self.recountable)") ?? 0
        }
    }

    /// Makes the counts that gave up on passing faults uncounted again, so this run's survey tries them; returns how many.
    public func reopenRecountableActions() throws -> Int {
        try queue.write { db in
            try db.execute(sql: "UPDATE action SET dry_detail = NULL, dry_retry = NULL WHERE \(Self.recountable)")
            return db.changesCount
        }
    }

    /// Writes the dry run's counts (or why counting failed) in one transaction.
    public func recordSurvey(_ results: [DataSurveyResult]) async throws {
        guard !results.isEmpty else { return }
        try await queue.write { db in
            let statement = try db.cachedStatement(sql: "UPDATE action SET dry_count = ?, dry_detail = ?, dry_retry = ? WHERE id = ?")
            for result in results {
                switch result.counts {
                case .success(let counts):
                    try statement.execute(arguments: [PathCount.total(counts), PathCount.describe(counts), nil as Int?, result.id])
                case .failure(let failure):
                    try statement.execute(arguments: [nil as Int?, "not counted: " + failure.reason, failure.retryable ? 1 : nil, result.id])
                }
            }
        }
    }

    /// An apply session's traffic so far (the figures replace the last ones saved for the session).
    public func saveTraffic(session: Int64, _ traffic: [ServiceTraffic]) async throws {
        try await saveTraffic(table: "service_stats", session: session, traffic)
    }

    /// A new number for this process's counts of the data paths.
    public func beginSurveySession() async throws -> Int64 {
        try await queue.read { db in try Int64.fetchOne(db, sql: "SELECT coalesce(max(session), 0) + 1 FROM survey_traffic") ?? 1 }
    }

    /// The traffic of the data counts so far in this process; services it did not use are left out.
    public func saveSurveyTraffic(session: Int64, _ traffic: [ServiceTraffic]) async throws {
        try await saveTraffic(table: "survey_traffic", session: session, traffic.filter { $0.requests > 0 })
    }

    private func saveTraffic(table: String, session: Int64, _ traffic: [ServiceTraffic]) async throws {
        try await queue.write { db in
            for entry in traffic {
                try db.execute(sql: """
                    INSERT INTO \(table) (session, service, requests, retries, throttled, failures) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT(session, service) DO UPDATE SET requests = excluded.requests, retries = excluded.retries,
                      throttled = excluded.throttled, failures = excluded.failures
                    """, arguments: [session, entry.service, entry.requests, entry.retries, entry.throttled, entry.failures])
            }
        }
    }

    /// How many accounts have an action done and another still open (planned, or sent without an answer): a stop
    /// between the steps of an account left its data deleted, or a token revoked, and the account still there.
    public func partlyDoneAccountCount() throws -> Int {
        try queue.read { db in
            try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM (SELECT seq FROM action GROUP BY seq
                  HAVING SUM(state = 'done') > 0 AND SUM(state IN ('planned', 'sent')) > 0)
                """) ?? 0
        }
    }

    /// How many actions of each kind are in each state now.
    public func actionStates() throws -> [ActionKind: [ActionState: Int]] {
        try queue.read { db in
            var result: [ActionKind: [ActionState: Int]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT kind, state, count(*) AS n FROM action GROUP BY kind, state") {
                guard let kind = ActionKind(rawValue: row["kind"]), let state = ActionState(rawValue: row["state"]) else { continue }
                result[kind, default: [:]][state] = row["n"]
            }
            return result
        }
    }
}
