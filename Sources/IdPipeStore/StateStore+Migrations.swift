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
        migrator.registerMigration("v2-apply") { db in
            try db.execute(sql: """
                -- What apply made of each action: the outcome of a done action, the rule that let a deletion through,
                -- when it was first sent and finished, and how often it was sent again after a crash.
                ALTER TABLE action ADD COLUMN result TEXT;
                ALTER TABLE action ADD COLUMN policy TEXT;
                ALTER TABLE action ADD COLUMN first_sent_at INTEGER;
                ALTER TABLE action ADD COLUMN finished_at INTEGER;
                ALTER TABLE action ADD COLUMN resent INTEGER NOT NULL DEFAULT 0;
                -- One row per apply/run/resume process, with the traffic of each service it used.
                CREATE TABLE apply_session (
                    id INTEGER PRIMARY KEY,
                    command TEXT NOT NULL,
                    started_at INTEGER NOT NULL,
                    ended_at INTEGER,
                    resent INTEGER NOT NULL DEFAULT 0,
                    outcome TEXT
                );
                CREATE TABLE service_stats (
                    session INTEGER NOT NULL REFERENCES apply_session (id),
                    service TEXT NOT NULL,
                    requests INTEGER NOT NULL,
                    retries INTEGER NOT NULL,
                    throttled INTEGER NOT NULL,
                    failures INTEGER NOT NULL,
                    PRIMARY KEY (session, service)
                );
                """)
        }
        migrator.registerMigration("v3-data") { db in
            try db.execute(sql: """
                -- Deletions of configured data paths: what the dry run found (a total, and per path or why it could not
                -- count), and what apply then deleted.
                ALTER TABLE action ADD COLUMN dry_count INTEGER;
                ALTER TABLE action ADD COLUMN dry_detail TEXT;
                ALTER TABLE action ADD COLUMN deleted_count INTEGER;
                """)
        }
        migrator.registerMigration("v4-recount") { db in
            try db.execute(sql: """
                -- 1 when the dry run's count gave up on passing faults: the next plan or resume counts it again.
                ALTER TABLE action ADD COLUMN dry_retry INTEGER;
                """)
        }
        migrator.registerMigration("v5-no-uid-index") { db in
            try db.execute(sql: """
                -- No query looks accounts up by id, and the index made each batch rewrite pages all over it (ids are
                -- random): with it, a plan of 1M accounts wrote 1.26 GB to the store and its WAL; without, 0.2 GB.
                DROP INDEX IF EXISTS account_uid;
                """)
        }
        migrator.registerMigration("v6-survey-traffic") { db in
            try db.execute(sql: """
                -- What the dry run's counts of the data paths cost each service, per counting process (a plan, or a
                -- resume that counts what is left): apply's traffic is in service_stats.
                CREATE TABLE survey_traffic (
                    session INTEGER NOT NULL,
                    service TEXT NOT NULL,
                    requests INTEGER NOT NULL,
                    retries INTEGER NOT NULL,
                    throttled INTEGER NOT NULL,
                    failures INTEGER NOT NULL,
                    PRIMARY KEY (session, service)
                );
                """)
        }
        migrator.registerMigration("v7-no-state-index") { db in
            try db.execute(sql: """
                -- Apply pages through the accounts with open actions in sequence order. With this index, SQLite read
                -- every open action and sorted them for each page (the 120k accounts of a 1M plan: 10 s; along
                -- (seq, kind): 0.09 s). Each insert and change of state updated it; without it a 100k plan runs 2 %
                -- fewer instructions, and the writes of its batches 19 % fewer.
                DROP INDEX IF EXISTS action_state;
                """)
        }
        migrator.registerMigration("v8-import-keys") { db in
            try db.execute(sql: """
                -- 64-bit hashes of the emails, phone numbers and federated links of the accounts in the import file, one
                -- blob per batch: a resumed migration goes on keeping two accounts from sharing one (ImportKeys).
                CREATE TABLE import_keys (batch INTEGER PRIMARY KEY, hashes BLOB NOT NULL);
                """)
        }
        migrator.registerMigration("v9-import-requests") { db in
            try db.execute(sql: """
                -- Apply's import of the import file (stages.import): one row per accounts:batchCreate request, the byte
                -- range of its accounts in the file, and how far it got: planned, sent (sent again after a stop), done.
                CREATE TABLE import_request (
                    id INTEGER PRIMARY KEY,
                    start_offset INTEGER NOT NULL,
                    end_offset INTEGER NOT NULL,
                    users INTEGER NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    first_sent_at INTEGER,
                    finished_at INTEGER
                );
                -- The accounts of a done request that the API refused (its per-account errors), with its message.
                CREATE TABLE import_failure (
                    request INTEGER NOT NULL REFERENCES import_request (id),
                    position INTEGER NOT NULL,
                    uid TEXT NOT NULL,
                    message TEXT NOT NULL,
                    PRIMARY KEY (request, position)
                );
                """)
        }
        migrator.registerMigration("v10-account-repairs") { db in
            try db.execute(sql: """
                -- In a migration, what normalization repaired in the account (RepairSet's bits): the import file carries
                -- the repaired values, and the reports list the accounts they change. 0 otherwise, and in older plans.
                ALTER TABLE account ADD COLUMN repairs INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.registerMigration("v11-quarantine-issues") { db in
            try db.execute(sql: """
                -- A quarantined row's other problems, after the one in field and reason: a JSON array of [field, reason]
                -- pairs, NULL when it has none (and in older plans, whose decoders stopped at the first).
                ALTER TABLE quarantine ADD COLUMN other_issues TEXT;
                """)
        }
        migrator.registerMigration("v12-session-version") { db in
            try db.execute(sql: """
                -- The idpipe that ran each apply session (evidence of what carried the deletions out); NULL for the
                -- sessions of an idpipe before 0.5.0, which did not record it.
                ALTER TABLE apply_session ADD COLUMN idpipe_version TEXT;
                """)
        }
        migrator.registerMigration("v13-import-existing") { db in
            try db.execute(sql: """
                -- 1: an account the import left as the project has it, its uid being there already
                -- (stages.import.existing_accounts: keep); recorded as its request is first sent, so that a request sent
                -- again leaves out the same accounts. 0: the API refused it (and in older runs).
                ALTER TABLE import_failure ADD COLUMN existing INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.registerMigration("v14-import-clash") { db in
            try db.execute(sql: """
                -- An account the import left out (existing = 1) because another account of the project has its email,
                -- phone number or federated link: which ('email', 'phoneNumber', 'providerUserInfo (apple.com)'), and
                -- that account's uid. NULL when its own uid is in the project (and for the API's refusals).
                ALTER TABLE import_failure ADD COLUMN clash_field TEXT;
                ALTER TABLE import_failure ADD COLUMN clash_uid TEXT;
                """)
        }
        return migrator
    }
}
