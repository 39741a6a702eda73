import Foundation
import Testing

/// What the sandbox's ledger says happened, indexed for the ordering checks.
struct SandboxLedger {
    let entries: [[String: Any]]
    /// (service, action, target) of every entry that changed something, in order; and where each first stands.
    let changes: [String]
    private let firstIndex: [String: Int]

    init(_ entries: [[String: Any]]) {
        self.entries = entries
        changes = entries.filter { $0["changed"] as? Bool == true }.map { "\($0["service"] ?? "") \($0["action"] ?? "") \($0["target"] ?? "")" }
        var firstIndex: [String: Int] = [:]
        for (index, change) in changes.enumerated() where firstIndex[change] == nil { firstIndex[change] = index }
        self.firstIndex = firstIndex
    }

    func firstChange(_ service: String, _ action: String, _ target: String) -> Int? {
        firstIndex["\(service) \(action) \(target)"]
    }

    /// Effects recorded as changes more than once: none may exist.
    var repeatedChanges: [String] {
        Dictionary(grouping: changes, by: { $0 }).filter { $0.value.count > 1 }.map(\.key).sorted()
    }

    func count(_ service: String, _ action: String) -> Int {
        changes.filter { $0.hasPrefix("\(service) \(action) ") }.count
    }
}

/// One line of idpipe's CSV ledger, by column name.
struct LedgerRow {
    let fields: [String: String]
    subscript(_ name: String) -> String { fields[name] ?? "" }

    static func read(_ text: String) -> [LedgerRow] {
        var lines = parse(text)
        guard !lines.isEmpty else { return [] }
        let header = lines.removeFirst()
        return lines.filter { $0.count == header.count }.map { LedgerRow(fields: Dictionary(uniqueKeysWithValues: zip(header, $0))) }
    }

    /// RFC 4180, as the ledger writes it.
    static func parse(_ text: String) -> [[String]] {
        var rows: [[String]] = []
        var row: [String] = []
        var field = ""
        var quoted = false
        var iterator = Array(text).makeIterator()
        var pending: Character? = nil
        while let c = pending ?? iterator.next() {
            pending = nil
            if quoted {
                if c == "\"" {
                    if let next = iterator.next() {
                        if next == "\"" { field.append("\"") } else { quoted = false; pending = next }
                    } else { quoted = false }
                } else { field.append(c) }
            } else if c == "\"" {
                quoted = true
            } else if c == "," {
                row.append(field); field = ""
            } else if c == "\n" {
                row.append(field); field = ""
                rows.append(row); row = []
            } else {
                field.append(c)
            }
        }
        if !field.isEmpty || !row.isEmpty { row.append(field); rows.append(row) }
        return rows
    }
}

/// The first line where two texts differ, both versions.
func firstDifference(_ a: String, _ b: String) -> String {
    let left = a.split(separator: "\n", omittingEmptySubsequences: false), right = b.split(separator: "\n", omittingEmptySubsequences: false)
    for index in 0..<max(left.count, right.count) {
        let l = index < left.count ? String(left[index]) : "<end>", r = index < right.count ? String(right[index]) : "<end>"
        if l != r { return "line \(index + 1): \(l)  ≠  \(r)" }
    }
    return "none"
}

@Suite(.serialized) struct ApplyEndToEndTests {
    let asOf = "2026-11-21T00:00:00Z"

    /// A pipeline in Pipelines/ (relative paths hold): `base` with the webhook and the services on `sandbox`.
    func pipeline(from base: String, sandbox: SandboxProcess, replacing extra: [(String, String)] = [], rates: Bool = false) throws -> String {
        var text = try String(contentsOfFile: Binary.root.appendingPathComponent(base).path, encoding: .utf8)
        text = text.replacingOccurrences(of: "https://backend.example.com/hooks/delete-user-data", with: sandbox.webhookURL)
        for (old, new) in extra { text = text.replacingOccurrences(of: old, with: new) }
        var services = try sandbox.servicesSection()
        if rates {
            // The test's raised quotas: the sandbox enforces the same numbers.
            services = services.replacingOccurrences(of: "  google:\n", with: "  google:\n    updates_per_second: 400\n    batch_deletes_per_second: 10\n    reads_per_second: 1000\n")
                .replacingOccurrences(of: "  apple:\n", with: "  apple:\n    requests_per_second: 400\n")
                .replacingOccurrences(of: "  facebook:\n", with: "  facebook:\n    requests_per_second: 400\n")
                .replacingOccurrences(of: "  firestore:\n", with: "  firestore:\n    requests_per_second: 5000\n")
                .replacingOccurrences(of: "  realtime_database:\n", with: "  realtime_database:\n    requests_per_second: 5000\n")
                .replacingOccurrences(of: "  storage:\n", with: "  storage:\n    requests_per_second: 5000\n")
        }
        let relative = "Pipelines/.test-\(UUID().uuidString).yaml"
        try (text + "\n" + services).write(toFile: Binary.root.appendingPathComponent(relative).path, atomically: true, encoding: .utf8)
        return relative
    }

    /// The sandbox serving the sample accounts and tokens (started with `arguments`: a latency, say), and the sample
    /// cleanup pipeline pointed at it (with `replacing` made in it).
    func sampleCleanup(arguments: [String] = [], replacing: [(String, String)] = []) throws -> (SandboxProcess, String) {
        let sandbox = try SandboxProcess(accounts: Binary.root.appendingPathComponent("Samples/accounts.json").path,
                                         storedTokens: Binary.root.appendingPathComponent("Samples/stored-tokens.jsonl").path,
                                         data: Binary.root.appendingPathComponent("Samples/data.json").path, arguments: arguments)
        return (sandbox, try pipeline(from: "Pipelines/cleanup-deleted-accounts.yaml", sandbox: sandbox, replacing: replacing))
    }

    func ledgerRows(_ state: String) throws -> [LedgerRow] {
        let (code, text) = try Binary.run(["report", "--state", state, "--format", "csv", "--reveal-personal-data"])
        #expect(code == 0)
        return LedgerRow.read(text)
    }

    /// For every deleted account: each revocation and the data deletion happened before the account deletion,
    /// and every effect happened once.
    func checkOrderAndOnce(_ rows: [LedgerRow], _ ledger: SandboxLedger) {
        #expect(ledger.repeatedChanges.isEmpty, "effects recorded twice: \(ledger.repeatedChanges.prefix(5))")
        let byUid = Dictionary(grouping: rows, by: { $0["uid"] })
        var deleted = 0
        for (uid, actions) in byUid {
            guard actions.contains(where: { $0["action"] == "delete-account" && $0["state"] == "done" }) else {
                #expect(ledger.firstChange("identitytoolkit", "delete", uid) == nil, "\(uid) was deleted without a done delete-account")
                continue
            }
            deleted += 1
            guard let deletion = ledger.firstChange("identitytoolkit", "delete", uid) else {
                Issue.record("\(uid): delete-account is done but the sandbox never deleted it")
                continue
            }
            for action in actions where action["state"] == "done" {
                var earlier: Int?
                switch action["action"] {
                case "revoke-apple":
                    let fingerprint = action["detail"].components(separatedBy: "sha256:").last ?? ""
                    earlier = ledger.firstChange("apple", "revoke", fingerprint)
                case "revoke-facebook": earlier = ledger.firstChange("facebook", "revoke-login", action["value"])
                case "delete-data": earlier = ledger.firstChange("webhook", "delete-data", uid)
                default: continue
                }
                guard let earlier else {
                    Issue.record("\(uid): \(action["action"]) is done but the sandbox has no such effect")
                    continue
                }
                #expect(earlier < deletion, "\(uid): \(action["action"]) came after the account deletion")
            }
        }
        #expect(deleted == ledger.count("identitytoolkit", "delete"))
    }

    /// validate --check-services reaches every service of the sample cleanup, the data webhook too, and changes
    /// nothing; a webhook nothing answers at fails the check.
    @Test func validateChecksEveryServiceOfACleanup() throws {
        let (sandbox, pipeline) = try sampleCleanup()
        defer { Binary.removeVariant(pipeline) }
        let (plainCode, plainOutput) = try Binary.run(["validate", pipeline])
        #expect(plainCode == 0 && plainOutput.hasSuffix(": valid\n") && !plainOutput.contains("warning"), "\(plainOutput)")
        // The hook's requests go unsigned here, which is said; and its order before the stores.
        #expect(plainOutput.contains("delete: data through the webhook (unsigned: no shared secret, services.webhook.secret_file or "
                                     + "IDPIPE_WEBHOOK_SECRET), then at once, Firestore"), "\(plainOutput)")
        let (code, output) = try Binary.run(["validate", pipeline, "--check-services"])
        #expect(code == 0, "\(output)")
        for service in ["google", "apple", "facebook"] { #expect(output.contains("ok: \(service): "), "\(output)") }
        #expect(output.contains("ok: data webhook: reachable (HTTP "), "\(output)")
        for store in ["firestore", "database", "storage"] { #expect(output.contains("ok: \(store): its configured paths can be read"), "\(output)") }
        #expect(try sandbox.ledger().isEmpty)
        let text = try String(contentsOfFile: Binary.root.appendingPathComponent(pipeline).path, encoding: .utf8)
        // A webhook nothing answers at; an Apple endpoint that answers 404 (it was taken for a refused probe token, and
        // the client secret for accepted).
        var wrong = try text.replacing(/data_webhook: \S+/, with: "data_webhook: http://127.0.0.1:1/hooks/delete-user-data")
        wrong = try wrong.replacing(/(\n  apple:\n[\s\S]*?endpoint: \S+)/) { $0.output.1 + "/nothing-here" }
        // A Firestore nothing answers at: the dry run's count found it out, 30 s into the plan.
        wrong = try wrong.replacing(/(\n  firestore:\n    endpoint: )\S+/) { $0.output.1 + "http://127.0.0.1:1/v1" }
        try wrong.write(toFile: Binary.root.appendingPathComponent(pipeline).path, atomically: true, encoding: .utf8)
        let (failedCode, failedOutput) = try Binary.run(["validate", pipeline, "--check-services"])
        #expect(failedCode == 2 && failedOutput.contains("FAILED: data webhook: ") && failedOutput.contains("ok: google"), "\(failedOutput)")
        #expect(failedOutput.contains("FAILED: apple: ") && failedOutput.contains("HTTP 404 with no OAuth error code in the body"), "\(failedOutput)")
        #expect(failedOutput.contains("FAILED: firestore: ") && failedOutput.contains("ok: storage: "), "\(failedOutput)")
        // A key file that is not there: plain validate warns (with no request sent), where it said "valid" only; the sample
        // cleanup counts its data paths in the plan, which would stop there, and the warning says so.
        let missingKey = try text.replacing(/private_key: \S+/, with: "private_key: keys/not-there.p8")
        try missingKey.write(toFile: Binary.root.appendingPathComponent(pipeline).path, atomically: true, encoding: .utf8)
        let (keyCode, keyOutput) = try Binary.run(["validate", pipeline])
        #expect(keyCode == 0 && keyOutput.contains("idpipe: warning: plan and apply would stop here, as they could not set up the services: ")
            && keyOutput.contains("services.apple.private_key: cannot read ") && keyOutput.contains("not-there.p8"), "\(keyOutput)")
        #expect(try Binary.run(["plan", pipeline, "--out", Binary.temporaryDirectory(), "--as-of", asOf]).0 == 2)
        // Without data paths to count, only apply uses the services: a warning, and "valid".
        let noPaths = try missingKey.replacing(/\n    firestore:[\s\S]*?\n    accounts: true/, with: "\n    accounts: true")
        try noPaths.write(toFile: Binary.root.appendingPathComponent(pipeline).path, atomically: true, encoding: .utf8)
        let (applyOnlyCode, applyOnlyOutput) = try Binary.run(["validate", pipeline])
        #expect(applyOnlyCode == 0 && applyOnlyOutput.contains("idpipe: warning: apply could not set up the services here: ")
            && applyOnlyOutput.contains("not-there.p8") && applyOnlyOutput.contains(": valid"), "\(applyOnlyOutput)")
        #expect(try sandbox.ledger().isEmpty)
    }

    /// A report folder apply cannot write in is refused before anything is sent: apply deleted the accounts, then failed
    /// on its first report. plan refuses it at once too. The folder: one made read-only, or for root (whom modes do not
    /// stop) /proc/self, a folder of the kernel's that takes no new file.
    @Test func aReportFolderApplyCannotWriteInIsRefusedFirst() throws {
        let (sandbox, pipeline) = try sampleCleanup()
        defer { withExtendedLifetime(sandbox) { Binary.removeVariant(pipeline) } }
        let unwritable: String
        if getuid() == 0 {
            unwritable = "/proc/self"
        } else {
            unwritable = Binary.temporaryDirectory() + "/read-only"
            try FileManager.default.createDirectory(atPath: unwritable, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o555])
        }
        #expect(FileManager.default.fileExists(atPath: unwritable))
        let out = Binary.temporaryDirectory()
        #expect(try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf]).0 == 1)
        let (code, output) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--out", unwritable, "--yes"])
        #expect(code == 2 && output.contains("cannot write in the folder \(unwritable) (") && output.contains("nothing was sent"), "\(output)")
        #expect(try sandbox.ledger().isEmpty)
        #expect(try Binary.run(["status", "--state", out + "/state.sqlite"]).1.contains("status: planned"))
        let (planCode, planOutput) = try Binary.run(["plan", pipeline, "--out", unwritable, "--as-of", asOf])
        #expect(planCode == 2 && planOutput.contains("cannot write in the folder \(unwritable) (") && planOutput.contains("the plan writes its reports there"),
                "\(planOutput)")
    }

    /// Two applies of one pipeline at once, from two state stores (two nights' runs that overlapped), are refused: each
    /// deleted the same accounts' data, under webhook keys of its own.
    @Test func twoAppliesOfOnePipelineAtOnceAreRefused() throws {
        let (sandbox, pipeline) = try sampleCleanup(arguments: ["--latency-ms", "300"])
        defer { withExtendedLifetime(sandbox) { Binary.removeVariant(pipeline) } }
        let first = Binary.temporaryDirectory(), second = Binary.temporaryDirectory()
        for out in [first, second] {
            let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
            #expect(code == 1, "\(output)")
        }
        // Started a second apart, every answer slow: whichever takes the pipeline first, the other is refused.
        let (_, output) = try Binary.run(["-c", #"""
            "$0" apply --state "$1" --yes > "$3" 2>&1 & one=$!; sleep 1; "$0" apply --state "$2" --yes > "$4" 2>&1; two=$?
            wait $one; one=$?; cat "$3" "$4"; echo "exits: $one $two"
            """#, Binary.path, first + "/state.sqlite", second + "/state.sqlite", first + "/apply.out", second + "/apply.out"], executable: "/bin/sh")
        #expect(output.components(separatedBy: "another idpipe process is applying the pipeline").count == 2, "\(output)")
        #expect(output.contains("exits: 1 2") || output.contains("exits: 2 1"), "\(output)")
        let refused = output.hasSuffix("exits: 1 2\n") ? second : first
        let (again, againOutput) = try Binary.run(["apply", "--state", refused + "/state.sqlite", "--yes"])
        #expect(again != 2 && !againOutput.contains("another idpipe process"), "once the first is done, the lock is free: \(againOutput)")
    }

    /// A plan whose count of some paths gave up on passing faults is not applied (`run --yes` applied it at once,
    /// unattended, the blast radius of those paths unknown); resume counts them again, and apply then goes on.
    @Test func aPlanWithCountsThatGaveUpIsNotApplied() throws {
        let (sandbox, pipeline) = try sampleCleanup()
        defer { Binary.removeVariant(pipeline); withExtendedLifetime(sandbox) {} }
        let out = Binary.temporaryDirectory()
        let state = out + "/state.sqlite"
        let (planCode, planOutput) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(planCode == 1, "\(planOutput)")
        // Two counts made to read as given up on faults (the sandbox answers every count; a real give-up takes minutes).
        let (marked, markOutput) = try Binary.run(["-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            n = db.execute("UPDATE action SET dry_detail = 'not counted: firestore: gave up after 8 attempts', dry_retry = 1 WHERE id IN \
            (SELECT id FROM action WHERE kind = 'delete-firestore' AND state = 'planned' LIMIT 2)").rowcount
            db.commit(); print(n)
            """, state], executable: "/usr/bin/env", prefix: ["python3"])
        #expect(marked == 0 && markOutput.hasPrefix("2"), "\(markOutput)")
        let (refused, refusedOutput) = try Binary.run(["apply", "--state", state, "--yes"])
        #expect(refused == 2 && refusedOutput.contains("the dry run could not count the data of 2 path deletions (passing faults)"), "\(refusedOutput)")
        let (resumed, resumedOutput) = try Binary.run(["resume", "--state", state])
        #expect(resumedOutput.contains("data: counting again 2 path deletions"), "\(resumedOutput)")
        #expect(resumed == 1, "resume counted and applied nothing, then: \(resumedOutput)")
        #expect(!FileManager.default.fileExists(atPath: out + "/plan-ledger.csv"), "nothing applied, nothing kept")
        let reviewed = try Data(contentsOf: URL(fileURLWithPath: out + "/ledger.csv"))
        // A plan-ledger.csv already there (another run's, say) is replaced, not taken for this plan's.
        try Data("sequence,uid\n1,another-run\n".utf8).write(to: URL(fileURLWithPath: out + "/plan-ledger.csv"))
        // Applied with its reports in another folder: the reviewed ledger is kept in the plan's, where a later session
        // without --out writes apply's ledger.csv.
        let elsewhere = Binary.temporaryDirectory()
        let (applied, appliedOutput) = try Binary.run(["apply", "--state", state, "--yes", "--out", elsewhere])
        #expect(applied == 1 && appliedOutput.contains("0 failed"), "the samples hold quarantined rows: \(appliedOutput)")
        #expect(appliedOutput.contains("report: \(out)/plan-ledger.csv (the plan's ledger, as reviewed)"), "\(appliedOutput)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: elsewhere + "/ledger.csv")) != reviewed)
        let (again, _) = try Binary.run(["apply", "--state", state, "--yes"])
        #expect(again == 1)
        // The ledger the reviewer saw is kept, byte for byte, as apply's replaces it.
        #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/plan-ledger.csv")) == reviewed)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/ledger.csv")) != reviewed)
        // A report written through a link to the store would replace the store: refused, the store left whole.
        try FileManager.default.removeItem(atPath: elsewhere + "/report.md")
        try FileManager.default.createSymbolicLink(atPath: elsewhere + "/report.md", withDestinationPath: state)
        let (linked, linkedOutput) = try Binary.run(["apply", "--state", state, "--yes", "--out", elsewhere])
        #expect(linked == 2 && linkedOutput.contains("cannot write \(elsewhere)/report.md: it is the state store the report is read from"), "\(linkedOutput)")
        let (statusCode, statusOutput) = try Binary.run(["status", "--state", state])
        #expect(statusCode == 0 && statusOutput.contains("status: applied"), "\(statusOutput)")
        // For a monitor: done, with the samples' quarantined rows, as apply's own exit said.
        #expect(try Binary.run(["status", "--state", state, "--exit-code"]).0 == 1)
    }

    /// A plan stopped while counting the data to delete (SIGTERM, the sandbox slow to answer) exits 130; the next plan
    /// finishes the count, and says the plan had stopped while counting.
    @Test func aPlanStoppedWhileCountingTheDataSaysSoWhenFinished() throws {
        // Three counts at a time, each answer slow: the signal comes after the first few of the 30 path deletions.
        let (sandbox, pipeline) = try sampleCleanup(arguments: ["--latency-ms", "200"], replacing: [("\nguards:", "\napply: {accounts_in_flight: 3}\nguards:")])
        defer { withExtendedLifetime(sandbox) { Binary.removeVariant(pipeline) } }
        let out = Binary.temporaryDirectory()
        let plan = ["plan", pipeline, "--out", out, "--as-of", asOf]
        let (stopped, stoppedOutput) = try Binary.run(plan, signals: [(SIGTERM, 1.2)])
        #expect(stopped == 130 && stoppedOutput.contains("idpipe: interrupted while counting the data to delete"), "\(stoppedOutput)")
        let (_, status) = try Binary.run(["status", "--state", out + "/state.sqlite"])
        #expect(status.contains("path deletions not counted; apply refuses the plan until they are (`idpipe resume --state \(out)/state.sqlite` "
            + "counts them)"), "\(status)")
        let (code, output) = try Binary.run(plan)
        #expect(code == 1 && output.contains("data: counted the configured paths of "), "\(output)")
        #expect(output.contains("The plan had been recorded but stopped before its end, its count of the data to delete unfinished: the "
                                + "count was finished, and its reports were written now."), "\(output)")
    }

    /// A SIGTERM while `run --yes` counts the data, every count already started (30 path deletions, 64 in flight): the
    /// counts in flight are recorded, and the run stops there, exit 130, nothing applied. It went on to apply and delete
    /// every selected account, as the stop had left no count to do; a cron or systemd timeout stops jobs so.
    @Test func aSignalWhileTheLastCountsAreInFlightStopsRunBeforeApply() throws {
        let (sandbox, pipeline) = try sampleCleanup(arguments: ["--latency-ms", "400"])
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        // The plan reads the samples in well under a second; the counts, each answer slow, take about 15 s.
        let (stopped, output) = try Binary.run(["run", pipeline, "--yes", "--out", out, "--as-of", asOf], signals: [(SIGTERM, 3)])
        #expect(stopped == 130 && (output.contains("idpipe: interrupted once the data was counted, before the reports were written and before "
            + "anything was applied") || output.contains("idpipe: interrupted while counting the data to delete")), "\(output)")
        #expect(output.contains("then applies the plan, as `run --yes` asked") && !output.contains("apply:"), "\(output)")
        // The counts only read: the sandbox recorded no change at all.
        let changes = SandboxLedger(try sandbox.ledger()).changes
        #expect(changes.isEmpty, "\(changes.prefix(5))")
        // The resume it names finishes the run as asked.
        let (resumed, resumedOutput) = try Binary.run(["resume", "--state", out + "/state.sqlite"])
        #expect(resumed == 1 && resumedOutput.contains("apply: 10 accounts"), "\(resumedOutput)")
    }

    /// Writes the pipeline variant with its `app_secret_file:` line replaced by what `edit` makes of it; returns the text
    /// it had, and the path of the secret file it named.
    func editSecretFileLine(_ pipeline: String, _ edit: (String) -> String) throws -> (text: String, secretFile: String) {
        let path = Binary.root.appendingPathComponent(pipeline).path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let line = String(try #require(text.split(separator: "\n").first { $0.contains("app_secret_file:") }))
        try text.replacingOccurrences(of: line, with: edit(line)).write(toFile: path, atomically: true, encoding: .utf8)
        return (text, String(line.split(separator: ":", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces))
    }

    /// A service the open actions need is checked before anything is sent: with a refused Facebook app secret, `run
    /// --yes` went on until the first Facebook revocation, and the data of the accounts before it was deleted already
    /// (a night half done). Nothing changes now, and once the secret is fixed the same command goes on.
    @Test func aServiceThatFailsItsCheckStopsApplyBeforeAnythingIsSent() throws {
        let (sandbox, pipeline) = try sampleCleanup()
        defer { Binary.removeVariant(pipeline) }
        // The pipeline reads the secret from a file of the test's, which holds a wrong one first.
        let file = Binary.temporaryDirectory() + "/app-secret.txt"
        try "not-the-app-secret".write(toFile: file, atomically: true, encoding: .utf8)
        let (_, secretFile) = try editSecretFileLine(pipeline) { _ in "    app_secret_file: \(file)" }
        let secret = try String(contentsOfFile: secretFile, encoding: .utf8)
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["run", pipeline, "--yes", "--out", out, "--as-of", asOf])
        #expect(code == 2 && output.contains("nothing was sent: a service the plan's open actions need failed its check: facebook: "), "\(output)")
        let changes = SandboxLedger(try sandbox.ledger()).changes
        #expect(changes.isEmpty, "\(changes.prefix(5))")
        try secret.write(toFile: file, atomically: true, encoding: .utf8)
        let (again, againOutput) = try Binary.run(["run", pipeline, "--yes", "--out", out, "--as-of", asOf])
        #expect(again == 1 && againOutput.contains("0 failed") && againOutput.contains("10 accounts deleted"), "\(againOutput)")
    }

    /// A key or secret file that cannot be read (a path mistyped) stops the run before anything is recorded: it failed
    /// once the plan was recorded, as its data were to be counted, and the corrected pipeline was then refused as a change
    /// to the finished plan, so a nightly job stayed stuck until its folder was removed by hand.
    @Test func aSecretFileThatCannotBeReadStopsTheRunBeforeAnythingIsRecorded() throws {
        let (sandbox, pipeline) = try sampleCleanup()
        defer { Binary.removeVariant(pipeline) }
        let (text, _) = try editSecretFileLine(pipeline) { $0 + ".typo" }
        let path = Binary.root.appendingPathComponent(pipeline).path
        let out = Binary.temporaryDirectory()
        for command in [["plan"], ["run", "--yes"]] {
            let (code, output) = try Binary.run([command[0], pipeline] + command.dropFirst() + ["--out", out, "--as-of", asOf])
            #expect(code == 2 && output.contains("services.facebook.app_secret_file") && !output.contains("accounts read"), "\(command): \(output)")
            #expect(!FileManager.default.fileExists(atPath: out + "/state.sqlite"), "\(command): nothing recorded")
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let (fixed, fixedOutput) = try Binary.run(["run", pipeline, "--yes", "--out", out, "--as-of", asOf])
        #expect(fixed == 1 && fixedOutput.contains("0 failed") && fixedOutput.contains("10 accounts deleted"), "\(fixedOutput)")
        #expect(!SandboxLedger(try sandbox.ledger()).changes.isEmpty)
    }

    @Test func sampleCleanupRevokesBeforeDeletingAndDoesEachEffectOnce() throws {
        let (sandbox, pipeline) = try sampleCleanup()
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["run", pipeline, "--yes", "--out", out, "--as-of", asOf, "--verbose"])
        #expect(code == 1, "the samples hold quarantined rows: \(output)")
        #expect(output.contains("0 failed"), "\(output)")
        // Before anything is sent, even with --yes: which plan goes to which project, and what it does.
        #expect(output.contains("applying the plan of cleanup-deleted-accounts (\(pipeline)) as of \(asOf) to project demo-idpipe, from ")
            && output.contains("  delete-account: 10 to do"), "\(output)")
        // The tokens were sent to the sandbox; none shows in the log of every request (--verbose) or any file left.
        try Binary.expectNoToken(try Binary.sampleTokens(), output: output, out: out)
        let rows = try ledgerRows(out + "/state.sqlite")
        let ledger = SandboxLedger(try sandbox.ledger())
        checkOrderAndOnce(rows, ledger)
        #expect(!FileManager.default.fileExists(atPath: out + "/state.sqlite.unsynced"), "apply syncs the plan's store first")
        #expect(ledger.count("identitytoolkit", "delete") == 10)
        #expect(ledger.count("apple", "revoke") == rows.filter { $0["action"] == "revoke-apple" && $0["state"] == "done" }.count)
        // The plan's ledger, as reviewed, is kept beside apply's: the same actions, as planned.
        let plannedLedger = LedgerRow.read(try String(contentsOfFile: out + "/plan-ledger.csv", encoding: .utf8))
        let appliedLedger = LedgerRow.read(try String(contentsOfFile: out + "/ledger.csv", encoding: .utf8))
        #expect(!plannedLedger.isEmpty && plannedLedger.map { [$0["sequence"], $0["uid"], $0["action"]] }
                == appliedLedger.map { [$0["sequence"], $0["uid"], $0["action"]] })
        #expect(!plannedLedger.contains { $0["state"] == "done" } && appliedLedger.contains { $0["state"] == "done" })
        let report = try String(contentsOfFile: out + "/report.md", encoding: .utf8)
        #expect(report.contains("when_not_revocable: delete (revoke-apple not possible: no stored Apple token)"))
        #expect(!report.contains(#"r0ddef47b2c5"#), "no token in the report")
        // Titled for the stage, and each selected account lists what apply made of its actions.
        #expect(report.hasPrefix("# idpipe apply: "), "\(report.prefix(200))")
        #expect(report.contains("| `revoke-apple` not-possible (no stored Apple token); `revoke-facebook`, `delete-data`, `delete-firestore`, "
                                + "`delete-database`, `delete-storage`, `delete-account` done |"), "\(report)")

        // Applying again sends nothing: every action is final.
        let before = try sandbox.ledger().count
        // Its exit code is the run's, as `run` said it: 1, the samples hold quarantined rows (it said 0, and a scheduler
        // running it again read "all done" after failures).
        let (again, againOutput) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"])
        #expect(again == 1, "\(againOutput)")
        #expect(againOutput.contains("10 input rows were quarantined by the plan and not acted on"), "\(againOutput)")
        #expect(try sandbox.ledger().count == before)
        // Nor does a resume, which writes the reports again (an apply killed between its last action and its reports
        // left none).
        try FileManager.default.removeItem(atPath: out + "/report.md")
        let (resumed, resumedOutput) = try Binary.run(["resume", "--state", out + "/state.sqlite"])
        #expect(resumed == 1, "\(resumedOutput)")
        #expect(resumedOutput.contains("The reports were written again"), "\(resumedOutput)")
        #expect(try String(contentsOfFile: out + "/report.md", encoding: .utf8) == report)
        #expect(try sandbox.ledger().count == before)
        // A plan into the same store finds its plan applied: nothing is sent, and the store is not left unsynced. The
        // reviewed plan.md and plan.json, and apply's ledger, stay as they were (plan.md was written again as the
        // apply's report).
        let reviewed = try ["plan.md", "plan.json", "ledger.csv"].map { try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0)) }
        let (rerun, rerunOutput) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(rerun == 1, "the samples hold quarantined rows: \(rerunOutput)")
        #expect(rerunOutput.contains("that apply has carried out; its reports are left as they were reviewed"), "\(rerunOutput)")
        #expect(try ["plan.md", "plan.json", "ledger.csv"].map { try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0)) } == reviewed)
        #expect(!rerunOutput.contains("report: "), "\(rerunOutput)")
        #expect(!FileManager.default.fileExists(atPath: out + "/state.sqlite.unsynced"))
        #expect(try sandbox.ledger().count == before)
        // With the pipeline file gone, the reports are written again with the default report settings, as it says.
        Binary.removeVariant(pipeline)
        try FileManager.default.removeItem(atPath: out + "/report.md")
        let (orphan, orphanOutput) = try Binary.run(["resume", "--state", out + "/state.sqlite"])
        #expect(orphan == 1 && orphanOutput.contains("the reports are written with the default report settings"), "\(orphanOutput)")
        #expect(try String(contentsOfFile: out + "/report.md", encoding: .utf8) == report)
    }

    @Test func theDeletionCapStopsBeforeTheFirstDeletionBeyondIt() throws {
        let (sandbox, pipeline) = try sampleCleanup()
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (planCode, planOutput) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(planCode == 1, "\(planOutput)")
        let (code, output) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes", "--max-deletions", "4"])
        #expect(code == 3, "\(output)")
        #expect(output.contains("deletion cap of 4"))
        var ledger = SandboxLedger(try sandbox.ledger())
        #expect(ledger.count("identitytoolkit", "delete") == 4)
        #expect(ledger.count("webhook", "delete-data") == 4, "no data deleted beyond the cap either")
        // The cap is kept with the run: a resume without it stops at once (it went on to delete every account).
        let (held, heldOutput) = try Binary.run(["resume", "--state", out + "/state.sqlite"])
        #expect(held == 3 && heldOutput.contains("deletion cap of 4"), "\(heldOutput)")
        // The cap is of the whole run: the deletions of the session before are said to count.
        #expect(heldOutput.contains("(it counts the 4 accounts whose deletion earlier sessions began)"), "\(heldOutput)")
        #expect(heldOutput.contains("kept with the run); to go on, give a higher N: `idpipe resume --state"), "\(heldOutput)")
        // The report's guards show it beside the pipeline's.
        let heldReport = try String(contentsOfFile: out + "/report.md", encoding: .utf8)
        #expect(heldReport.contains("| Guards | at most 100 deletions, at most 10 % of accounts, --max-deletions 4 (kept with the run); "), "\(heldReport.prefix(900))")
        #expect(SandboxLedger(try sandbox.ledger()).count("identitytoolkit", "delete") == 4)
        // Given a higher cap, the rest goes (the pipeline allows 100).
        let (resumed, resumedOutput) = try Binary.run(["resume", "--state", out + "/state.sqlite", "--max-deletions", "50"])
        #expect(resumed == 1, "done; the samples hold quarantined rows: \(resumedOutput)")
        ledger = SandboxLedger(try sandbox.ledger())
        #expect(ledger.count("identitytoolkit", "delete") == 10)
        checkOrderAndOnce(try ledgerRows(out + "/state.sqlite"), ledger)
    }

    /// `run --yes --max-deletions` stopped while it plans: the resume that finishes the plan and applies keeps to the
    /// cap (it was kept only once apply began, so this resume deleted up to the pipeline's guards).
    @Test func aRunStoppedWhilePlanningKeepsItsCap() throws {
        let (sandbox, pipeline) = try sampleCleanup()
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (stopped, stoppedOutput) = try Binary.run(["run", pipeline, "--yes", "--max-deletions", "3", "--out", out, "--as-of", asOf],
                                                      environment: ["IDPIPE_BATCH_RECORDS": "7", "IDPIPE_BATCH_BYTES": "4096", "IDPIPE_STOP_AFTER_BATCHES": "2"])
        #expect(stopped == 130 && !stoppedOutput.contains("error"), "\(stoppedOutput)")
        #expect(SandboxLedger(try sandbox.ledger()).count("identitytoolkit", "delete") == 0)
        let (resumed, resumedOutput) = try Binary.run(["resume", "--state", out + "/state.sqlite"])
        #expect(resumed == 3 && resumedOutput.contains("deletion cap of 3"), "\(resumedOutput)")
        #expect(SandboxLedger(try sandbox.ledger()).count("identitytoolkit", "delete") == 3)
    }

    @Test func applyRefusesAChangedInputAndASecondProcess() throws {
        let data = Binary.temporaryDirectory()
        try FileManager.default.copyItem(atPath: Binary.root.appendingPathComponent("Samples/accounts.json").path, toPath: data + "/accounts.json")
        let pipeline = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/accounts.json", with: data + "/accounts.json")
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (planCode, _) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(planCode == 1)
        let state = out + "/state.sqlite"

        // A second process: another holder of the lock (Python's flock, as an unrelated process would hold it).
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["python3", "-c", "import fcntl,sys,time\nf=open(sys.argv[1],'a')\nfcntl.flock(f,fcntl.LOCK_EX)\nprint('held',flush=True)\ntime.sleep(60)", state + ".lock"]
        let pipe = Pipe()
        holder.standardOutput = pipe
        try holder.run()
        _ = pipe.fileHandleForReading.availableData
        let (locked, lockedOutput) = try Binary.run(["apply", "--state", state, "--yes"])
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        #expect(locked == 2, "\(lockedOutput)")
        #expect(lockedOutput.contains("is in use by"), "\(lockedOutput)")

        let handle = try #require(FileHandle(forWritingAtPath: data + "/accounts.json"))
        handle.seekToEndOfFile()
        handle.write(Data("\n".utf8))
        handle.closeFile()
        let (code, output) = try Binary.run(["apply", "--state", state, "--yes"])
        #expect(code == 2, "\(output)")
        #expect(output.contains("refusing to apply: the input \(data)/accounts.json changed since the plan was made"), "\(output)")
        #expect(output.contains("now); plan again into a new state store and review it"), "no apply began: \(output)")
    }

    /// Generated accounts with their side inputs and their user data (`data.json`, light: a few items each).
    func generated(_ count: Int, seed: Int) throws -> String {
        let data = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["Scripts/gen_samples.py", "--accounts", "\(count)", "--seed", "\(seed)", "--out-dir", data,
                                             "--format", "json", "--side-inputs"], executable: "/usr/bin/env", prefix: ["python3"])
        #expect(code == 0, "\(output)")
        let (dataCode, dataOutput) = try Binary.run(["Scripts/gen_data.py", "--accounts", data + "/accounts.json", "--out", data + "/data.json",
                                                     "--seed", "\(seed)", "--light"], executable: "/usr/bin/env", prefix: ["python3"])
        #expect(dataCode == 0, "\(dataOutput)")
        return data
    }

    /// The cleanup of generated accounts: deletion requests and disabled accounts, names filled for the others.
    /// A sandbox serving the generated accounts, tokens and data of `data` at the raised quotas (and `arguments`), and
    /// the generated pipeline pointed at it (for the caller to remove).
    func generatedSandbox(_ data: String, arguments: [String] = []) throws -> (SandboxProcess, String) {
        let sandbox = try SandboxProcess(accounts: data + "/accounts.json", storedTokens: data + "/stored-tokens.jsonl", data: data + "/data.json",
                                         arguments: Self.raisedQuotas + arguments)
        return (sandbox, try generatedPipeline(data, sandbox: sandbox))
    }

    func generatedPipeline(_ data: String, sandbox: SandboxProcess) throws -> String {
        try pipeline(from: "Pipelines/cleanup-deleted-accounts.yaml", sandbox: sandbox, replacing: [
            ("../Samples/accounts.json", data + "/accounts.json"),
            ("../Samples/deletion-requests.csv", data + "/deletion-requests.csv\n  legacy_names: \(data)/legacy-names.csv"),
            ("../Samples/stored-tokens.jsonl", data + "/stored-tokens.jsonl"),
            ("  deletion_requested: true\n", "  deletion_requested: true\n  disabled: true\n"),
            ("  detect_relay: true\n", "  detect_relay: true\n  backfill_names:\n    sources: [legacy]\n"),
            ("guards:\n  max_deletions: 100\n  max_deletion_share: 0.10", "guards:\n  max_deletion_share: 0.20"),
        ], rates: true)
    }

    static let raisedQuotas = ["--quota-batch-delete", "10", "--quota-update", "400"]

    @Test func killedAtRandomMomentsAndResumedItEndsAsAnUninterruptedRun() throws {
        let data = try generated(20_000, seed: 11)
        let (reference, referencePipeline) = try generatedSandbox(data)
        defer { Binary.removeVariant(referencePipeline) }
        let referenceOut = Binary.temporaryDirectory()
        let started = Date()
        let (referenceCode, referenceOutput) = try Binary.run(["run", referencePipeline, "--yes", "--out", referenceOut, "--as-of", asOf])
        let duration = Date().timeIntervalSince(started)
        #expect(referenceCode == 0, "\(referenceOutput)")

        let (crashed, crashedPipeline) = try generatedSandbox(data)
        defer { Binary.removeVariant(crashedPipeline) }
        let out = Binary.temporaryDirectory()
        let state = out + "/state.sqlite"
        let (planCode, planOutput) = try Binary.run(["plan", crashedPipeline, "--out", out, "--as-of", asOf])
        #expect(planCode == 0, "\(planOutput)")
        // Three kills with SIGKILL at random moments of the apply (it takes about as long as the reference run).
        let applyTime = max(2.0, duration - 1)
        try Binary.run(["apply", "--state", state, "--yes"], killAfter: Double.random(in: 1.0...(applyTime * 0.4)))
        // Killed mid-apply, the run is said not to be running, with what goes on (it read as an apply going on).
        let (_, killed) = try Binary.run(["status", "--state", state])
        if killed.contains("status: applying") {
            #expect(killed.contains("(not running: the apply ended without recording why: killed, its machine down, or an error; `idpipe resume --state "),
                    "\(killed)")
            #expect(try Binary.run(["status", "--state", state, "--exit-code"]).0 == 130, "killed: resume continues")
        }
        try Binary.run(["resume", "--state", state], killAfter: Double.random(in: 0.3...(applyTime * 0.3)))
        try Binary.run(["resume", "--state", state], killAfter: Double.random(in: 0.3...(applyTime * 0.3)))
        var (code, output) = try Binary.run(["resume", "--state", state])
        if output.contains("Nothing to resume: the plan is complete and was not applied") {
            // Every kill came before the first apply had recorded that it started (a slow machine): apply it now.
            (code, output) = try Binary.run(["apply", "--state", state, "--yes"])
        }
        #expect(code == 0, "\(output)")

        // The same effects on both sandboxes, none twice; the same outcomes in both reports.
        let referenceLedger = SandboxLedger(try reference.ledger())
        let crashedLedger = SandboxLedger(try crashed.ledger())
        #expect(crashedLedger.repeatedChanges.isEmpty, "\(crashedLedger.repeatedChanges.prefix(5))")
        #expect(Set(crashedLedger.changes) == Set(referenceLedger.changes))
        #expect(crashedLedger.changes.count == referenceLedger.changes.count)
        #expect((try crashed.stats()["accounts"] as? Int) == (try reference.stats()["accounts"] as? Int))
        #expect(DataItems(try crashed.data()) == DataItems(try reference.data()), "the same data is left")
        #expect(referenceLedger.count("firestore", "delete-document") > 100 && referenceLedger.count("storage", "delete-object") > 100,
                "the run deleted data: \(referenceLedger.count("firestore", "delete-document")) documents")
        checkOrderAndOnce(try ledgerRows(state), crashedLedger)
        func outcomes(_ folder: String) throws -> String {
            let report = try String(contentsOfFile: folder + "/report.md", encoding: .utf8)
            return report.components(separatedBy: "## Run timing and traffic")[0]
                .split(separator: "\n").filter { !$0.hasPrefix("| Pipeline |") && !Self.isDataTotalsRow($0) }.joined(separator: "\n")
        }
        let (crashedReport, referenceReport) = (try outcomes(out), try outcomes(referenceOut))
        #expect(crashedReport == referenceReport ? true : false, "first difference: \(firstDifference(crashedReport, referenceReport))")
        // Attempts and resends differ by nature; so does what a data deletion sent again found left to delete.
        func ledgerWithoutAttempts(_ folder: String) throws -> [String] {
            let rows = LedgerRow.parse(try String(contentsOfFile: folder + "/ledger.csv", encoding: .utf8))
            let dropped = Set(["attempts", "resent", "deleted"].compactMap { rows.first?.firstIndex(of: $0) })
            return rows.map { row in row.enumerated().filter { !dropped.contains($0.offset) }.map(\.element).joined(separator: ",") }
        }
        let (crashedRows, referenceRows) = (try ledgerWithoutAttempts(out), try ledgerWithoutAttempts(referenceOut))
        #expect(crashedRows.count == referenceRows.count)
        #expect(crashedRows == referenceRows ? true : false, "first difference: \(firstDifference(crashedRows.joined(separator: "\n"), referenceRows.joined(separator: "\n")))")
        let report = try String(contentsOfFile: out + "/report.md", encoding: .utf8)
        #expect(report.contains("session(s)"))
    }

    /// SIGTERM (or Ctrl-C) during apply starts no new account or step, waits for the answers in flight and records
    /// them, then exits 130 saying how to go on: nothing is left `sent`. It cancelled the requests in flight at once
    /// (the process was gone 40 ms after the signal, with 300 ms answers), leaving them for resume to send again,
    /// while it said it waited for them. `run`, whose plan stage watched the signals before its apply, did not hear
    /// one at all during the apply (it ran to its end). A second signal ends the process at once (it was lost, and a
    /// third was needed); answers slower than the stop's grace are cancelled and left `sent`. Each resumed run ends
    /// as an uninterrupted one, every effect once.
    enum Stop: String, CaseIterable {
        case apply, run, twice, grace
    }

    @Test(arguments: Stop.allCases)
    func aSignalDuringApplyWaitsForTheAnswersInFlight(stop: Stop) throws {
        let data = try generated(1500, seed: 7)
        let latency = stop == .grace ? "1500" : "300"
        let (sandbox, pipeline) = try generatedSandbox(data, arguments: ["--latency-ms", latency])
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let state = out + "/state.sqlite"
        let (planCode, planOutput) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(planCode == 0, "\(planOutput)")
        // `run` into the planned store plans nothing, and applies.
        let arguments = stop == .run ? ["run", pipeline, "--out", out, "--as-of", asOf, "--yes"] : ["apply", "--state", state, "--yes"]
        // After apply's check of the services it needs (about 2 s at 300 ms an answer, 9 s at 1500 ms), well before its end.
        let signals: [(Int32, Double)] = stop == .twice ? [(SIGTERM, 4.5), (SIGTERM, 0.1)] : [(SIGTERM, stop == .grace ? 14 : 4.5)]
        // The grace a stop gives the answers in flight: the default, 30 s, but 1 s (less than an answer) to see it end.
        let (code, output) = try Binary.run(arguments, environment: stop == .grace ? ["IDPIPE_TEST_STOP_GRACE_S": "1"] : [:], signals: signals)
        let stopped = try ledgerRows(state)
        let sent = stopped.filter { $0["state"] == "sent" }.count
        switch stop {
        case .apply, .run:
            #expect(code == 130, "\(output)")
            #expect(output.contains("idpipe: stopping: no new account or step is started; waiting up to 30 s for the answers in flight"), "\(output)")
            #expect(output.contains("idpipe: interrupted; `idpipe resume --state") && output.contains("apply, interrupted (this session): "), "\(output)")
            #expect(sent == 0, "answers in flight were recorded: \(sent) left sent")
            // The accounts the stop left between their steps are counted, for whoever reads the output.
            let partly = Dictionary(grouping: stopped, by: { $0["uid"] }).values.filter { actions in
                actions.contains { $0["state"] == "done" } && actions.contains { $0["state"] == "planned" || $0["state"] == "sent" }
            }.count
            #expect(partly == 0 ? !output.contains("part done") : output.contains(partly == 1 ? "1 account is part done" : "\(partly) accounts are part done"),
                    "\(partly): \(output)")
            // report.md does not call the plan applied while actions are open.
            let report = try String(contentsOfFile: out + "/report.md", encoding: .utf8)
            #expect(report.contains("Applied in part: ") && report.contains(" still open (apply is going on, or stopped before its end"), "\(report.prefix(600))")
        case .twice:
            // The second ends it at once: 128 + SIGTERM (a stop that waited ends with 130).
            #expect(code == 143, "\(code): \(output)")
        case .grace:
            #expect(code == 130, "\(output)")
            #expect(sent > 0, "answers slower than the grace are cancelled and stay sent")
        }
        #expect(stopped.contains { $0["state"] == "done" } && stopped.contains { $0["state"] == "planned" }, "stopped midway")
        let (resumed, resumedOutput) = try Binary.run(["resume", "--state", state])
        #expect(resumed == 0, "\(resumedOutput)")
        #expect(resumedOutput.contains("sent again") == (sent > 0), "\(resumedOutput)")
        let rows = try ledgerRows(state)
        #expect(!rows.contains { $0["state"] == "failed" || $0["state"] == "planned" || $0["state"] == "sent" })
        checkOrderAndOnce(rows, SandboxLedger(try sandbox.ledger()))
        // The resume says what it did, then what the run did in all.
        let deleted = rows.filter { $0["action"] == "delete-account" && $0["state"] == "done" }.count
        let done = rows.filter { $0["state"] == "done" }.count
        #expect(resumedOutput.contains("apply (this session): ") && resumedOutput.contains("all 2 sessions: \(done) actions done, 0 failed, "
                                                                                              + "\(deleted) accounts deleted."), "\(resumedOutput)")
        #expect(try String(contentsOfFile: out + "/report.md", encoding: .utf8).contains("Applied: the outcomes are what the services answered."))
    }

    /// A row of the Data to delete totals: its "deleted" column counts only what a repeat after a kill still found.
    static func isDataTotalsRow(_ line: Substring) -> Bool {
        ["documents", "nodes", "objects"].contains { line.hasPrefix("| `delete-") && line.contains("` | \($0) | ") }
    }

    @Test func faultsDoNotLoseAnything() throws {
        let data = try generated(3000, seed: 5)
        let (sandbox, pipeline) = try generatedSandbox(data, arguments: ["--fault503", "0.05", "--fault-drop", "0.01",
                                                                         "--fault429-burst", "0.003", "--burst-length", "20", "--retry-after", "1"])
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["run", pipeline, "--yes", "--out", out, "--as-of", asOf])
        #expect(code == 0, "\(output)")
        let rows = try ledgerRows(out + "/state.sqlite")
        #expect(!rows.contains { $0["state"] == "failed" || $0["state"] == "planned" || $0["state"] == "sent" })
        let ledger = SandboxLedger(try sandbox.ledger())
        checkOrderAndOnce(rows, ledger)
        let selected = Set(rows.filter { $0["action"] == "delete-account" }.map { $0["uid"] })
        #expect(ledger.count("identitytoolkit", "delete") == selected.count)
        #expect(ledger.count("identitytoolkit", "update.displayName") == rows.filter { $0["action"] == "update-name" && $0["state"] == "done" }.count)
        // The data of every deleted account went, and nothing else.
        let before = try DataItems.fixture(data + "/data.json"), after = DataItems(try sandbox.data())
        let deleted = Set(rows.filter { $0["action"] == "delete-account" && $0["state"] == "done" }.map { $0["uid"] })
        #expect(after == before.subtracting(before.covered(by: deleted)))
        for kind in ["delete-firestore", "delete-database", "delete-storage"] {
            let actions = rows.filter { $0["action"] == kind }
            // A count the faults defeated is reported as such, and the deletion still happens.
            let uncounted = actions.filter { $0["would_delete"].isEmpty }
            #expect(uncounted.allSatisfy { $0["counted"].hasPrefix("not counted: ") && $0["state"] == "done" }, "\(kind): \(uncounted.prefix(3))")
            let differing = actions.filter { !$0["would_delete"].isEmpty && $0["would_delete"] != $0["deleted"] }
            #expect(differing.isEmpty, "\(kind): \(differing.prefix(3))")
        }
        let faults = try sandbox.stats()["faults"] as? [String: Int] ?? [:]
        #expect(faults.values.reduce(0, +) > 20, "faults were injected: \(faults)")
        let json = try String(contentsOfFile: out + "/report.json", encoding: .utf8)
        #expect(json.contains("\"retries\": "))
    }
}
