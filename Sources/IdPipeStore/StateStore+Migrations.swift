import GRDB

extension StateStore {
    /// Named migrations. A released migration is never edited: a schema change is a new migration.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-plan") { db in
            try db.execute(sql: """
                CREATE TABLE run (id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL);
                CREATE TABLE checkpoint (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    input TEXT NOT NULL,
                    input_prefix_sha256 TEXT NOT NULL,
                    tally TEXT NOT NULL,
                    next_sequence INTEGER NOT NULL,
                    import_length INTEGER NOT NULL DEFAULT 0
                );
                -- Only noteworthy accounts (actions, review, selection) get a row; the rest are counted in the tally.
                CREATE TABLE account (
                    seq INTEGER PRIMARY KEY,
                    uid TEXT NOT NULL,
                    file TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    relay TEXT,
                    consent_review TEXT,
                    selection TEXT NOT NULL,
                    selection_detail TEXT,
                    name_outcome TEXT,
                    email TEXT,
                    display_name TEXT,
                    phone TEXT,
                    providers TEXT NOT NULL,
                    deletion_request TEXT
                );
                CREATE INDEX account_uid ON account (uid);
                -- Every remote action, planned → sent → done/failed (or not-possible / blocked from the start).
                CREATE TABLE action (
                    id INTEGER PRIMARY KEY,
                    seq INTEGER NOT NULL REFERENCES account (seq),
                    uid TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    step INTEGER NOT NULL,
                    state TEXT NOT NULL,
                    detail TEXT NOT NULL,
                    reason TEXT,
                    value TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    updated_at INTEGER NOT NULL,
                    UNIQUE (seq, kind)
                );
                CREATE INDEX action_state ON action (state, kind);
                CREATE TABLE quarantine (
                    seq INTEGER PRIMARY KEY,
                    file TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    uid TEXT,
                    field TEXT NOT NULL,
                    reason TEXT NOT NULL
                );
                -- 64-bit hashes of the account ids seen so far, one blob per batch, for duplicate detection on resume.
                CREATE TABLE seen_ids (batch INTEGER PRIMARY KEY, hashes BLOB NOT NULL);
                """)
        }
        return migrator
    }
}
