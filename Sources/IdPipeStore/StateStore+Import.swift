import GRDB
import IdPipeCore

/// Apply's import of the import file (`stages.import`): its requests and the accounts they did not import.
extension StateStore {
    /// Every request, in file order (none before the first apply has split the file).
    public func importRequests() throws -> [ImportRequest] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT id, start_offset, end_offset, users, state FROM import_request ORDER BY id").map { row in
                guard let state = ActionState(rawValue: row["state"]) else {
                    throw StoreError.corrupt("import request \(row["id"] as Int64) has state '\(row["state"] as String)'")
                }
                return ImportRequest(id: row["id"], start: row["start_offset"], end: row["end_offset"], users: row["users"], state: state)
            }
        }
    }

    /// Records the requests the import file splits into, all planned, in one transaction; refused when some are there.
    public func planImportRequests(_ requests: [ImportRequest]) throws {
        try queue.write { db in
            guard try Int.fetchOne(db, sql: "SELECT count(*) FROM import_request") == 0 else {
                throw StoreError.corrupt("the import's requests are recorded already")
            }
            let insert = try db.cachedStatement(sql: "INSERT INTO import_request (id, start_offset, end_offset, users, state) VALUES (?, ?, ?, ?, 'planned')")
            for request in requests {
                try insert.execute(arguments: [request.id, request.start, request.end, request.users])
            }
        }
    }

    /// Written before the request goes out: a run killed then sends it again (an import overwrites the accounts it made).
    /// `kept`: the accounts it leaves out, their uid, email, phone number or link being in the project already (given at
    /// its first sending only), in the same transaction: a request sent again leaves out the same ones (`keptExisting`),
    /// as the accounts it made are in the project by then.
    public func markImportSent(_ id: Int64, at: Int64, kept: [ImportFailure] = []) async throws {
        try await queue.write { db in
            try db.execute(sql: """
                UPDATE import_request SET state = 'sent', attempts = attempts + 1, first_sent_at = coalesce(first_sent_at, ?) WHERE id = ?
                """, arguments: [at, id])
            try Self.insertFailures(db, request: id, kept, existing: true)
        }
    }

    /// The positions in request `id` of the accounts it leaves out for the project's accounts (`markImportSent`).
    public func keptExisting(request id: Int64) throws -> Set<Int> {
        try queue.read { db in
            Set(try Int.fetchAll(db, sql: "SELECT position FROM import_failure WHERE request = ? AND existing = 1", arguments: [id]))
        }
    }

    /// A request answered: done, with the accounts the API refused, in one transaction.
    public func finishImport(_ id: Int64, refused failures: [ImportFailure], at: Int64) async throws {
        try await queue.write { db in
            try db.execute(sql: "DELETE FROM import_failure WHERE request = ? AND existing = 0", arguments: [id])
            try Self.insertFailures(db, request: id, failures, existing: false)
            try db.execute(sql: "UPDATE import_request SET state = 'done', finished_at = ? WHERE id = ?", arguments: [at, id])
        }
    }

    private static func insertFailures(_ db: Database, request id: Int64, _ failures: [ImportFailure], existing: Bool) throws {
        guard !failures.isEmpty else { return }
        let insert = try db.cachedStatement(sql: """
            INSERT INTO import_failure (request, position, uid, message, existing, clash_field, clash_uid) VALUES (?, ?, ?, ?, ?, ?, ?)
            """)
        for failure in failures {
            try insert.execute(arguments: [id, failure.position, failure.uid, failure.message, existing ? 1 : 0,
                                           failure.clash?.field, failure.clash?.projectUid])
        }
    }

    /// Closes the open name updates once every request is final: the names went in with the imported accounts (the
    /// import file holds them), so nothing more is sent; an account the import did not take fails its update, with why.
    /// Returns how many were closed.
    public func closeNameUpdatesByImport(at: Int64) async throws -> Int {
        try await queue.write { db in
            let open = "kind = '\(ActionKind.updateName.rawValue)' AND state IN \(Self.openStates)"
            try db.execute(sql: """
                UPDATE action SET state = 'failed', finished_at = ?, updated_at = ?,
                  reason = 'not imported: ' || (SELECT f.message FROM import_failure f WHERE f.uid = action.uid ORDER BY f.request LIMIT 1)
                WHERE \(open) AND uid IN (SELECT uid FROM import_failure)
                """, arguments: [at, at])
            var closed = db.changesCount
            try db.execute(sql: """
                UPDATE action SET state = 'done', result = 'imported with this name', finished_at = ?, updated_at = ? WHERE \(open)
                """, arguments: [at, at])
            closed += db.changesCount
            return closed
        }
    }

    /// Where the import stands, with the first `limit` refused accounts; nil when the run has no import requests.
    public func importSummary(limit: Int) throws -> ImportSummary? {
        try queue.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT state, count(*) AS n, sum(users) AS users, sum(attempts > 1) AS resent FROM import_request GROUP BY state")
            guard !rows.isEmpty else { return nil }
            var summary = ImportSummary()
            for row in rows {
                guard let state = ActionState(rawValue: row["state"]) else { continue }
                let users: Int = row["users"]
                summary.requests[state] = row["n"]
                summary.users += users
                summary.resentRequests += row["resent"] as Int
                if state == .done { summary.usersInDoneRequests += users }
            }
            // The accounts kept count once their request is done: before, it may not have gone yet.
            let done = "request IN (SELECT id FROM import_request WHERE state = 'done')"
            summary.refused = try Int.fetchOne(db, sql: "SELECT count(*) FROM import_failure WHERE existing = 0") ?? 0
            let kept = "existing = 1 AND clash_field IS NULL AND \(done)", clashing = "existing = 1 AND clash_field IS NOT NULL AND \(done)"
            summary.keptExisting = try Int.fetchOne(db, sql: "SELECT count(*) FROM import_failure WHERE \(kept)") ?? 0
            for row in try Row.fetchAll(db, sql: "SELECT clash_field, count(*) AS n FROM import_failure WHERE \(clashing) GROUP BY clash_field") {
                summary.clashingByField[row["clash_field"]] = row["n"]
            }
            func first(_ condition: String) throws -> [ImportFailure] {
                try Row.fetchAll(db, sql: """
                    SELECT position, uid, message, clash_field, clash_uid FROM import_failure WHERE \(condition) ORDER BY request, position LIMIT ?
                    """, arguments: [limit]).map { row in
                    let field: String? = row["clash_field"]
                    return ImportFailure(position: row["position"], uid: row["uid"], message: row["message"],
                                         clash: field.map { ImportClash(field: $0, projectUid: row["clash_uid"]) })
                }
            }
            summary.firstRefused = try first("existing = 0")
            summary.firstKept = try first(kept)
            summary.firstClashing = try first(clashing)
            return summary
        }
    }
}
