import Foundation
import IdPipeCore
import IdPipeTestSupport
import Testing

/// Runs the built `idpipe` against the shipped pipelines and samples.
struct Binary {
    static let root = repositoryRoot

    static var path: String {
        var dir = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("idpipe").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return root.appendingPathComponent(".build/debug/idpipe").path
    }

    @discardableResult
    static func run(_ arguments: [String], environment: [String: String] = [:], killAfter: Double? = nil,
                    signals: [(Int32, Double)] = [], signalWhenExists: (Int32, String)? = nil, executable: String? = nil,
                    prefix: [String] = []) throws -> (Int32, String) {
        try runProgram(executable ?? path, prefix + arguments, environment: environment, killAfter: killAfter, signals: signals,
                       signalWhenExists: signalWhenExists)
    }

    static func temporaryDirectory() -> String {
        TemporaryFile.directory("e2e")
    }

    /// A copy of a shipped pipeline reading another source file, placed in Pipelines/ so relative paths hold.
    static func pipelineVariant(_ name: String, replacing old: String, with new: String) throws -> String {
        let text = try String(contentsOfFile: root.appendingPathComponent("Pipelines/\(name)").path, encoding: .utf8)
        let relative = "Pipelines/.test-\(UUID().uuidString).yaml"
        try text.replacingOccurrences(of: old, with: new).write(toFile: root.appendingPathComponent(relative).path, atomically: true, encoding: .utf8)
        return relative
    }

    /// Every token of the sample stored tokens: none may show in any output or file of idpipe's.
    static func sampleTokens() throws -> [String] {
        try String(contentsOfFile: root.appendingPathComponent("Samples/stored-tokens.jsonl").path, encoding: .utf8)
            .split(separator: "\n").compactMap { line -> String? in
                guard let data = line.data(using: .utf8), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
                return object["token"] as? String
            }
    }

    /// Expects no token in `output` nor in any file in the folder `out`.
    static func expectNoToken(_ tokens: [String], output: String, out: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(tokens.count > 10, sourceLocation: sourceLocation)
        #expect(!tokens.contains { output.contains($0) }, "the output must not hold a token", sourceLocation: sourceLocation)
        for file in try FileManager.default.contentsOfDirectory(atPath: out) {
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: "\(out)/\(file)")), as: UTF8.self)
            #expect(!tokens.contains { text.contains($0) }, "\(file) must not hold a token", sourceLocation: sourceLocation)
        }
    }

    /// Removes a copy that `pipelineVariant` made.
    static func removeVariant(_ relative: String) {
        try? FileManager.default.removeItem(atPath: root.appendingPathComponent(relative).path)
    }
}

@Suite(.serialized) struct PlanEndToEndTests {
    let asOf = "2026-11-21T00:00:00Z"

    func normalized(_ report: String) -> String {
        var text = report
        // Source positions differ between the formats: file names, lines, columns, sizes and digests.
        for pattern in [#"accounts\.(json|csv)(:\d+)?"#, #"\(auth-export-(json|csv)[^)]*\)"#, #"`[^`]*\.yaml` \(sha256 [0-9a-f]+\)"#] {
            text = text.replacingOccurrences(of: pattern, with: "…", options: .regularExpression)
        }
        text = text.replacingOccurrences(of: #" ?\((line|column) \d+[^)]*\)"#, with: "", options: .regularExpression)
        return text
    }

    static let reportFiles = ["plan.md", "plan.json", "ledger.csv", "quarantine.csv"]

    /// Expects each report in `out` to be the one in `reference`, byte for byte; `label` says which run `out` holds.
    func expectSameReports(_ reference: String, _ out: String, _ label: String, files: [String] = reportFiles,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        for file in files {
            let a = try String(contentsOfFile: "\(reference)/\(file)", encoding: .utf8)
            let b = try String(contentsOfFile: "\(out)/\(file)", encoding: .utf8)
            #expect(a == b, "\(file) differs \(label)", sourceLocation: sourceLocation)
        }
    }

    @Test func jsonAndCSVSamplesGiveTheSameReport() throws {
        let csvPipeline = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "accounts.json", with: "accounts.csv")
        defer { Binary.removeVariant(csvPipeline) }
        let jsonOut = Binary.temporaryDirectory(), csvOut = Binary.temporaryDirectory()
        let (jsonCode, _) = try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", jsonOut, "--as-of", asOf])
        let (csvCode, _) = try Binary.run(["plan", csvPipeline, "--out", csvOut, "--as-of", asOf])
        #expect(jsonCode == 1 && csvCode == 1, "the samples hold quarantined rows: exit code 1")
        let jsonReport = try String(contentsOfFile: jsonOut + "/plan.md", encoding: .utf8)
        let csvReport = try String(contentsOfFile: csvOut + "/plan.md", encoding: .utf8)
        #expect(jsonReport.contains("## Quarantine"))
        #expect(normalized(jsonReport) == normalized(csvReport))
        // Two deletion requests name ids the export lacks, and one stored token a quarantined account: the reviewer
        // is told they do nothing (they vanished before), and which ids they are; the stored tokens' are only counted
        // (a line with its fields mixed up has a token for its uid).
        #expect(jsonReport.contains("| `inputs.deletion_requests` | 2 | `qHGH5lVKBIgj3aZmUljdHwn43PRI` `rLXnOrf6mwkpHowdjC5l0PGqVpUR` |\n"
            + "| `inputs.stored_tokens` | 1 | (not named: the file holds tokens, which a mixed-up line puts in its uid) |\n"), "\(jsonReport)")
        let run = try #require((try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: jsonOut + "/plan.json"))) as? [String: Any])?["run"] as? [String: Any])
        #expect(run["unmatchedSideInputIds"] as? [String: Int] == ["deletion_requests": 2, "stored_tokens": 1])
        #expect(run["unmatchedSideInputIdsFirst"] as? [String: [String]]
            == ["deletion_requests": ["qHGH5lVKBIgj3aZmUljdHwn43PRI", "rLXnOrf6mwkpHowdjC5l0PGqVpUR"], "stored_tokens": []])
        let jsonLedger = try String(contentsOfFile: jsonOut + "/ledger.csv", encoding: .utf8)
        let csvLedger = try String(contentsOfFile: csvOut + "/ledger.csv", encoding: .utf8)
        #expect(jsonLedger == csvLedger)
        #expect(jsonLedger.contains("revoke-apple"))
        // plan.json too, with the source positions taken out; each quarantine entry names its file and line.
        let jsonPlan = try planJSON(jsonOut), csvPlan = try planJSON(csvOut)
        #expect(!((jsonPlan["accounts"] as? [Any])?.isEmpty ?? true))
        #expect(withoutSourcePositions(jsonPlan) == withoutSourcePositions(csvPlan))
        for plan in [jsonPlan, csvPlan] {
            let input = try #require((plan["run"] as? [String: Any])?["input"] as? String)
            let quarantine = try #require(plan["quarantine"] as? [[String: Any]])
            #expect(quarantine.count == 10)
            #expect(quarantine.allSatisfy { $0["file"] as? String == input && ($0["line"] as? Int ?? 0) > 0 }, "\(quarantine)")
        }
        // quarantine.csv: a line for each problem of each row of plan.json's quarantine, numbered within its row.
        for (out, plan) in [(jsonOut, jsonPlan), (csvOut, csvPlan)] {
            let quarantine = try #require(plan["quarantine"] as? [[String: Any]])
            let expected = quarantine.flatMap { entry in
                let issues = [(entry["field"], entry["reason"])] + ((entry["otherIssues"] as? [[String: Any]]) ?? []).map { ($0["field"], $0["reason"]) }
                return issues.enumerated().map { index, issue in
                    "\(entry["file"] as? String ?? ""):\(entry["line"] as? Int ?? 0) \(entry["uid"] as? String ?? "") \(index + 1) "
                        + "\(issue.0 as? String ?? "") \(issue.1 as? String ?? "")"
                }
            }
            let text = try String(contentsOfFile: out + "/quarantine.csv", encoding: .utf8)
            #expect(text.hasPrefix("file,line,uid,problem,field,reason\n"))
            let rows = LedgerRow.read(text).map { "\($0["file"]):\($0["line"]) \($0["uid"]) \($0["problem"]) \($0["field"]) \($0["reason"])" }
            #expect(rows == expected && rows.count >= 10, "\(text)")
        }
    }

    func planJSON(_ out: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as? [String: Any])
    }

    /// plan.json without what differs between the JSON and the CSV form of one export: where each row stands (file,
    /// line, column), and the input's and the pipeline's names, sizes and digests.
    func withoutSourcePositions(_ plan: [String: Any]) -> NSDictionary {
        var plan = plan
        plan["accounts"] = (plan["accounts"] as? [[String: Any]])?.map { $0.filter { $0.key != "source" } }
        plan["quarantine"] = (plan["quarantine"] as? [[String: Any]])?.map { entry in
            var entry = entry.filter { $0.key != "file" && $0.key != "line" }
            entry["reason"] = (entry["reason"] as? String).map(normalized)
            return entry
        }
        let positions: Set = ["pipelinePath", "pipelineSha256", "input", "inputFormat", "inputSha256", "inputBytes"]
        plan["run"] = (plan["run"] as? [String: Any])?.filter { !positions.contains($0.key) }
        return plan as NSDictionary
    }

    /// No token reaches the plan's output (with --verbose), its reports or any file it leaves (the store, and a WAL or
    /// lock beside it); and by default no email, name or phone number of the samples shows as it is in a report. The
    /// same plan with --reveal-personal-data shows them: the check looks for what a report would show.
    @Test func reportsNeverHoldTokensAndMaskPersonalData() throws {
        let out = Binary.temporaryDirectory()
        let (code, log) = try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", out, "--as-of", asOf, "--verbose"])
        #expect(code == 1, "\(log)")
        #expect(log.contains("plan"), "the verbose log is read: \(log)")
        // A monitor reading the output learns how many accounts the cleanup would touch.
        #expect(log.contains("deletions planned: 10 accounts (their data or their account), of 290 processed"), "\(log)")
        let files = try FileManager.default.contentsOfDirectory(atPath: out)
        #expect(Set(Self.reportFiles + ["state.sqlite"]).isSubset(of: files), "\(files)")
        try Binary.expectNoToken(try Binary.sampleTokens(), output: log, out: out)
        let personal = try samplePersonalData()
        for file in Self.reportFiles {
            let text = try String(contentsOfFile: "\(out)/\(file)", encoding: .utf8)
            let shown = personal.filter { text.contains($0) }
            #expect(shown.isEmpty, "\(file) shows personal data unmasked: \(shown.prefix(5))")
        }
        let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(report.contains("•••@privaterelay.appleid.com"))
        // The sample has no services to count its data paths with: plan.json says so per kind, as plan.md does (it
        // said "counted": 0 and "notCounted": [], which read as a complete count).
        // It says what to do first, and no resume (which would not count them either), nor an empty table of paths.
        #expect(report.contains("## Data to delete\n\n**Not counted: the pipeline has no `services.google`** to read the configured paths with "
            + "(nor to delete them), so the 30 path deletions below are not counted and apply refuses this plan. Add `services.google`"), "\(report)")
        #expect(!report.contains("idpipe resume") && !report.contains("| action | path | would delete |"), "\(report)")
        // A store of 0.7.0 kept no dataUncountable: its report names both reasons, as 0.7.0's did.
        let forget = "import sqlite3,sys,json\nc=sqlite3.connect(sys.argv[1])\nr=json.loads(c.execute('select record from run').fetchone()[0])\n"
            + "assert r.pop('dataUncountable')\nc.execute('update run set record=?',(json.dumps(r),))\nc.commit()"
        let copy = Binary.temporaryDirectory() + "/state.sqlite"
        try FileManager.default.copyItem(atPath: out + "/state.sqlite", toPath: copy)
        #expect(try Binary.run(["-c", forget, copy], executable: TestPython.path).0 == 0)
        let (_, older) = try Binary.run(["report", "--state", copy])
        #expect(older.contains("**30 path deletions are not counted yet**: the pipeline has no `services.google` to read them with, or counting was "
            + "interrupted (`idpipe resume` finishes it)") && !older.contains("**Not counted"), "\(older)")
        // resume says how to plan afresh with plan's options, not its own.
        let (_, resumed) = try Binary.run(["resume", "--state", out + "/state.sqlite"])
        #expect(resumed.contains("data: not counted: the pipeline has no services.google") && resumed.contains("plan into a new state store: idpipe plan with"),
                "\(resumed)")
        // status says apply would refuse the plan, and why nothing can count it (it said "planned" alone).
        let (_, status) = try Binary.run(["status", "--state", out + "/state.sqlite"])
        #expect(status.contains("status: planned\ndata: 30 path deletions not counted; apply refuses the plan until they are (the pipeline has "
            + "no services.google to count them with"), "\(status)")
        // For a monitor: 2, a plan that cannot go on as it is; and 0 without --exit-code (the store was read).
        #expect(try Binary.run(["status", "--state", out + "/state.sqlite", "--exit-code"]).0 == 2)
        #expect(try Binary.run(["status", "--state", out + "/state.sqlite"]).0 == 0)
        // The rule that lets deletions through unrevoked, before approval (only report.md said it, after apply).
        #expect(report.contains("**3 accounts are deleted although a login of theirs cannot be revoked**: "
            + "`stages.delete.when_not_revocable: delete` lets their deletions through"), "\(report)")
        // Nor does the table say "would delete 0" alone, which read as nothing to delete.
        #expect(report.contains("| `delete-firestore` | documents | 10 | 0 | 0 (10 not counted) |"), "\(report)")
        // A plan a guard stopped does not count, and says so (it said "no services.google, or interrupted", and named a
        // resume that the guard refuses).
        let guarded = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "max_deletions: 100", with: "max_deletions: 3")
        defer { Binary.removeVariant(guarded) }
        let stopped = Binary.temporaryDirectory()
        let (guardCode, guardOutput) = try Binary.run(["plan", guarded, "--out", stopped, "--as-of", asOf])
        let guardReport = try String(contentsOfFile: stopped + "/plan.md", encoding: .utf8)
        #expect(guardCode == 3 && guardReport.contains("**30 path deletions are not counted**: a guard stopped the plan before counting"),
                "\(guardOutput)\n\(guardReport)")
        // The guards beside what the plan deletes: a reviewer saw them only when one tripped.
        #expect(report.contains("| Guards | at most 100 deletions, at most 10 % of accounts; this plan deletes the data or the account of 10 of "
            + "290 accounts (3.4 %) |"), "\(report.prefix(900))")
        let plan = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as? [String: Any]
        let firestore = (plan?["data"] as? [String: Any])?["delete-firestore"] as? [String: Any]
        #expect(firestore?["uncounted"] as? Int == 10 && firestore?["counted"] as? Int == 0, "\(String(describing: firestore))")
        let revealed = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", revealed, "--as-of", asOf, "--reveal-personal-data"])
        let shown = try String(contentsOfFile: revealed + "/plan.json", encoding: .utf8)
        #expect(personal.filter { shown.contains($0) }.count > 50, "revealed, the plan shows the samples' personal data")
    }

    /// The emails, names and phone numbers of the sample export and of its legacy names table (3 characters or more,
    /// trimmed), as an unmasked report would show them.
    func samplePersonalData() throws -> Set<String> {
        let data = try Data(contentsOf: Binary.root.appendingPathComponent("Samples/accounts.json"))
        let users = try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["users"] as? [Any])
        var values: Set<String> = []
        for case let user as [String: Any] in users {
            let providers = (user["providerUserInfo"] as? [[String: Any]]) ?? []
            for record in [user] + providers {
                for key in ["email", "displayName", "phoneNumber"] {
                    if let value = record[key] as? String { values.insert(value.trimmingCharacters(in: .whitespaces)) }
                }
            }
        }
        let names = try String(contentsOfFile: Binary.root.appendingPathComponent("Samples/legacy-names.csv").path, encoding: .utf8)
        for row in names.split(separator: "\n").dropFirst() {
            let fields = row.split(separator: ",", omittingEmptySubsequences: false)
            if fields.count > 2 { values.insert("\(fields[1]) \(fields[2])".trimmingCharacters(in: .whitespaces)) }
        }
        return values.filter { $0.count >= 3 }
    }

    /// A plan killed with SIGKILL at random moments, started again each time with the same state, ends with the reports
    /// of an uninterrupted plan. Its batches (2 KiB: about 40 of the CSV sample, 75 of the JSON one) are slowed down to
    /// 30 ms each, so that every kill lands mid-plan, whatever it was doing; the test checks that each one did (a kill
    /// that came after the plan had ended would prove nothing).
    @Test(arguments: ["accounts.json", "accounts.csv"])
    func killedAndResumedGivesTheSameReport(export: String) throws {
        let pipeline = try Binary.pipelineVariant("review-relay-accounts.yaml", replacing: "accounts.json", with: export)
        defer { Binary.removeVariant(pipeline) }
        let small = ["IDPIPE_BATCH_BYTES": "2048"]
        let reference = Binary.temporaryDirectory()
        try Binary.run(["plan", pipeline, "--out", reference, "--as-of", asOf], environment: small)
        let interrupted = Binary.temporaryDirectory()
        // Stop after a few batches (a clean cut), then kill -9 three times at random moments, then finish.
        let (stopCode, _) = try Binary.run(["plan", pipeline, "--out", interrupted, "--as-of", asOf],
                                           environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "5"]) { $1 })
        #expect(stopCode == 130)
        #expect(try Binary.run(["status", "--state", interrupted + "/state.sqlite", "--exit-code"]).0 == 130, "for a monitor: resume continues")
        for _ in 0..<3 {
            let moment = Double.random(in: 0.05...0.25)
            let (status, output) = try Binary.run(["plan", pipeline, "--out", interrupted, "--as-of", asOf],
                                                  environment: small.merging(["IDPIPE_TEST_BATCH_DELAY_MS": "30"]) { $1 }, killAfter: moment)
            #expect(status == SIGKILL, "the plan to be killed after \(moment) s ended by itself first (exit \(status)): \(output)")
        }
        let (code, output) = try Binary.run(["plan", pipeline, "--out", interrupted, "--as-of", asOf], environment: small)
        #expect(code == 1, "\(output)")
        #expect(output.contains("Resumed an interrupted plan"), "\(output)")
        try expectSameReports(reference, interrupted, "after kill and resume")
    }

    /// The CSV source reads each chunk from where it guesses the one before ends (its last newline with the quotes
    /// balanced) while that one is decoded. A quote inside an unquoted field, as a hand-edited export may have, makes
    /// the guess wrong at some chunk sizes: the chunk read from it is dropped and read again from where the decoding
    /// stopped. In chunks of any size, and stopped and resumed, the plan equals the one read in one chunk.
    @Test func aCSVWithABrokenQuoteGivesTheSamePlanInAnyChunks() throws {
        var text = try String(contentsOf: Binary.root.appendingPathComponent("Samples/accounts.csv"), encoding: .utf8)
        let name = try #require(text.range(of: "Susan Brown"))
        text.replaceSubrange(name, with: "Susan \"Sue Brown")
        let broken = Binary.temporaryDirectory() + "/broken.csv"
        try text.write(toFile: broken, atomically: true, encoding: .utf8)
        let pipeline = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/accounts.json", with: broken)
        defer { Binary.removeVariant(pipeline) }
        let plan = ["plan", pipeline, "--as-of", asOf, "--verbose"]
        let reference = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(plan + ["--out", reference])
        #expect(code == 1 && !output.contains("reading again"), "\(output)")
        var readAgain = 0
        // Each size also with the duplicate check reading the rest for repeats after the first chunk, which meets the
        // broken quote in its own reading.
        for size in ["2500", "3000", "4096"] {
            for idsInMemory in [nil, "5"] {
                let out = Binary.temporaryDirectory()
                let environment = ["IDPIPE_BATCH_BYTES": size, "IDPIPE_IDS_IN_MEMORY": idsInMemory].compactMapValues { $0 }
                let (chunkedCode, chunkedOutput) = try Binary.run(plan + ["--out", out], environment: environment)
                #expect(chunkedCode == 1 && (idsInMemory == nil) != chunkedOutput.contains("the duplicate check holds"), "\(chunkedOutput)")
                if chunkedOutput.contains("reading again from line") { readAgain += 1 }
                try expectSameReports(reference, out, "in chunks of \(size) bytes, \(idsInMemory ?? "every") id(s) held")
            }
        }
        #expect(readAgain > 0, "some chunk size must meet a wrong guess, or this test proves nothing about it")
        let small = ["IDPIPE_BATCH_BYTES": "3000"]
        let resumed = Binary.temporaryDirectory()
        let (stopCode, _) = try Binary.run(plan + ["--out", resumed], environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "20"]) { $1 })
        #expect(stopCode == 130)
        let (resumeCode, resumeOutput) = try Binary.run(plan + ["--out", resumed], environment: small)
        #expect(resumeCode == 1 && resumeOutput.contains("Resumed an interrupted plan"), "\(resumeOutput)")
        try expectSameReports(reference, resumed, "after a stop and a resume")
    }

    /// A migration stopped midway resumes its import file where it stood; a file removed or cut since is refused, where
    /// it used to be grown with zero bytes and finished as if whole. Until the plan is recorded as finished, the file is
    /// `NAME.RUN.partial`: a plan stopped or failing overwrote the import file of an earlier plan in the same folder.
    @Test func aResumedImportFileMustBeAsLeft() throws {
        let small = ["IDPIPE_BATCH_RECORDS": "7", "IDPIPE_BATCH_BYTES": "4096"]
        let reference = Binary.temporaryDirectory(), out = Binary.temporaryDirectory()
        let plan = ["plan", "Pipelines/backfill-apple-names.yaml", "--as-of", asOf]
        try Binary.run(plan + ["--out", reference], environment: small)
        let finished = try Data(contentsOf: URL(fileURLWithPath: reference + "/cleaned-accounts.json"))
        let file = out + "/cleaned-accounts.json"
        let earlier = Data("{\"users\": [\n]}\n".utf8)
        try earlier.write(to: URL(fileURLWithPath: file))
        let (stopCode, _) = try Binary.run(plan + ["--out", out], environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "5"]) { $1 })
        #expect(stopCode == 130)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == earlier)
        let staged = try #require(Self.stagedImportFiles(out).first)
        let left = try Data(contentsOf: URL(fileURLWithPath: staged))
        #expect(left.count > earlier.count && left.count < finished.count)
        // Continued with its reports elsewhere, by resume or plan, it is sent back to its own folder, where its import
        // file is (it was refused as changed, and an empty staged file left in the other folder).
        let elsewhere = Binary.temporaryDirectory()
        for command in [["resume", "--state", out + "/state.sqlite", "--out", elsewhere], plan + ["--state", out + "/state.sqlite", "--out", elsewhere]] {
            let (elsewhereCode, elsewhereOutput) = try Binary.run(command, environment: small)
            #expect(elsewhereCode == 2 && elsewhereOutput.contains("import file (cleaned-accounts.json) is in \(out): continue it there"), "\(elsewhereOutput)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
        }
        try FileManager.default.removeItem(atPath: staged)
        let (code, output) = try Binary.run(plan + ["--out", out], environment: small)
        #expect(code == 2 && output.contains("\(staged): holds 0 bytes, not the \(left.count) the interrupted run wrote"), "\(output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == earlier)
        try left.write(to: URL(fileURLWithPath: staged))
        let (again, againOutput) = try Binary.run(plan + ["--out", out], environment: small)
        #expect(again == 1, "\(againOutput)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == finished)
        #expect(try Self.stagedImportFiles(out).isEmpty)
        // Planned already, the same plan again leaves the file as it is, and makes no staged file.
        try FileManager.default.removeItem(atPath: file)
        let (same, sameOutput) = try Binary.run(plan + ["--out", out], environment: small)
        #expect(same == 1 && sameOutput.contains("cleaned-accounts.json (missing: removed since the plan finished"), "\(sameOutput)")
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(try Self.stagedImportFiles(out).isEmpty)
    }

    /// A run folder moved with its store, its migration interrupted, is resumed where it now is: with --out naming it
    /// (refused before, as another folder than the plan's), and without (the old folder was made again, empty).
    @Test func aMovedRunFolderIsResumedWhereItIs() throws {
        let small = ["IDPIPE_BATCH_RECORDS": "7", "IDPIPE_BATCH_BYTES": "4096"]
        let plan = ["plan", "Pipelines/backfill-apple-names.yaml", "--as-of", asOf]
        let reference = Binary.temporaryDirectory()
        try Binary.run(plan + ["--out", reference], environment: small)
        for withOut in [true, false] {
            let old = Binary.temporaryDirectory(), moved = old + "-moved"
            let (stopCode, _) = try Binary.run(plan + ["--out", old], environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "3"]) { $1 })
            #expect(stopCode == 130)
            try FileManager.default.moveItem(atPath: old, toPath: moved)
            let (code, output) = try Binary.run(["resume", "--state", moved + "/state.sqlite"] + (withOut ? ["--out", moved] : []), environment: small)
            #expect(code == 1, "\(output)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: moved + "/cleaned-accounts.json"))
                == Data(contentsOf: URL(fileURLWithPath: reference + "/cleaned-accounts.json")))
            #expect(!FileManager.default.fileExists(atPath: old))
        }
    }

    static func stagedImportFiles(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.hasPrefix("cleaned-accounts.json.") && $0.hasSuffix(".partial") }.map { folder + "/" + $0 }
    }

    /// The import file takes its name once the plan is recorded as finished. Killed in between (it was renamed before
    /// the run was recorded, and a kill there left a plan nothing could finish), `resume` or the same plan gives it
    /// its name, and writes the reports. Another plan's staged file in the same folder is not taken for its own. What
    /// has its name must be a regular file (a link to /dev/null was followed, and the device replaced); a name the run
    /// writes itself is refused, and so, before anything is read, is a folder in its way.
    /// A dry run that uses no service still says what its apply will meet: a key file's path mistyped was found only by
    /// apply, which then refused the corrected pipeline as a changed one.
    @Test func aPlanWarnsOfServicesItsApplyCannotSetUp() throws {
        let pipeline = try Binary.pipelineVariant("backfill-apple-names.yaml", replacing: "version: 1\n", with: """
            version: 1
            services:
              apple: {team_id: TEAM123456, key_id: KEY1234567, client_id: com.example.app, private_key: no-such-key.p8}

            """)
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(code == 1 && output.contains("idpipe: warning: apply will not be able to set up the services: ")
                && output.contains("services.apple.private_key: cannot read"), "\(output)")
        #expect(FileManager.default.fileExists(atPath: out + "/plan.md"), "the dry run is made all the same")
    }

    @Test func theImportFileTakesItsNameOnceThePlanIsRecorded() throws {
        let plan = ["plan", "Pipelines/backfill-apple-names.yaml", "--as-of", asOf]
        let reference = Binary.temporaryDirectory()
        try Binary.run(plan + ["--out", reference])
        let finished = try Data(contentsOf: URL(fileURLWithPath: reference + "/cleaned-accounts.json"))
        for finishing in [["resume", "--state"], plan + ["--state"]] {
            let out = Binary.temporaryDirectory()
            let (killed, _) = try Binary.run(plan + ["--out", out], environment: ["IDPIPE_TEST_EXIT_BEFORE_PUBLISHING": "1"])
            #expect(killed == 137)
            #expect(!FileManager.default.fileExists(atPath: out + "/cleaned-accounts.json") && !FileManager.default.fileExists(atPath: out + "/plan.md"))
            // Nobody has read a report of it: status says so, and apply sends nothing.
            let (_, status) = try Binary.run(["status", "--state", out + "/state.sqlite"])
            #expect(status.contains("status: planned (stopped before its end, its reports perhaps not written"), "\(status)")
            let (applied, appliedOutput) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"])
            #expect(applied == 2 && appliedOutput.contains("was stopped before its end, its reports not written"), "\(appliedOutput)")
            let (code, output) = try Binary.run(finishing + [out + "/state.sqlite", "--out", out] + (finishing[0] == "plan" ? ["--as-of", "2027-01-01T00:00:00Z"] : []))
            #expect(code == 1 && output.contains("recorded but stopped before its end: its reports and import file were written now"), "\(finishing[0]): \(output)")
            #expect(finishing[0] != "plan" || output.contains("--as-of 2027-01-01T00:00:00Z was not used"), "\(output)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/cleaned-accounts.json")) == finished)
            #expect(try Self.stagedImportFiles(out).isEmpty)
            #expect(FileManager.default.fileExists(atPath: out + "/plan.md"))
        }

        // Two plans with their own stores in one folder: one killed before its import file took its name, the other
        // finished. The finished one, run again, leaves the other's staged file alone; that one is then finished too.
        let shared = Binary.temporaryDirectory()
        try Binary.run(plan + ["--out", shared, "--state", shared + "/a.sqlite"])
        let (killed, _) = try Binary.run(plan + ["--out", shared, "--state", shared + "/b.sqlite"], environment: ["IDPIPE_TEST_EXIT_BEFORE_PUBLISHING": "1"])
        #expect(killed == 137)
        try FileManager.default.removeItem(atPath: shared + "/cleaned-accounts.json")
        let (_, againA) = try Binary.run(plan + ["--out", shared, "--state", shared + "/a.sqlite"])
        #expect(againA.contains("is the unfinished import file of another plan"), "\(againA)")
        // A file of the user's that looks alike is not named.
        try Data().write(to: URL(fileURLWithPath: shared + "/cleaned-accounts.json.bak.partial"))
        let (_, withBackup) = try Binary.run(plan + ["--out", shared, "--state", shared + "/a.sqlite"])
        #expect(!withBackup.contains("bak.partial"), "\(withBackup)")
        try FileManager.default.removeItem(atPath: shared + "/cleaned-accounts.json.bak.partial")
        #expect(!FileManager.default.fileExists(atPath: shared + "/cleaned-accounts.json"))
        #expect(try Self.stagedImportFiles(shared).count == 1)
        let (finishedB, finishedBOutput) = try Binary.run(plan + ["--out", shared, "--state", shared + "/b.sqlite"])
        #expect(finishedB == 1, "\(finishedBOutput)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: shared + "/cleaned-accounts.json")) == finished)

        // Stopped by a guard and killed before its end: resume writes the reports, and exits as the guard says.
        let strict = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "max_deletions: 100", with: "max_deletions: 1")
        defer { Binary.removeVariant(strict) }
        let guarded = Binary.temporaryDirectory()
        let (guardKilled, _) = try Binary.run(["plan", strict, "--out", guarded, "--as-of", asOf], environment: ["IDPIPE_TEST_EXIT_BEFORE_PUBLISHING": "1"])
        #expect(guardKilled == 137 && !FileManager.default.fileExists(atPath: guarded + "/plan.md"))
        let (guardCode, guardOutput) = try Binary.run(["resume", "--state", guarded + "/state.sqlite"])
        #expect(guardCode == 3 && FileManager.default.fileExists(atPath: guarded + "/plan.md"), "\(guardOutput)")

        // What is not a regular file at the name (a link, a folder) is refused before the input is read.
        let linked = Binary.temporaryDirectory(), secure = Binary.temporaryDirectory()
        try FileManager.default.createSymbolicLink(atPath: linked + "/cleaned-accounts.json", withDestinationPath: secure + "/import.json")
        let blocked = Binary.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: blocked + "/cleaned-accounts.json", withIntermediateDirectories: false)
        for out in [linked, blocked] {
            let (code, output) = try Binary.run(plan + ["--out", out])
            #expect(code == 2 && output.contains("cleaned-accounts.json: is not a regular file") && !output.contains("accounts read"), "\(output)")
            #expect(try Self.stagedImportFiles(out).isEmpty)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: secure).isEmpty)
        // A name the run writes itself is refused before anything is written: a report's by the pipeline file's check
        // (which validate makes too). (A name not ending in .json is refused for that first.)
        for name in ["plan.json", "report.json", "state.sqlite", "plan.md", "ledger.csv", "state.sqlite-wal", "state.sqlite-journal"] {
            let clash = try Binary.pipelineVariant("backfill-apple-names.yaml", replacing: "import_json: cleaned-accounts.json", with: "import_json: \(name)")
            defer { Binary.removeVariant(clash) }
            let clashOut = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", clash, "--out", clashOut, "--as-of", asOf])
            let said = name.hasSuffix(".json") ? "output.import_json: '\(name)' is the name of a report the run writes in the same folder"
                : "'\(name)' does not end in .json"
            #expect(code == 2 && output.contains(said), "\(name): \(output)")
            #expect(!FileManager.default.fileExists(atPath: clashOut + "/state.sqlite"), "\(name)")
        }
        // A state store given the import file's name is refused as the run starts.
        let stateOut = Binary.temporaryDirectory()
        let (stateCode, stateOutput) = try Binary.run(plan + ["--out", stateOut, "--state", stateOut + "/cleaned-accounts.json"])
        #expect(stateCode == 2 && stateOutput.contains("output.import_json: \(stateOut)/cleaned-accounts.json is also \(stateOut)/cleaned-accounts.json, "
            + "which this run writes"), "\(stateOutput)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: stateOut).isEmpty)
    }

    /// Stopped right after the batch that ends the input (its checkpoint is at the end, the run not yet marked planned),
    /// the plan must finish without reading again: the JSON parser once took the empty rest for a file cut short.
    @Test(arguments: ["accounts.json", "accounts.csv"])
    func stoppedAfterItsLastBatchFinishesTheSame(source: String) throws {
        let pipeline = try Binary.pipelineVariant("review-relay-accounts.yaml", replacing: "accounts.json", with: source)
        defer { Binary.removeVariant(pipeline) }
        let reference = Binary.temporaryDirectory()
        try Binary.run(["plan", pipeline, "--out", reference, "--as-of", asOf])
        let stopped = Binary.temporaryDirectory()
        let (stopCode, stopOutput) = try Binary.run(["plan", pipeline, "--out", stopped, "--as-of", asOf],
                                                    environment: ["IDPIPE_BATCH_RECORDS": "100000", "IDPIPE_STOP_AFTER_BATCHES": "1"])
        #expect(stopCode == 130, "\(stopOutput)")
        #expect(stopOutput.contains("interrupted after 300 accounts"), "\(stopOutput)")
        #expect(!FileManager.default.fileExists(atPath: stopped + "/plan.md"), "an interrupted plan writes no report")
        let (code, output) = try Binary.run(["plan", pipeline, "--out", stopped, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        #expect(output.contains("Resumed an interrupted plan"))
        #expect(output.contains("300 accounts read, 10 quarantined"), "\(output)")
        try expectSameReports(reference, stopped, "after a stop at the end of the input")
    }

    /// The fast path only counts accounts that need nothing: planning every account the full way gives the same three
    /// reports, byte for byte. On the shipped samples, and on a generated export with broken rows and duplicate ids.
    /// A generated export with broken rows and duplicate ids, its side inputs, and a pipeline that uses them all.
    func generatedPlan(_ format: String, accounts: Int = 6000, extra: String = "") throws -> String {
        let data = Binary.temporaryDirectory()
        let (generated, generatorOutput) = try runProgram("/usr/bin/env", ["python3", "Scripts/gen_samples.py", "--accounts", "\(accounts)", "--seed", "11",
                                                                           "--out-dir", data, "--format", format, "--malformed", "--side-inputs"])
        #expect(generated == 0, "\(generatorOutput)")
        let pipeline = data + "/pipeline.yaml"
        try """
            version: 1
            name: generated
            source: {path: accounts.\(format)}
            inputs: {legacy_names: legacy-names.csv, deletion_requests: deletion-requests.csv, stored_tokens: stored-tokens.jsonl}
            select: {deletion_requested: true, disabled: true}
            stages: {backfill_names: {sources: [legacy, provider:facebook.com, email-local-part]}, revoke: true, delete: {when_not_revocable: keep}}
            \(extra)
            """.write(toFile: pipeline, atomically: true, encoding: .utf8)
        return pipeline
    }

    @Test(arguments: ["json", "csv"])
    func theFastPathGivesTheSamePlanAsTheFullPath(format: String) throws {
        let pipeline = try generatedPlan(format)
        let sample = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "accounts.json", with: "accounts.\(format)")
        defer { Binary.removeVariant(sample) }
        for plan in [pipeline, sample] {
            let fast = Binary.temporaryDirectory(), full = Binary.temporaryDirectory()
            let (fastCode, fastOutput) = try Binary.run(["plan", plan, "--out", fast, "--as-of", asOf])
            let (fullCode, fullOutput) = try Binary.run(["plan", plan, "--out", full, "--as-of", asOf], environment: ["IDPIPE_FULL_PATH": "1"])
            #expect(fastCode == 1 && fullCode == 1, "both hold quarantined rows: \(fastOutput)\n\(fullOutput)")
            try expectSameReports(fast, full, "between the fast and the full path (\(plan))")
        }
    }

    /// Past `IDPIPE_IDS_IN_MEMORY` accepted ids, the duplicate check reads the rest of the input once for its ids and
    /// keeps only those that repeat (`DuplicateCheck`). On a generated export with duplicate ids and side inputs, the
    /// plan is the same byte for byte: with the survey early or halfway, and stopped and resumed, where the resumed plan
    /// surveys from the ids its store holds. The scratch file leaves nothing behind.
    /// A migration (which writes an import file and takes the full path for every account) too.
    @Test(arguments: ["json", "csv"], [false, true])
    func aDuplicateCheckThatReadsTheRestForRepeatsGivesTheSamePlan(format: String, migration: Bool) throws {
        let pipeline = try generatedPlan(format, extra: migration ? "output: {import_json: import.json}" : "")
        let plan = ["plan", pipeline, "--as-of", asOf, "--verbose"]
        let files = Self.reportFiles + (migration ? ["import.json"] : [])
        let reference = Binary.temporaryDirectory()
        let (referenceCode, referenceOutput) = try Binary.run(plan + ["--out", reference])
        #expect(referenceCode == 1 && !referenceOutput.contains("the duplicate check holds"), "\(referenceOutput)")
        let report = try String(contentsOfFile: "\(reference)/plan.md", encoding: .utf8)
        #expect(report.contains("duplicate: an earlier row has the same id") && report.contains("| `inputs.deletion_requests` |"), "\(report)")
        func expectSame(_ out: String, _ label: String) throws {
            try expectSameReports(reference, out, label, files: files)
            let left = try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.hasPrefix(".idpipe") }
            #expect(left.isEmpty, "\(label): \(left)")
        }
        let small = ["IDPIPE_BATCH_BYTES": "65536"]
        for limit in ["100", "3000"] {
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(plan + ["--out", out], environment: small.merging(["IDPIPE_IDS_IN_MEMORY": limit]) { $1 })
            #expect(code == 1 && output.contains("more than the \(limit) the duplicate check holds: reading the rest of the input once"), "\(output)")
            try expectSame(out, "survey past \(limit) ids")
        }
        // Stopped after 8 batches; resumed with more ids in the store than the check holds, and stopped in that survey
        // (a stop is asked after each batch it reads); resumed again to the end.
        let resumed = Binary.temporaryDirectory()
        let (stopCode, stopOutput) = try Binary.run(plan + ["--out", resumed], environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "8"]) { $1 })
        #expect(stopCode == 130, "\(stopOutput)")
        let surveying = small.merging(["IDPIPE_IDS_IN_MEMORY": "100"]) { $1 }
        let (surveyStopCode, surveyStopOutput) = try Binary.run(plan + ["--out", resumed], environment: surveying.merging(["IDPIPE_STOP_AFTER_BATCHES": "0"]) { $1 })
        #expect(surveyStopCode == 130 && surveyStopOutput.contains("more than the 100 the duplicate check holds"), "\(surveyStopOutput)")
        let (code, output) = try Binary.run(plan + ["--out", resumed], environment: surveying)
        #expect(code == 1 && output.contains("resuming an interrupted plan") && output.contains("more than the 100 the duplicate check holds"), "\(output)")
        // Log lines read as idpipe's other messages: its name once, the time, the message, its details.
        #expect(output.split(separator: "\n").contains { $0.wholeMatch(of: /idpipe: \d\d:\d\d:\d\d resuming an interrupted plan \(records: \d+\)/) != nil }, "\(output)")
        try expectSame(resumed, "resumed with more ids in the store than the check holds")
        // Stopped in the survey a plan starts past its limit, then resumed.
        let stoppedInSurvey = Binary.temporaryDirectory()
        let (firstCode, firstOutput) = try Binary.run(plan + ["--out", stoppedInSurvey], environment: surveying.merging(["IDPIPE_STOP_AFTER_BATCHES": "1"]) { $1 })
        #expect(firstCode == 130 && firstOutput.contains("more than the 100 the duplicate check holds"), "\(firstOutput)")
        let (lastCode, lastOutput) = try Binary.run(plan + ["--out", stoppedInSurvey], environment: surveying)
        #expect(lastCode == 1, "\(lastOutput)")
        try expectSame(stoppedInSurvey, "stopped in the survey and resumed")
    }

    /// A plan started with --reveal-personal-data and finished by `resume` (which is not given the flag) writes the
    /// reports the whole plan writes: personal data shown, for the owner only. It wrote them masked, world-readable.
    /// Apply follows the run likewise, and records the flag when given it.
    @Test func aRevealedPlanFinishedByResumeStaysRevealed() throws {
        let plan = ["plan", "Pipelines/review-relay-accounts.yaml", "--as-of", asOf, "--reveal-personal-data"]
        let whole = Binary.temporaryDirectory(), resumed = Binary.temporaryDirectory()
        try Binary.run(plan + ["--out", whole])
        let small = ["IDPIPE_BATCH_RECORDS": "50", "IDPIPE_BATCH_BYTES": "20000"]
        let (stopped, stoppedOutput) = try Binary.run(plan + ["--out", resumed], environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "1"]) { $1 })
        #expect(stopped == 130, "\(stoppedOutput)")
        let (code, output) = try Binary.run(["resume", "--state", resumed + "/state.sqlite"])
        #expect(code == 1, "\(output)")
        for file in Self.reportFiles {
            let text = try String(contentsOfFile: "\(resumed)/\(file)", encoding: .utf8)
            #expect(text == (try String(contentsOfFile: "\(whole)/\(file)", encoding: .utf8)), "\(file)")
            #expect((try FileManager.default.attributesOfItem(atPath: "\(resumed)/\(file)")[.posixPermissions] as? Int) == 0o600, "\(file)")
        }
        #expect(try String(contentsOfFile: resumed + "/plan.md", encoding: .utf8).contains("Personal data is shown"))
        // Nor is apply given the flag: its report shows what the plan's showed (it was masked, world-readable).
        let (applied, appliedOutput) = try Binary.run(["apply", "--state", resumed + "/state.sqlite", "--yes"])
        #expect(applied == 1 && appliedOutput.contains("apply: 0 accounts"), "\(appliedOutput)")
        #expect(try String(contentsOfFile: resumed + "/report.md", encoding: .utf8).contains("Personal data is shown"))
        #expect((try FileManager.default.attributesOfItem(atPath: resumed + "/report.md")[.posixPermissions] as? Int) == 0o600)
        // A masked plan applied with the flag: the run's later reports (`report` here) show it too, as a resumed apply would.
        let masked = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--as-of", asOf, "--out", masked])
        try Binary.run(["apply", "--state", masked + "/state.sqlite", "--yes", "--reveal-personal-data"])
        #expect(try String(contentsOfFile: masked + "/plan.md", encoding: .utf8).contains("Personal data is masked"))
        #expect(try String(contentsOfFile: masked + "/report.md", encoding: .utf8).contains("Personal data is shown"))
        let (_, again) = try Binary.run(["report", "--state", masked + "/state.sqlite"])
        #expect(again.contains("Personal data is shown"), "\(again.prefix(400))")
        #expect(again.contains("idpipe: personal data is shown, as this run's reports show it"), "said, as the copy may be for sharing")
        let (_, maskedCopy) = try Binary.run(["report", "--state", masked + "/state.sqlite", "--mask-personal-data"])
        #expect(maskedCopy.contains("Personal data is masked") && !maskedCopy.contains("idpipe: personal data is shown"))
    }

    /// An account id that is an address or a phone number (a legacy import keyed by them) is masked as one in every
    /// report, as the other personal data is, and shown with --reveal-personal-data.
    @Test func accountIdsThatArePersonalDataAreMasked() throws {
        let folder = Binary.temporaryDirectory()
        try """
            {"users": [
              {"localId": "jane.secret@example.com", "email": "jane@example.com", "disabled": true, "providerUserInfo": []},
              {"localId": "+14155550123", "disabled": true, "providerUserInfo": []},
              {"localId": "mark.hidden@example.com", "email": "mark at example.com", "providerUserInfo": []}
            ]}
            """.write(toFile: folder + "/accounts.json", atomically: true, encoding: .utf8)
        try "version: 1\nname: ids\nsource: {path: accounts.json}\nselect: {disabled: true}\nstages: {delete: {when_not_revocable: delete}}\n"
            .write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        for reveal in [false, true] {
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", folder + "/pipeline.yaml", "--out", out, "--as-of", asOf] + (reveal ? ["--reveal-personal-data"] : []))
            #expect(code == 1, "a row is quarantined: \(output)")
            for file in Self.reportFiles {
                let text = try String(contentsOfFile: "\(out)/\(file)", encoding: .utf8)
                // quarantine.csv has only the quarantined row; the other reports have all three.
                let quarantineOnly = file == "quarantine.csv"
                #expect(quarantineOnly || (text.contains("jane.secret") == reveal && text.contains("4155550123") == reveal), "\(file): \(text)")
                if !reveal && !quarantineOnly { #expect(text.contains("j•••@example.com") && text.contains("+1••"), "\(file): \(text)") }
                if file != "ledger.csv" {
                    #expect(text.contains("mark.hidden") == reveal && text.contains("mark at example") == reveal, "\(file): \(text)")
                    if !reveal { #expect(text.contains("m•••@example.com"), "\(file): \(text)") }
                }
            }
        }
    }

    /// Ids, addresses and names an account's owner chose, and a quarantined value, show in plan.md as written: GitHub's
    /// renderer makes no link, image, HTML or emphasis of them, masked or revealed.
    @Test func valuesFromTheExportAreNotMarkdownInThePlanReport() throws {
        let folder = Binary.temporaryDirectory()
        try #"""
            {"users": [
              {"localId": "[approve](https://evil.example/ok)", "email": "boss@x.example", "displayName": "<img src=x onerror=alert(1)>",
               "disabled": true, "providerUserInfo": []},
              {"localId": "www.evil.example", "email": "*bad*@@x.example", "providerUserInfo": []},
              {"localId": "_x_ `y`", "providerUserInfo": [
                {"providerId": "facebook.com", "rawId": "1234567", "displayName": "~~Struck~~ <b>Name</b> **bold**"}]},
              {"localId": "u4", "providerUserInfo": [{"providerId": "facebook.com", "rawId": "7654321", "displayName": "<img src=x onerror=alert(1)>"}]}
            ]}
            """#.write(toFile: folder + "/accounts.json", atomically: true, encoding: .utf8)
        try """
            version: 1
            name: hostile
            source: {path: accounts.json}
            select: {disabled: true}
            stages: {backfill_names: {sources: ["provider:facebook.com"]}, delete: {when_not_revocable: delete}}

            """.write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        var reports: [String] = []
        for reveal in [false, true] {
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", folder + "/pipeline.yaml", "--out", out, "--as-of", asOf] + (reveal ? ["--reveal-personal-data"] : []))
            #expect(code == 1, "a row is quarantined: \(output)")
            reports.append(try String(contentsOfFile: out + "/plan.md", encoding: .utf8))
        }
        let html = try TestPython.renderMarkdown(reports)
        for (page, reveal) in zip(html, [false, true]) {
            for tag in [#"href="http"#, #"href="ftp"#, "<img", "<b>", "<em>", "<strong>bold", "<del>", "<code>y"] {
                #expect(!page.contains(tag), "plan.md (revealed: \(reveal)) renders \(tag): \(page)")
            }
            // The report's own code spans stay.
            #expect(page.contains("<code>delete-account</code> planned"))
            #expect(page.contains("[approve](https://evil.example/ok)") && page.contains("www.evil.example") && page.contains("_x_ `y`"), "\(page)")
        }
        #expect(html[1].contains("~~Struck~~ &lt;b&gt;Name&lt;/b&gt; **bold**") && html[1].contains("&lt;img src=x onerror=alert(1)&gt;"), "\(html[1])")
        #expect(html[1].contains("*bad*@@x.example"), "the quarantined value, as written: \(html[1])")
    }

    /// A value an error quotes from an input (here a deletion request's time) reaches the terminal with its control
    /// characters written as codes, not as the escape sequences they are.
    @Test func aControlCharacterInAnInputDoesNotReachTheTerminal() throws {
        let folder = Binary.temporaryDirectory()
        try #"{"users": [{"localId": "u1", "providerUserInfo": []}]}"#.write(toFile: folder + "/accounts.json", atomically: true, encoding: .utf8)
        try "uid,requested_at,source\nu1,\u{1B}]0;pwned\u{7}\u{8}\u{1B}[2J,app\n".write(toFile: folder + "/requests.csv", atomically: true, encoding: .utf8)
        try """
            version: 1
            name: controls
            source: {path: accounts.json}
            inputs: {deletion_requests: requests.csv}
            select: {deletion_requested: true}
            stages: {delete: {when_not_revocable: delete}}

            """.write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        // (An option ArgumentParser refuses is printed through the same door.)
        let (code, output) = try Binary.run(["plan", folder + "/pipeline.yaml", "--as-\u{1B}[2Jof", asOf])
        #expect(code == 2 && output.contains(#"--as-\u{1B}[2Jof"#) && !output.unicodeScalars.contains("\u{1B}"), "\(output)")
        for command in [["validate", folder + "/pipeline.yaml"], ["plan", folder + "/pipeline.yaml", "--out", Binary.temporaryDirectory(), "--as-of", asOf]] {
            let (code, output) = try Binary.run(command)
            #expect(code == 2, "\(command[0]): \(output)")
            // (The rest of the value is masked.)
            #expect(output.contains("requested_at: '\\u{1B}"), "\(command[0]): \(output)")
            #expect(!output.unicodeScalars.contains { $0.properties.generalCategory == .control && $0 != "\n" }, "\(command[0]): \(output)")
        }
    }

    /// The sample cleanup's commented retention rule, on: with `retention_match: all`, one account of the samples is
    /// selected as disabled and unused (and the guard, at 10 %, holds); with `any`, every disabled or unused account is,
    /// and the guard stops the plan. validate says which.
    @Test func retentionRulesTogetherSelectOnlyTheAccountsThatMeetBoth() throws {
        let rules = "  # disabled: true\n  # inactive_for_days: 730\n  # retention_match: all "
        #expect(try String(contentsOfFile: Binary.root.appendingPathComponent("Pipelines/cleanup-deleted-accounts.yaml").path, encoding: .utf8)
            .contains(rules))
        var selected: [String: [String]] = [:]
        for match in ["all", "any"] {
            let pipeline = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: rules,
                                                      with: "  disabled: true\n  inactive_for_days: 730\n  retention_match: \(match) ")
            defer { Binary.removeVariant(pipeline) }
            let (_, validated) = try Binary.run(["validate", pipeline])
            let rule = match == "all" ? "disabled and no sign-in for 730 days" : "disabled or no sign-in for 730 days"
            #expect(validated.contains("select: deletion requested or \(rule);"), "\(validated)")
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
            #expect(code == (match == "all" ? 1 : 3), "\(output)")
            let plan = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as? [String: Any]
            let accounts = plan?["accounts"] as? [[String: Any]] ?? []
            selected[match] = accounts.filter { $0["selection"] as? String == "selected" }.compactMap { $0["selectionDetail"] as? String }
        }
        #expect(selected["all"]?.filter { $0 != "deletion requested" } == ["disabled, inactive"], "\(selected)")
        #expect((selected["any"]?.filter { $0 == "disabled" || $0 == "inactive" }.count ?? 0) > 10, "\(selected)")
    }

    /// quarantine.csv, for whoever `cat`s it, writes a control character in the input's path as its code.
    @Test func aControlCharacterInTheInputsPathIsShownAsItsCode() throws {
        let folder = Binary.temporaryDirectory() + "/in\u{1B}[2Jput"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        try #"{"users": [{"localId": "u1", "email": "no-at-sign"}]}"#.write(toFile: folder + "/accounts.json", atomically: true, encoding: .utf8)
        try "version: 1\nname: controls\nsource: {path: accounts.json}\n".write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", folder + "/pipeline.yaml", "--out", out, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        let quarantine = try String(contentsOfFile: out + "/quarantine.csv", encoding: .utf8)
        #expect(quarantine.contains(#"/in\u{1B}[2Jput/accounts.json,1,u1,1,email,"#) && !quarantine.unicodeScalars.contains("\u{1B}"), "\(quarantine)")
    }

    /// A uid with an invisible character given twice is a duplicate like any other: the second row is quarantined and
    /// the guard against planning on an id given twice trips, as the quarantine keeps the id as it is.
    @Test func anIdWithAnInvisibleCharacterGivenTwiceIsCaught() throws {
        let folder = Binary.temporaryDirectory()
        try """
            {"users": [
              {"localId": "victim\u{200B}", "disabled": true, "providerUserInfo": []},
              {"localId": "victim\u{200B}", "email": "v@x.example", "providerUserInfo": []}
            ]}
            """.write(toFile: folder + "/accounts.json", atomically: true, encoding: .utf8)
        try "version: 1\nname: twice\nsource: {path: accounts.json}\nselect: {disabled: true}\nstages: {delete: {when_not_revocable: delete}}\n"
            .write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", folder + "/pipeline.yaml", "--out", out, "--as-of", asOf])
        #expect(code == 3 && output.contains("twice"), "\(output)")
        let quarantine = try String(contentsOfFile: out + "/quarantine.csv", encoding: .utf8)
        #expect(quarantine.contains(#"victim\u{200B}"#), "written as a code for whoever fixes the source: \(quarantine)")
    }

    /// With a grace period, the requests younger than it wait: their accounts are listed as not acted on, with those
    /// whose request is dated after the plan, and get no name; plan.md from the store says the same.
    @Test func deletionRequestsWithinTheGracePeriodWait() throws {
        let pipeline = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "deletion_requested: true",
                                                  with: "deletion_requested: true\n  deletion_grace_days: 200")
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        #expect(output.contains("idpipe: 6 deletion requests are within select.deletion_grace_days (200 days: made after 2026-05-05T00:00:00Z) "
                                + "and not acted on yet"), "\(output)")
        let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(report.contains("| matched: deletion requested | 6 |") && report.contains("**6 deletion requests of `inputs.deletion_requests` are within"))
        #expect(report.contains("### Deletion requested, not acted on (4)\n"), "\(report)")
        // 6 against a list of 4 read as a mistake (review): the other two name no processed account, which is said.
        #expect(report.contains("The count is of the input's requests: those of processed accounts are in the list below, the others name no "
                                + "processed account"), "\(report)")
        // Each says why: the request waits out the grace period, until the day it is acted on.
        #expect(report.contains("| kxNSVd2N6kjEfd7jdQtG8jgckJxF | o•••@icloud.com | app at 2026-08-22T05:08:41Z | within select.deletion_grace_days: "
                                + "acted on from 2027-03-10T05:08:41Z | apple.com |"), "\(report)")
        // A pipeline that does not select by request lists the requested accounts no other rule selects, and says why.
        let unselected = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "deletion_requested: true", with: "disabled: true")
        defer { Binary.removeVariant(unselected) }
        let unselectedOut = Binary.temporaryDirectory()
        try Binary.run(["plan", unselected, "--out", unselectedOut, "--as-of", asOf])
        let unselectedReport = try String(contentsOfFile: unselectedOut + "/plan.md", encoding: .utf8)
        #expect(unselectedReport.contains("### Deletion requested, not acted on (8)\n"), "\(unselectedReport)")
        #expect(unselectedReport.contains("| 5oFEO4W43LmB436UVqHVkJfIvAud | w•••@example.org | apple:account-delete at 2026-03-04T07:01:56Z | "
                                          + "select.deletion_requested is off | apple.com facebook.com |"), "\(unselectedReport)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as! [String: Any]
        #expect((json["run"] as! [String: Any])["deletionRequestsInGrace"] as? Int == 6)
        let waiting = (json["accounts"] as! [[String: Any]]).filter { $0["deletionRequest"] is String && $0["selection"] as? String == "not-selected" }
        #expect(waiting.count == 4 && waiting.allSatisfy { ($0["actions"] as? [Any])?.isEmpty == true }, "\(waiting)")
        #expect(waiting.allSatisfy { ($0["selectionDetail"] as? String)?.hasPrefix("within select.deletion_grace_days: acted on from 2027-") == true }, "\(waiting)")
        let (reportCode, fromStore) = try Binary.run(["report", "--state", out + "/state.sqlite", "--format", "md"])
        #expect(reportCode == 0 && fromStore == report)
        // Cut short, the list sends to where the rest is: not the ledger, which has no line for an account with no action.
        let (_, short) = try Binary.run(["report", "--state", out + "/state.sqlite", "--format", "md", "--list-limit", "1"])
        #expect(short.contains("| app at 2026-08-22T05:08:41Z | within select.deletion_grace_days: acted on from 2027-03-10T05:08:41Z | apple.com |"
                                + "\n\n… and 3 more: see the JSON report.\n"), "\(short)")
        let (_, none) = try Binary.run(["report", "--state", out + "/state.sqlite", "--format", "md", "--list-limit", "0"])
        #expect(none.contains("### Deletion requested, not acted on (4)\n\n… all: see the JSON report.\n"), "\(none)")
        // With every request waiting, no account is selected: the section still says why.
        let everything = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "deletion_requested: true",
                                                    with: "deletion_requested: true\n  deletion_grace_days: 3000")
        defer { Binary.removeVariant(everything) }
        let waitingOut = Binary.temporaryDirectory()
        let (waitingCode, waitingOutput) = try Binary.run(["plan", everything, "--out", waitingOut, "--as-of", asOf])
        #expect(waitingCode == 1, "\(waitingOutput)")
        let waitingReport = try String(contentsOfFile: waitingOut + "/plan.md", encoding: .utf8)
        #expect(waitingReport.contains("## Selection\n\nNo rule selected an account.\n\n**12 deletion requests of `inputs.deletion_requests` are within"),
                "\(waitingReport)")
        // A count that is the list's needs no explaining.
        let one = Binary.temporaryDirectory()
        try #"{"users": [{"localId": "u1", "email": "jane@example.com", "providerUserInfo": []}]}"#
            .write(toFile: one + "/accounts.json", atomically: true, encoding: .utf8)
        try "uid,requested_at,source\nu1,2026-11-20T00:00:00Z,app\n".write(toFile: one + "/requests.csv", atomically: true, encoding: .utf8)
        try "version: 1\nname: one\nsource: {path: accounts.json}\ninputs: {deletion_requests: requests.csv}\n"
            .appending("select: {deletion_requested: true, deletion_grace_days: 30}\nstages: {delete: {when_not_revocable: delete}}\n")
            .write(toFile: one + "/pipeline.yaml", atomically: true, encoding: .utf8)
        try Binary.run(["plan", one + "/pipeline.yaml", "--out", one + "/out", "--as-of", asOf])
        let oneReport = try String(contentsOfFile: one + "/out/plan.md", encoding: .utf8)
        #expect(oneReport.contains("**1 deletion request of `inputs.deletion_requests` is within the grace period** (`select.deletion_grace_days`), "
                                   + "and not acted on yet: a plan made once it is old enough acts on it.\n")
                && oneReport.contains("### Deletion requested, not acted on (1)\n") && !oneReport.contains("The count is of"), "\(oneReport)")
        // Without the grace period the same requests are acted on.
        let plain = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", plain, "--as-of", asOf])
        #expect(try String(contentsOfFile: plain + "/plan.md", encoding: .utf8).contains("| matched: deletion requested | 10 |"))
    }

    /// A side input that is one of the pipeline's secret files is refused by validate and plan, unquoted; and an id of a
    /// side input longer than any uid (a token's line) is counted, not named.
    @Test func secretsAreNotReadAsIds() throws {
        let folder = Binary.temporaryDirectory()
        try #"{"users": [{"localId": "u1", "email": "jane@example.com", "providerUserInfo": []}]}"#
            .write(toFile: folder + "/accounts.json", atomically: true, encoding: .utf8)
        let secret = "3f9a0c1d7e2b4a6f8c0d1e2f3a4b5c6d"
        try (secret + "\n").write(toFile: folder + "/fb-secret.txt", atomically: true, encoding: .utf8)
        try "version: 1\nname: s\nsource: {path: accounts.json}\ninputs: {protected_accounts: fb-secret.txt}\n"
            .appending("services: {facebook: {app_id: '1234', app_secret_file: fb-secret.txt}}\n")
            .write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        for command in [["validate", folder + "/pipeline.yaml"], ["plan", folder + "/pipeline.yaml", "--out", folder + "/out", "--as-of", asOf]] {
            let (code, output) = try Binary.run(command)
            #expect(code == 2 && output.contains("inputs.protected_accounts is the file of services.facebook.app_secret_file, a secret")
                    && !output.contains(secret), "\(output)")
        }
        // The service account's key named by the environment is one too.
        try #"{"type": "service_account"}"#.write(toFile: folder + "/sa.json", atomically: true, encoding: .utf8)
        try "version: 1\nname: s\nsource: {path: accounts.json}\ninputs: {legacy_names: sa.json}\nstages: {backfill_names: {sources: [legacy]}}\n"
            .appending("services: {google: {project_id: demo-x}}\n").write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        let (keyCode, keyOutput) = try Binary.run(["validate", folder + "/pipeline.yaml"], environment: ["GOOGLE_APPLICATION_CREDENTIALS": folder + "/sa.json"])
        #expect(keyCode == 2 && keyOutput.contains("inputs.legacy_names is the file of GOOGLE_APPLICATION_CREDENTIALS, a secret"), "\(keyOutput)")
        // Longer than a uid; a token's run of 40 characters; a stored token's value (shorter, with dots).
        let tokens = ["EAAB" + String(repeating: "xZ9", count: 60), "EAAB" + String(repeating: "q7W", count: 15),
                      "r0ddef47b2c5cd9b5b34c0b4eb01acb54.0.kAl5Z571wG0DmgXF"]
        try (tokens + ["u-missing"]).joined(separator: "\n").write(toFile: folder + "/vip.txt", atomically: true, encoding: .utf8)
        try #"{"uid":"u1","provider":"apple.com","type":"refresh_token","token":"\#(tokens[2])","captured_at":"2022-03-10T06:58:08Z"}"#
            .write(toFile: folder + "/tokens.jsonl", atomically: true, encoding: .utf8)
        try "version: 1\nname: s\nsource: {path: accounts.json}\ninputs: {protected_accounts: vip.txt, stored_tokens: tokens.jsonl}\n"
            .write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        let (code, output) = try Binary.run(["plan", folder + "/pipeline.yaml", "--out", folder + "/out2", "--as-of", asOf])
        #expect(code == 0, "\(output)")
        for file in ["plan.md", "plan.json"] {
            let text = try String(contentsOfFile: folder + "/out2/" + file, encoding: .utf8)
            #expect(tokens.allSatisfy { !text.contains($0.prefix(20)) } && text.contains("u-missing"), "\(file): \(text)")
        }
        #expect(try String(contentsOfFile: folder + "/out2/plan.md", encoding: .utf8).contains("| `inputs.protected_accounts` | 4 | `u-missing` … |"))
        // None of them named: said why.
        try tokens.joined(separator: "\n").write(toFile: folder + "/vip.txt", atomically: true, encoding: .utf8)
        try Binary.run(["plan", folder + "/pipeline.yaml", "--out", folder + "/out3", "--as-of", asOf])
        #expect(try String(contentsOfFile: folder + "/out3/plan.md", encoding: .utf8)
                    .contains("| `inputs.protected_accounts` | 3 | (not named: each may be a secret rather than an id"))
    }

    /// Times that cannot be right are processed as they are, and counted: on stderr, in plan.md's Summary and in
    /// plan.json's totals; the same whether or not the fast path reads the accounts.
    @Test func timesThatCannotBeRightAreCounted() throws {
        let folder = Binary.temporaryDirectory()
        try """
            {"users": [
              {"localId": "ok", "createdAt": "1700000000000", "lastSignedInAt": "1700000500000", "displayName": "Ann", "providerUserInfo": []},
              {"localId": "future", "createdAt": "1900000000000", "displayName": "Bo", "providerUserInfo": []},
              {"localId": "backwards", "createdAt": "1700000000000", "lastSignedInAt": "1600000000000", "displayName": "Cy", "providerUserInfo": []},
              {"localId": "both", "createdAt": "1900000000000", "lastSignedInAt": "1800000000000", "displayName": "Di", "providerUserInfo": []}
            ]}
            """.write(toFile: folder + "/accounts.json", atomically: true, encoding: .utf8)
        try "version: 1\nname: times\nsource: {path: accounts.json}\n".write(toFile: folder + "/pipeline.yaml", atomically: true, encoding: .utf8)
        var reports: [String] = []
        for fullPath in ["0", "1"] {
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", folder + "/pipeline.yaml", "--out", out, "--as-of", asOf], environment: ["IDPIPE_FULL_PATH": fullPath])
            #expect(code == 0 && output.contains("idpipe: warning: 3 accounts have times that cannot be right"), "\(output)")
            let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
            #expect(report.contains("**3 accounts have times that cannot be right**, by more than a minute (2 made after the plan's time, "
                                    + "1 last signed in after the plan's time, 2 last signed in before they were made; the plan's time is 2026-11-21T00:00:00Z)"), "\(report)")
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as! [String: Any]
            let totals = json["totals"] as! [String: Int]
            #expect(totals["accounts.odd-times"] == 3 && totals["times.created-after-plan"] == 2 && totals["times.signed-in-before-created"] == 2
                    && totals["times.signed-in-after-plan"] == 1 && totals["accounts.processed"] == 4, "\(totals)")
            reports.append(report.replacingOccurrences(of: out, with: "OUT"))
        }
        #expect(reports[0] == reports[1])
    }

    /// plan.json and the ledger are put together from what the plan rendered as it went; `idpipe report` renders them
    /// from the store. The two are the same byte for byte: masked or revealed, with a quarantine, when a guard stops
    /// the plan, and after a resumed plan (which renders from the store, not having seen its first batches).
    @Test(arguments: [false, true])
    func theReportsRenderedAsThePlanGoesEqualThoseFromTheStore(reveal: Bool) throws {
        let flags = reveal ? ["--reveal-personal-data"] : []
        // The third plan protects some of the accounts asked for deletion and lists at most 3 accounts a list: plan.md's
        // lists, gathered as the plan goes, are cut where the store's are.
        // The fourth shows personal data by its pipeline's setting, which report takes too (it masked them).
        let plans = [try generatedPlan("json"), try generatedPlan("json", extra: "guards: {max_deletions: 3}"),
                     try withProtectedAccounts(generatedPlan("json", extra: "report: {list_limit: 3}")),
                     try generatedPlan("json", extra: "report: {reveal_personal_data: true}")]
        for (index, pipeline) in plans.enumerated() {
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf] + flags)
            #expect(code == (index == 1 ? 3 : 1), "\(output)")
            if index == 0 {
                // Each selected account says what becomes of it: one the plan keeps (a login it cannot revoke, under
                // when_not_revocable: keep) looked like one it deletes.
                let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
                let selected = report.components(separatedBy: "### Accounts selected for cleanup").last!.components(separatedBy: "\n## ")[0]
                #expect(selected.contains("| uid | email | why | request | providers | actions |"), "\(selected)")
                #expect(selected.contains("| `revoke-apple` not-possible (no stored Apple token); `revoke-sessions` planned; "
                                          + "`delete-account` blocked (revoke-apple: no stored Apple token) |"), "\(selected)")
                #expect(selected.contains("| `revoke-apple`, `delete-account` planned |"), "\(selected)")
            }
            if index == 2 { #expect(try String(contentsOfFile: out + "/plan.md", encoding: .utf8).contains("### Protected"), "\(pipeline)") }
            if index == 3 {
                #expect(try String(contentsOfFile: out + "/plan.md", encoding: .utf8).contains("Personal data is shown"), "\(pipeline)")
                // A masked copy to share, when the pipeline shows them.
                let (maskedCode, masked) = try Binary.run(["report", "--state", out + "/state.sqlite", "--mask-personal-data"])
                #expect(maskedCode == 0 && !masked.contains("Personal data is shown") && masked.contains("•••"), "\(masked.prefix(500))")
            }
            for (format, file) in [("md", "plan.md"), ("json", "plan.json"), ("csv", "ledger.csv"), ("quarantine", "quarantine.csv")] {
                let again = out + "/again." + format
                // Without --list-limit, report takes the pipeline's (it took 50, whatever the plan had used).
                let (reportCode, reportOutput) = try Binary.run(["report", "--state", out + "/state.sqlite", "--format", format, "--output", again]
                                                                + flags)
                #expect(reportCode == 0, "\(reportOutput)")
                let planned = try String(contentsOfFile: "\(out)/\(file)", encoding: .utf8)
                #expect(planned == (try String(contentsOfFile: again, encoding: .utf8)), "\(pipeline): \(file)")
                #expect(planned.count > (format == "quarantine" ? 500 : 1000))
                // Without --format, the output's name says it (`--output r.json` wrote Markdown); a name and a format that
                // disagree are refused. A .csv is the ledger, unless its name or --format says quarantine.
                let fileExtension = format == "quarantine" ? "csv" : format
                // (A .csv named for the quarantine is the quarantine: `--output OUT/quarantine.csv` wrote the ledger over it.)
                let named = out + "/named-\(format)." + fileExtension.uppercased()
                let (namedCode, namedOutput) = try Binary.run(["report", "--state", out + "/state.sqlite", "--output", named] + flags)
                #expect(try namedCode == 0 && planned == String(contentsOfFile: named, encoding: .utf8), "\(namedOutput)")
                let other = format == "md" ? "json" : "md"
                let (clashCode, clashOutput) = try Binary.run(["report", "--state", out + "/state.sqlite", "--format", other, "--output", named])
                #expect(clashCode == 2 && clashOutput.contains("--output \(named) names a .\(fileExtension) file, and --format is \(other)"), "\(clashOutput)")
                // Reports that show personal data are for their owner only, as the state store is.
                if reveal || index == 3 {
                    for path in ["\(out)/\(file)", again] {
                        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
                        #expect(mode == 0o600, "\(path): \(String(mode ?? 0, radix: 8))")
                    }
                }
            }
        }
        // Stopped after two batches, then resumed: the same three files as in one go.
        let small = ["IDPIPE_BATCH_RECORDS": "500", "IDPIPE_BATCH_BYTES": "65536"]
        let whole = Binary.temporaryDirectory(), resumed = Binary.temporaryDirectory()
        try Binary.run(["plan", plans[0], "--out", whole, "--as-of", asOf] + flags, environment: small)
        let (stopCode, _) = try Binary.run(["plan", plans[0], "--out", resumed, "--as-of", asOf] + flags,
                                           environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "2"]) { $1 })
        #expect(stopCode == 130)
        let (resumeCode, resumeOutput) = try Binary.run(["plan", plans[0], "--out", resumed, "--as-of", asOf] + flags, environment: small)
        #expect(resumeCode == 1 && resumeOutput.contains("Resumed an interrupted plan"), "\(resumeOutput)")
        try expectSameReports(whole, resumed, "after a resume")
        // The bodies are written to files with no name: nothing is left beside the reports.
        let left = try FileManager.default.contentsOfDirectory(atPath: resumed).filter { $0.hasPrefix(".") || $0.contains("partial") }
        #expect(left.isEmpty, "\(left)")
    }

    /// The plan writes plan.json and the ledger as it goes into files with no name, which become the reports. Where a
    /// report is a link of the user's, the link stays and its file gets the same bytes, copied.
    @Test func reportsThatAreLinksGetTheStreamedReportsCopied() throws {
        let pipeline = try generatedPlan("json", accounts: 3000)
        let plain = Binary.temporaryDirectory(), linked = Binary.temporaryDirectory(), elsewhere = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", plain, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        for file in ["plan.json", "ledger.csv"] {
            try "an older report\n".write(toFile: "\(elsewhere)/\(file)", atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: "\(linked)/\(file)", withDestinationPath: "\(elsewhere)/\(file)")
        }
        let (linkedCode, linkedOutput) = try Binary.run(["plan", pipeline, "--out", linked, "--as-of", asOf])
        #expect(linkedCode == 1, "\(linkedOutput)")
        for file in ["plan.json", "ledger.csv"] {
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: "\(linked)/\(file)")) == "\(elsewhere)/\(file)")
            let expected = try String(contentsOfFile: "\(plain)/\(file)", encoding: .utf8)
            #expect(expected.count > 1000)
            #expect(try String(contentsOfFile: "\(elsewhere)/\(file)", encoding: .utf8) == expected, "\(file)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: linked).filter { $0.hasPrefix(".") || $0.contains("partial") }
        #expect(left.isEmpty, "\(left)")
    }

    /// Apply syncs and checks the store before anything else, and refuses one damaged since the plan (a page of the
    /// account table overwritten here, as a failing disk could leave it), changing nothing and asking for no service.
    @Test func applyRefusesAStoreDamagedAfterThePlan() throws {
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", out, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        let state = out + "/state.sqlite"
        try damageTable("account", inDatabase: state)
        let before = try Data(contentsOf: URL(fileURLWithPath: state))
        let (applied, applyOutput) = try Binary.run(["apply", "--state", state, "--yes"])
        #expect(applied == 2, "\(applyOutput)")
        #expect(applyOutput.contains("the state store is damaged: \(state): ") && applyOutput.contains("plan again into a new state store"),
                "\(applyOutput)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: state)) == before)
    }

    /// A plan writes its store without syncing it, under a marker naming the system's boot, and syncs it and drops the
    /// marker once whole. After a power loss or a crash of the system mid-plan (here: an interrupted plan whose marker
    /// then names another boot), the store may have lost writes: status, apply and resume refuse it, saying so and
    /// changing nothing, and the same plan command removes it and plans again from the start, to the reports of a plan
    /// never cut short.
    @Test func aPlanARestartOfTheSystemMayHaveCutShortIsPlannedAgain() throws {
        let whole = Binary.temporaryDirectory()
        let plan = ["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--as-of", asOf]
        let (code, output) = try Binary.run(plan + ["--out", whole])
        #expect(code == 1, "\(output)")
        #expect(!FileManager.default.fileExists(atPath: whole + "/state.sqlite.unsynced"), "a whole plan is synced")
        let reports = { (out: String) in try ["plan.md", "plan.json", "ledger.csv"].map { try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0)) } }

        let out = Binary.temporaryDirectory()
        let (stopped, stoppedOutput) = try Binary.run(plan + ["--out", out], environment: ["IDPIPE_BATCH_RECORDS": "7", "IDPIPE_BATCH_BYTES": "4096", "IDPIPE_STOP_AFTER_BATCHES": "2"])
        #expect(stopped == 130, "\(stoppedOutput)")
        let state = out + "/state.sqlite"
        let marker = state + ".unsynced"
        let text = try String(contentsOfFile: marker, encoding: .utf8)
        #expect(text.hasPrefix(try systemBootId() + " "), "\(text)")
        try fromAnEarlierBoot(text).write(toFile: marker, atomically: true, encoding: .utf8)
        let before = try Data(contentsOf: URL(fileURLWithPath: state))
        for command in [["status", "--state", state], ["apply", "--state", state, "--yes"], ["resume", "--state", state]] {
            let (refused, said) = try Binary.run(command)
            #expect(refused == 2, "\(command): \(said)")
            #expect(said.contains("idpipe: error: the state store \(state) holds a plan that was not yet on the disk when the system restarted"),
                    "\(command): \(said)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: state)) == before)

        let (again, againOutput) = try Binary.run(plan + ["--out", out])
        #expect(again == 1, "\(againOutput)")
        #expect(againOutput.contains("idpipe: the system restarted before the plan in \(state) was all on the disk"), "\(againOutput)")
        #expect(!againOutput.contains("Resumed an interrupted plan"), "\(againOutput)")
        #expect(try reports(out) == reports(whole))
        #expect(!FileManager.default.fileExists(atPath: marker))
        let (status, statusOutput) = try Binary.run(["status", "--state", state])
        #expect(status == 0, "\(statusOutput)")
    }

    /// The generated pipeline, also protecting the first five accounts asked for deletion.
    func withProtectedAccounts(_ pipeline: String) throws -> String {
        let folder = (pipeline as NSString).deletingLastPathComponent
        let requests = try String(contentsOfFile: folder + "/deletion-requests.csv", encoding: .utf8).split(separator: "\n").dropFirst().prefix(5)
        try (requests.map { String($0.split(separator: ",")[0]) }.joined(separator: "\n") + "\n")
            .write(toFile: folder + "/protected.txt", atomically: true, encoding: .utf8)
        let text = try String(contentsOfFile: pipeline, encoding: .utf8)
            .replacingOccurrences(of: "stored_tokens: stored-tokens.jsonl}", with: "stored_tokens: stored-tokens.jsonl, protected_accounts: protected.txt}")
        try text.write(toFile: pipeline, atomically: true, encoding: .utf8)
        return pipeline
    }

    @Test func versionIsPrinted() throws {
        let (code, output) = try Binary.run(["--version"])
        #expect(code == 0)
        #expect(output == IdPipeVersion.text + "\n")
    }

    /// Ctrl-C (SIGINT) stops the plan after the batch in hand is recorded, says how to go on, and exits with 130.
    @Test func interruptSaysHowToResume() throws {
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--as-of", asOf],
                                            environment: ["IDPIPE_BATCH_RECORDS": "1", "IDPIPE_TEST_BATCH_DELAY_MS": "20"],
                                            signalWhenExists: (SIGINT, out + "/state.sqlite"))
        #expect(code == 130, "\(output)")
        #expect(output.contains("interrupted after"), "\(output)")
        #expect(output.contains("idpipe resume --state \(out)/state.sqlite"), "\(output)")
        let (again, resumed) = try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--as-of", asOf])
        #expect(again == 1, "\(resumed)")
        #expect(resumed.contains("Resumed an interrupted plan"))
        #expect(resumed.contains("300 accounts read, 10 quarantined"), "\(resumed)")
    }

    /// Deletion requests that the provider filter sets aside are listed, where before they were only counted under
    /// "filtered-by-provider" and named nowhere: a reviewer could not tell whose requests would not be carried out.
    @Test func requestsLeftOutByTheProviderFilterAreListed() throws {
        let pipeline = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "  deletion_requested: true\n",
                                                  with: "  deletion_requested: true\n  providers: [apple.com]\n")
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        let tally = try #require((try planJSON(out)["totals"] as? [String: Int]))
        let left = try #require(tally["selection.filtered-by-provider"])
        #expect(left > 0)
        #expect(report.contains("### Matched, but left out by select.providers (not acted on) (\(left))"), "\(report)")
        #expect(report.contains("| JWFt34tQudMz9buzFf7VBvkfYHuf | s•••@gmail.com | deletion requested | app at 2026-10-03T04:15:09Z | twitter.com |"), "\(report)")
    }

    /// An interrupted plan whose store lies apart from its reports: `status` says it is interrupted (no process holds
    /// the store) and how to finish it, `report` marks its report incomplete, and `resume`, run from another folder,
    /// reads the pipeline the plan read (its path is relative to where the plan ran) and writes the reports where the
    /// plan wrote its own. Before, resume looked for `Pipelines/…` in the folder it ran in, and wrote beside the store.
    @Test func anInterruptedPlanIsResumedFromAnywhereIntoItsOwnFolder() throws {
        let out = Binary.temporaryDirectory(), stateFolder = Binary.temporaryDirectory()
        let state = stateFolder + "/plan.sqlite"
        let (code, output) = try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--state", state, "--as-of", asOf],
                                            environment: ["IDPIPE_BATCH_RECORDS": "1", "IDPIPE_TEST_BATCH_DELAY_MS": "20"],
                                            signalWhenExists: (SIGINT, state))
        #expect(code == 130, "\(output)")
        let (_, status) = try Binary.run(["status", "--state", state])
        #expect(status.contains("status: planning\n"), "\(status)")
        #expect(status.contains("(interrupted; `idpipe resume --state \(state)` finishes it)"), "\(status)")
        let (_, partial) = try Binary.run(["report", "--state", state])
        #expect(partial.contains("**Incomplete:** the plan stopped before the end of its input"), "\(partial)")
        let elsewhere = ["-c", "cd / && exec \"$0\" \"$@\"", Binary.path]
        let (resumedCode, resumed) = try Binary.run(["resume", "--state", state], executable: "/bin/sh", prefix: elsewhere)
        #expect(resumedCode == 1, "\(resumed)")
        #expect(resumed.contains("300 accounts read, 10 quarantined"), "\(resumed)")
        let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(!report.contains("**Incomplete:**"))
        #expect(!FileManager.default.fileExists(atPath: stateFolder + "/plan.md"))
        let (_, done) = try Binary.run(["status", "--state", state])
        #expect(done.contains("status: planned\n"), "\(done)")
    }

    /// A legacy user table read through a column mapping, end to end: every row is read, the totals match the table
    /// (counted here on its own), and broken rows land in the quarantine under the account's field, naming the column.
    @Test func mappedCSVIsPlannedWithItsQuarantine() throws {
        let data = Binary.temporaryDirectory()
        var table = try String(contentsOfFile: Binary.root.appendingPathComponent("Samples/legacy-users.csv").path, encoding: .utf8)
        let rows = table.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        table += "brokenDate1,x@example.com,X,,last tuesday,,,,0\n" + "brokenFlag2,y@example.com,Y,,,,,,maybe\n"
        try table.write(toFile: data + "/users.csv", atomically: true, encoding: .utf8)
        let pipeline = "Pipelines/.test-\(UUID().uuidString).yaml"
        let yaml = """
            version: 1
            name: legacy-users
            source:
              path: \(data)/users.csv
              format: mapped-csv
              mapping:
                localId: id
                email: mail
                displayName: full_name
                phoneNumber: phone
                createdAt: signup_date
                lastSignedInAt: last_login
                disabled: is_disabled
                providers: {apple.com: apple_sub, facebook.com: facebook_id}
            stages: {normalize: true, detect_relay: true}
            """
        try yaml.write(toFile: Binary.root.appendingPathComponent(pipeline).path, atomically: true, encoding: .utf8)
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        #expect(output.contains("\(rows.count + 2) accounts read, 2 quarantined"), "\(output)")
        // The same plan with the duplicate check reading the rest of the table for repeats after its first chunk.
        let surveyed = Binary.temporaryDirectory()
        let (surveyedCode, surveyedOutput) = try Binary.run(["plan", pipeline, "--out", surveyed, "--as-of", asOf, "--verbose"],
                                                            environment: ["IDPIPE_BATCH_BYTES": "2048", "IDPIPE_IDS_IN_MEMORY": "3"])
        #expect(surveyedCode == 1 && surveyedOutput.contains("the duplicate check holds"), "\(surveyedOutput)")
        try expectSameReports(out, surveyed, "with the survey")

        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as! [String: Any]
        let totals = report["totals"] as! [String: Int]
        #expect(totals["providers.apple.com", default: 0] == rows.filter { !$0[6].isEmpty }.count)
        #expect(totals["providers.facebook.com", default: 0] == rows.filter { !$0[7].isEmpty }.count)
        #expect(totals["accounts.disabled", default: 0] == rows.filter { $0[8] == "1" }.count)
        #expect(totals["relay.relayAddress", default: 0] == rows.filter { $0[1].hasSuffix("@privaterelay.appleid.com") }.count)
        let quarantine = (report["quarantine"] as! [[String: Any]]).map { "\($0["line"]!) \($0["field"]!): \($0["reason"]!)" }
        // The values are masked as words may be a name (a column mapped wrongly put names there).
        #expect(quarantine == [
            "\(rows.count + 2) createdAt: 'l••• t•••' is not an RFC 3339 time (column \"signup_date\"): "
                + "not written as 2026-11-21T00:00:00Z, with an optional fraction and Z or an offset, or as a date alone",
            "\(rows.count + 3) disabled: 'm•••' is not true or false (column \"is_disabled\"): true/false, 1/0, yes/no, y/n or t/f are read, in any letter case",
        ], "\(quarantine)")
    }

    /// A table that holds only its header is an empty table: planned, with nothing in it (it stopped with exit 2, "reading
    /// ended at byte 0 of 8", and left the import file open). One whose lines end with a CR alone is refused with the
    /// way to convert it: read by line feeds, it was one line, and its header ran to the end of the file.
    /// A legacy table whose phone numbers have no country code (written as dialled in the UK) is migrated with
    /// `phone_country_code`: each number gets +44 in the import file, and each account is listed with that repair. A
    /// number without the trunk prefix (here one written internationally without its '+') is quarantined, and without
    /// the key every national one is.
    @Test func aTablesNationalPhoneNumbersGetTheirCountryCode() throws {
        let data = Binary.temporaryDirectory()
        try """
            id,mail,phone
            uk1,a@example.com,07911 123456
            uk2,b@example.com,(020) 7946 0958
            intl1,c@example.com,+1 415 555 0100
            bare1,d@example.com,447911123457
            none1,e@example.com,

            """.write(toFile: data + "/users.csv", atomically: true, encoding: .utf8)
        func plan(_ phones: String) throws -> (Int32, String, String, [String: String]) {
            let pipeline = data + "/pipeline.yaml"
            try """
                version: 1
                name: phones
                source:
                  path: users.csv
                  format: mapped-csv
                  mapping: {localId: id, email: mail, phoneNumber: phone}
                \(phones)
                stages: {normalize: true}
                output: {import_json: import.json}

                """.write(toFile: pipeline, atomically: true, encoding: .utf8)
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf, "--reveal-personal-data"])
            let imported = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/import.json"))) as? [String: Any]
            let phones = Dictionary(uniqueKeysWithValues: (imported?["users"] as? [[String: Any]] ?? []).map {
                ($0["localId"] as? String ?? "", $0["phoneNumber"] as? String ?? "-")
            })
            return (code, output, try String(contentsOfFile: out + "/plan.md", encoding: .utf8), phones)
        }
        let (code, output, report, phones) = try plan("  phone_country_code: 44\n  phone_trunk_prefix: 0")
        let (_, validated) = try Binary.run(["validate", data + "/pipeline.yaml"])
        #expect(validated.contains("normalize: on (a phone number without a country code is taken for +44 after its trunk prefix 0, which it must start with)"), "\(validated)")
        #expect(code == 1 && output.contains("5 accounts read, 1 quarantined"), "\(output)")
        #expect(phones == ["uk1": "+447911123456", "uk2": "+442079460958", "intl1": "+14155550100", "none1": "-"], "\(phones)")
        #expect(report.contains("| phone: country code added (source.phone_country_code) | 2 |"), "\(report)")
        // The reviewer sees what the plan took for granted.
        #expect(report.contains("| Input read with | a phone number without a country code is taken for +44 after its trunk prefix 0, which it must "
                                + "start with |"), "\(report)")
        let (_, _, zoned, _) = try plan("  phone_country_code: 44\n  phone_trunk_prefix: 0\n  timestamp_zone: '+01:00'")
        #expect(zoned.contains("| Input read with | a time without a zone is read in UTC+01:00; a phone number without a country code is taken "
                               + "for +44 after its trunk prefix 0, which it must start with |"), "\(zoned)")
        #expect(report.contains("| phone: rewritten in E.164 | 1 |"), "\(report)")
        #expect(report.contains("### Accounts written to the import file with repaired values (3)"), "\(report)")
        let listed = report.split(separator: "\n").filter { $0.contains("phone: country code added (source.phone_country_code) | a@") || $0.contains("| uk2 |") }
        #expect(listed.count == 2, "\(report)")
        #expect(report.contains("/users.csv:5 | bare1 | `phoneNumber` | '447911123457' has neither a country code nor the trunk prefix 0"), "\(report)")

        let (withoutCode, withoutOutput, _, withoutPhones) = try plan("")
        #expect(withoutCode == 1 && withoutOutput.contains("5 accounts read, 3 quarantined"), "\(withoutOutput)")
        #expect(withoutPhones == ["intl1": "+14155550100", "none1": "-"], "\(withoutPhones)")
    }

    /// A row with several problems has all of them named at once, in plan.md (a line each) and plan.json
    /// (`otherIssues`), whether a decoder or the normalize stage found them; it counts as one quarantined row. In a
    /// legacy table and in an export; a row with one problem has no other.
    @Test(arguments: ["mapped-csv", "auth-export-json"])
    func aRowWithSeveralProblemsHasThemAllNamed(format: String) throws {
        let data = Binary.temporaryDirectory()
        let source: String
        if format == "mapped-csv" {
            // prov1's first provider cannot be read (not UTF-8): the second's problem is still named, at its own index.
            var table = Data("""
                id,mail,full_name,phone,signup_date,is_disabled,apple_sub,facebook_id
                good1,good@example.com,Good,,2025-02-17T02:38:20Z,0,,
                multi1,not-an-email,M,555-0100,yesterday,maybe,,
                single1,single@example.com,S,,2025-02-17T02:38:20Z,maybe,,
                prov1,prov@example.com,P,,2025-02-17T02:38:20Z,0,
                """.utf8)
            table.append(contentsOf: [0xFF, 0xFE])
            table.append(contentsOf: Data(", 123 \n".utf8))
            try table.write(to: URL(fileURLWithPath: data + "/users.csv"))
            source = """
                source:
                  path: \(data)/users.csv
                  format: mapped-csv
                  mapping: {localId: id, email: mail, displayName: full_name, phoneNumber: phone, createdAt: signup_date, disabled: is_disabled,
                            providers: {apple.com: apple_sub, facebook.com: facebook_id}}
                """
        } else {
            try """
                {"users": [
                  {"localId": "good1", "email": "good@example.com", "createdAt": "1739759900000"},
                  {"localId": "multi1", "email": "not-an-email", "phoneNumber": "555-0100", "createdAt": "yesterday", "disabled": false},
                  {"localId": "single1", "email": "single@example.com", "createdAt": "yesterday"},
                  {"localId": "prov1", "email": "prov@example.com", "createdAt": "tomorrow",
                   "providerUserInfo": [{"providerId": "apple.com", "rawId": "a1"}, {"providerId": "facebook.com", "rawId": " 123 "}]}
                ]}

                """.write(toFile: data + "/accounts.json", atomically: true, encoding: .utf8)
            source = "source: {path: \(data)/accounts.json}"
        }
        func plan(normalize: Bool) throws -> (report: String, quarantine: [[String: Any]], totals: [String: Any], fields: (String) -> [String]) {
            let pipeline = data + "/pipeline.yaml"
            try "version: 1\nname: several\n\(source)\nstages: {normalize: \(normalize)}\n".write(toFile: pipeline, atomically: true, encoding: .utf8)
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
            #expect(code == 1 && output.contains("4 accounts read, 3 quarantined"), "\(output)")
            let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as? [String: Any]
            // The fields of a uid's lines in plan.md's quarantine table.
            let fields = { (uid: String) in
                report.split(separator: "\n").filter { $0.contains("| \(uid) |") }.map { $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }[2] }
            }
            return (report, try #require(json?["quarantine"] as? [[String: Any]]), try #require(json?["totals"] as? [String: Any]), fields)
        }
        let (report, quarantine, totals, fields) = try plan(normalize: true)
        let decoded = format == "mapped-csv" ? ["`disabled`", "`createdAt`"] : ["`createdAt`"]
        #expect(fields("multi1") == decoded + ["`email`", "`phoneNumber`"], "\(report)")
        #expect(fields("single1").count == 1, "\(report)")
        let provider = format == "mapped-csv" ? ["`providerUserInfo[0].rawId`"] : ["`createdAt`"]
        #expect(fields("prov1") == provider + ["`providerUserInfo[1].rawId`"], "\(report)")
        #expect(quarantine.count == 3)
        let others = quarantine.map { ($0["otherIssues"] as? [[String: String]] ?? []).map { $0["field"] ?? "" } }
        #expect(others[0] == Array(decoded.dropFirst()).map { $0.replacingOccurrences(of: "`", with: "") } + ["email", "phoneNumber"], "\(quarantine)")
        #expect(others[1] == [], "\(quarantine)")
        // Each value masked as its own field is: the phone number's digits, the address's local part.
        let reasons = (quarantine[0]["otherIssues"] as? [[String: String]] ?? []).map { $0["reason"] ?? "" }
        #expect(reasons.contains("'55••••00' has no country code (E.164 needs a leading '+')") && reasons.contains("'•••' has no @"), "\(reasons)")
        #expect(totals["accounts.quarantined"] as? Int == 3, "\(totals)")
        // With the normalize stage off, a row names only what could not be read: the stage would not refuse the rest.
        let off = try plan(normalize: false)
        #expect(off.fields("multi1") == decoded, "\(off.report)")
        #expect(off.fields("prov1") == provider, "\(off.report)")
    }

    @Test func aHeaderOnlyTableIsEmptyAndClassicMacLineEndsAreRefused() throws {
        let data = Binary.temporaryDirectory()
        let pipeline = "Pipelines/.test-\(UUID().uuidString).yaml"
        try """
            version: 1
            name: legacy-users
            source: {path: \(data)/users.csv, format: mapped-csv, mapping: {localId: id, email: mail}}
            output: {import_json: import.json}
            """.write(toFile: Binary.root.appendingPathComponent(pipeline).path, atomically: true, encoding: .utf8)
        defer { Binary.removeVariant(pipeline) }
        try "id,mail\n".write(toFile: data + "/users.csv", atomically: true, encoding: .utf8)
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(code == 0 && output.contains("0 accounts read"), "\(output)")
        let imported = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/import.json"))) as? [String: Any]
        #expect((imported?["users"] as? [Any])?.isEmpty == true)
        // The import file and the store hold personal data unmasked: their owner's only.
        for file in ["import.json", "state.sqlite"] {
            let mode = try FileManager.default.attributesOfItem(atPath: out + "/" + file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file): \(String(mode ?? 0, radix: 8))")
        }

        // Refused as it opens, the input leaves the import file of the plan before it (same folder, new state) as it was.
        try "id,mail\ru1,a@example.com\ru2,b@example.com\r".write(toFile: data + "/users.csv", atomically: true, encoding: .utf8)
        let before = try Data(contentsOf: URL(fileURLWithPath: out + "/import.json"))
        let (refused, message) = try Binary.run(["plan", pipeline, "--out", out, "--state", Binary.temporaryDirectory() + "/s.sqlite", "--as-of", asOf])
        #expect(refused == 2 && message.contains("users.csv") && message.contains("carriage return alone"), "\(message)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/import.json")) == before)
    }

    /// Identity Toolkit's import creates two accounts for one email, phone number or federated sign-in without a word,
    /// and cleaning can make such pairs (`Ann@` and `ann@`). A migration's plan lets the first into the import file and
    /// quarantines the later one with the field they share; `output.allow_duplicate_emails` lets emails through. A plan
    /// stopped and resumed still sees the keys of the accounts written before the stop.
    @Test func aMigrationLeavesOutAccountsThatShareAnEmailPhoneOrSignIn() throws {
        let data = Binary.temporaryDirectory()
        try """
            id,mail,phone
            u1,Ann@Example.com,+15555550100
            u2,ann@example.com,
            u3,bob@example.com,+1 555 555 0100
            u4, carl@EXAMPLE.com ,
            u5,carl@example.com,+15555550101
            u6,dora@example.com,+15555550102
            """.write(toFile: data + "/users.csv", atomically: true, encoding: .utf8)
        func pipeline(_ output: String) throws -> String {
            let path = "Pipelines/.test-\(UUID().uuidString).yaml"
            try """
                version: 1
                name: legacy-users
                source: {path: \(data)/users.csv, format: mapped-csv, mapping: {localId: id, email: mail, phoneNumber: phone}}
                output: {\(output)}
                """.write(toFile: Binary.root.appendingPathComponent(path).path, atomically: true, encoding: .utf8)
            return path
        }
        func imported(_ out: String) throws -> [String] {
            let file = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/import.json"))) as? [String: Any]
            return try #require(file?["users"] as? [[String: Any]]).compactMap { $0["localId"] as? String }
        }
        func quarantined(_ out: String) throws -> [String] {
            try #require(try planJSON(out)["quarantine"] as? [[String: Any]]).map { "\($0["line"]!) \($0["field"]!)" }
        }
        let strict = try pipeline("import_json: import.json")
        defer { Binary.removeVariant(strict) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", strict, "--out", out, "--as-of", asOf])
        #expect(code == 1 && output.contains("idpipe: 3 accounts left out of the import file and quarantined"), "\(output)")
        #expect(try imported(out) == ["u1", "u4", "u6"])
        #expect(try quarantined(out) == ["3 email", "4 phoneNumber", "6 email"])
        let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(report.contains("**3 accounts are left out of it**") && report.contains("| `email` | 2 |") && report.contains("| `phoneNumber` | 1 |"),
                "\(report)")
        #expect(report.contains("| u2 | `email` | duplicate: an account before it in the import file has the same email"), "\(report)")

        // Stopped after its first batch (u1, u2), then resumed: u3 is refused for the phone number u1 took before the stop.
        let resumed = Binary.temporaryDirectory()
        let small = ["IDPIPE_BATCH_RECORDS": "2", "IDPIPE_BATCH_BYTES": "64"]
        let (stopped, stoppedOutput) = try Binary.run(["plan", strict, "--out", resumed, "--as-of", asOf],
                                                      environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "1"]) { $1 })
        #expect(stopped == 130 && stoppedOutput.contains("interrupted after 2 accounts"), "\(stoppedOutput)")
        let (resumedCode, resumedOutput) = try Binary.run(["resume", "--state", resumed + "/state.sqlite"], environment: small)
        #expect(resumedCode == 1, "\(resumedOutput)")
        try expectSameReports(out, resumed, "stopped after the first account and resumed", files: Self.reportFiles + ["import.json"])

        let lenient = try pipeline("import_json: import.json, allow_duplicate_emails: true")
        defer { Binary.removeVariant(lenient) }
        let allowed = Binary.temporaryDirectory()
        let (allowedCode, allowedOutput) = try Binary.run(["plan", lenient, "--out", allowed, "--as-of", asOf])
        #expect(allowedCode == 1 && allowedOutput.contains("idpipe: 1 account left out of the import file"), "\(allowedOutput)")
        #expect(try imported(allowed) == ["u1", "u2", "u4", "u5", "u6"])
        #expect(try quarantined(allowed) == ["4 phoneNumber"])

        // An export's accounts linked to one Apple user: the second is left out, whatever else differs.
        let export = data + "/accounts.json"
        try """
            {"users": [
              {"localId": "a1", "email": "a1@example.com", "providerUserInfo": [{"providerId": "apple.com", "rawId": "001.x"}]},
              {"localId": "a2", "email": "a2@example.com", "providerUserInfo": [{"providerId": "apple.com", "rawId": "001.x"}]},
              {"localId": "a3", "email": "a3@example.com", "providerUserInfo": [{"providerId": "facebook.com", "rawId": "001.x"}]}
            ]}
            """.write(toFile: export, atomically: true, encoding: .utf8)
        let linked = try Binary.pipelineVariant("backfill-apple-names.yaml", replacing: "../Samples/accounts.json", with: export)
        defer { Binary.removeVariant(linked) }
        let linkedOut = Binary.temporaryDirectory()
        let (linkedCode, linkedOutput) = try Binary.run(["plan", linked, "--out", linkedOut, "--as-of", asOf])
        #expect(linkedCode == 1, "\(linkedOutput)")
        let linkedImport = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: linkedOut + "/cleaned-accounts.json"))) as? [String: Any]
        #expect((linkedImport?["users"] as? [[String: Any]])?.compactMap { $0["localId"] as? String } == ["a1", "a3"])
        let linkedQuarantine = try #require(try planJSON(linkedOut)["quarantine"] as? [[String: Any]])
        #expect(linkedQuarantine.map { "\($0["line"]!) \($0["field"]!): \($0["reason"]!)" }
                == ["3 providerUserInfo: duplicate: an account before it in the import file is linked to the same apple.com user; the import would create both"])

        // Apply has nothing to carry out for the migration: it says that the accounts are still to be imported ("applied"
        // alone read as a migration done).
        let (applied, appliedOutput) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"])
        #expect(applied == 1 && appliedOutput.contains("idpipe: apply imported no accounts (the pipeline has no stages.import): load "
            + "\(out)/import.json into the project yourself"), "\(appliedOutput)")
    }

    /// A legacy table's times in the other unit than its pipeline says (tables mix them) are quarantined with what they
    /// would be in that unit: seconds read as milliseconds were January 1970, milliseconds read as seconds the year 55,000,
    /// both written to the import file without a word. 0 (a table's "never") passes. A time before 1970 says its date;
    /// yes/no flags are read; a header column in another letter case is named, by plan and by validate.
    @Test func aLegacyTablesTimesInTheOtherUnitAreQuarantinedAndItsHeaderChecked() throws {
        let data = Binary.temporaryDirectory()
        try """
            id,created,last,off
            s1,1672912800,1704067200,no
            ms1,1672912800000,,Y
            never,1672912800,0,n
            """.write(toFile: data + "/seconds.csv", atomically: true, encoding: .utf8)
        try """
            id,created,last,off
            ms1,1672912800000,1704067200000,yes
            s1,1672912800,,false
            old,-2208988800000,,0
            """.write(toFile: data + "/millis.csv", atomically: true, encoding: .utf8)
        func plan(_ table: String, _ unit: String, header: String = "localId: id") throws -> (Int32, String, String) {
            let pipeline = "Pipelines/.test-\(UUID().uuidString).yaml"
            try """
                version: 1
                name: legacy-users
                source: {path: \(data)/\(table), format: mapped-csv, timestamp_format: \(unit),
                         mapping: {\(header), createdAt: created, lastSignedInAt: last, disabled: off}}
                output: {import_json: import.json}
                """.write(toFile: Binary.root.appendingPathComponent(pipeline).path, atomically: true, encoding: .utf8)
            defer { Binary.removeVariant(pipeline) }
            let out = Binary.temporaryDirectory()
            let (validCode, validOutput) = try Binary.run(["validate", pipeline])
            let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
            #expect(validCode == code || code == 1 && validCode == 0, "validate \(validCode): \(validOutput)\nplan \(code): \(output)")
            return (code, code == 2 ? validOutput + output : try String(contentsOfFile: out + "/plan.json", encoding: .utf8), out)
        }
        func quarantine(_ out: String) throws -> [String] {
            try #require(try planJSON(out)["quarantine"] as? [[String: Any]]).map { "\($0["line"]!) \($0["field"]!): \($0["reason"]!)" }
        }
        func imported(_ out: String) throws -> [[String: Any]] {
            let file = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/import.json"))) as? [String: Any]
            return try #require(file?["users"] as? [[String: Any]])
        }
        let (secondsCode, _, seconds) = try plan("seconds.csv", "epoch-s")
        #expect(secondsCode == 1)
        // The value masked (digits may be a phone number), what it would be said in full.
        #expect(try quarantine(seconds) == ["3 createdAt: '#############' is after the year 5000 in epoch seconds (column \"created\"): read as "
            + "milliseconds it is 2023-01-05T10:00:00Z; is the column in milliseconds (source.timestamp_format: epoch-ms)?"])
        let secondsUsers = try imported(seconds)
        #expect(secondsUsers.map { "\($0["localId"]!) \($0["createdAt"] ?? "-") \($0["lastSignedInAt"] ?? "-") \($0["disabled"]!)" }
                == ["s1 1672912800000 1704067200000 0", "never 1672912800000 0 0"], "\(secondsUsers)")
        let (millisCode, _, millis) = try plan("millis.csv", "epoch-ms")
        #expect(millisCode == 1)
        #expect(try quarantine(millis) == [
            "3 createdAt: '##########' is before March 1973 in epoch milliseconds (column \"created\"): read as seconds it is "
                + "2023-01-05T10:00:00Z; is the column in seconds (source.timestamp_format: epoch-s)?",
            "4 createdAt: is 1900-01-01T00:00:00Z, before 1970: an account's times are after 1970-01-01",
        ])
        #expect(try imported(millis).map { "\($0["localId"]!) \($0["disabled"]!)" } == ["ms1 1"])

        let (headerCode, headerOutput, _) = try plan("seconds.csv", "epoch-s", header: "localId: ID")
        #expect(headerCode == 2 && headerOutput.contains("seconds.csv:1: the mapping names column 'ID' for localId, but the header has 'id': "
            + "names are matched as written, letter case included"), "\(headerOutput)")
        #expect(headerOutput.contains("plan would stop at the source's header"), "validate says so too: \(headerOutput)")
    }

    /// The sample cleanup with its deletion requests changed by `edit`: the variant's path (for `Binary.removeVariant`).
    func cleanupWithRequests(_ edit: (String) -> String) throws -> String {
        let requests = try String(contentsOfFile: Binary.root.appendingPathComponent("Samples/deletion-requests.csv").path, encoding: .utf8)
        let file = Binary.temporaryDirectory() + "/requests.csv"
        try edit(requests).write(toFile: file, atomically: true, encoding: .utf8)
        return try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/deletion-requests.csv", with: file)
    }

    /// A deletion request whose account's row the plan quarantined (a bad email, a bad phone number) is not acted on,
    /// and is said so, on stderr and in both reports: it sat among the ids "not in the export", and every night exits 1
    /// for the quarantine alone. An id given twice, whose first row is processed, is not among them.
    @Test func deletionRequestsOfQuarantinedAccountsAreSaid() throws {
        let pipeline = try cleanupWithRequests {
            $0 + ["PcmB4mHN1Pg2Gta2bpy0J0q6BlSQ", "wXgVHyxjNJlvZro7811MxD5pxHzE", "NoKRZR6xhxXphffTtu08JSO4GPAb"].map { "\($0),2026-10-01T00:00:00Z,app\n" }.joined()
        }
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        // Exit 3: the id given twice now has a deletion planned for its first row, which its guard stops (as it did before).
        #expect(code == 3 && output.contains("idpipe: warning: 2 deletion requests in inputs.deletion_requests name accounts whose rows the "
            + "plan quarantined: not acted on until those rows are fixed at the source"), "\(output)")
        let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(report.contains("**2 deletion requests name accounts whose rows the plan quarantined**")
                && report.contains("`PcmB4mHN1Pg2Gta2bpy0J0q6BlSQ` `wXgVHyxjNJlvZro7811MxD5pxHzE`."), "\(report)")
        let run = try #require(try planJSON(out)["run"] as? [String: Any])
        let found = run["deletionRequestsOfQuarantined"] as? [String: Any]
        #expect(found?["count"] as? Int == 2, "\(String(describing: found))")
    }

    /// A deletion request dated after the plan's time is not honoured, and the plan says so on stderr and in plan.md.
    @Test func aDeletionRequestAfterThePlansTimeIsNotHonouredAndSaidSo() throws {
        let pipeline = try cleanupWithRequests {
            $0.replacingOccurrences(of: "kxNSVd2N6kjEfd7jdQtG8jgckJxF,2026-08-22T05:08:41Z", with: "kxNSVd2N6kjEfd7jdQtG8jgckJxF,2030-01-01T00:00:00Z")
        }
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (_, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(output.contains("warning: 1 deletion request in inputs.deletion_requests is dated after the plan's time (\(asOf)) and not honoured"), "\(output)")
        let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(report.contains("**1 deletion request is dated after the plan's time**"))
        let ledger = try String(contentsOfFile: out + "/ledger.csv", encoding: .utf8)
        #expect(!ledger.contains("kxNSVd2N6kjEfd7jdQtG8jgckJxF,delete-account"), "\(ledger.prefix(600))")
    }

    /// What the plan reads and cannot use is said: an empty stored-tokens file (every Apple account was "no stored
    /// token", deleted unrevoked, without a word), deletion requests no rule selects by, a new --as-of for a resumed plan.
    @Test func inputsThatChangeNothingAreSaid() throws {
        let empty = Binary.temporaryDirectory() + "/tokens.jsonl"
        try "".write(toFile: empty, atomically: true, encoding: .utf8)
        let (code, output) = try planVariant(replacing: "../Samples/stored-tokens.jsonl", with: empty)
        #expect(code == 1 && output.contains("warning: inputs.stored_tokens (\(empty)) has no rows: no revocation that needs a stored token is possible"),
                "\(output)")
        let unused = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "deletion_requested: true", with: "disabled: true")
        defer { Binary.removeVariant(unused) }
        let (valid, validOutput) = try Binary.run(["validate", unused])
        #expect(valid == 0 && validOutput.contains("warning: inputs.deletion_requests is given, but select.deletion_requested is not true"), "\(validOutput)")
        // A legacy names table no name source reads: read, and used nowhere, without a word.
        let unread = try Binary.pipelineVariant("backfill-apple-names.yaml", replacing: "sources: [legacy, provider:apple.com, provider:facebook.com, provider:google.com]",
                                                with: "sources: [provider:apple.com, email-local-part]")
        try String(contentsOfFile: Binary.root.appendingPathComponent(unread).path, encoding: .utf8)
            .replacingOccurrences(of: "detect_relay: true", with: "detect_relay: false")
            .write(toFile: Binary.root.appendingPathComponent(unread).path, atomically: true, encoding: .utf8)
        defer { Binary.removeVariant(unread) }
        let (unreadCode, unreadOutput) = try Binary.run(["validate", unread])
        #expect(unreadCode == 0 && unreadOutput.contains("warning: inputs.legacy_names is given, but nothing reads it"), "\(unreadOutput)")
        // The relay review reads only its consent column, and so does a backfill with no legacy source (for the names of
        // Facebook and Google logins on relay accounts).
        let relayOnly = try Binary.pipelineVariant("backfill-apple-names.yaml", replacing: "sources: [legacy, ", with: "sources: [")
        defer { Binary.removeVariant(relayOnly) }
        try String(contentsOfFile: Binary.root.appendingPathComponent(relayOnly).path, encoding: .utf8)
            .replacingOccurrences(of: "detect_relay: true", with: "detect_relay: false")
            .write(toFile: Binary.root.appendingPathComponent(relayOnly).path, atomically: true, encoding: .utf8)
        for pipeline in ["Pipelines/backfill-apple-names.yaml", "Pipelines/review-relay-accounts.yaml", relayOnly] {
            let (_, said) = try Binary.run(["validate", pipeline])
            #expect(!said.contains("inputs.legacy_names"), "\(pipeline): \(said)")
        }
        // What widens or caps the deletions is said: both revocation policies, and guards (here some; none is said too).
        #expect(validOutput.contains("when a revocation is not possible: delete, when one fails: keep"), "\(validOutput)")
        #expect(validOutput.contains("guards: at most 100 deletions"), "\(validOutput)")
        // The services apply needs and the pipeline lacks (the sample has none): validate said "valid", and apply refused.
        #expect(validOutput.contains("warning: apply needs services the pipeline does not configure (its plan is made and can be reviewed "
            + "all the same): services.google (session ends, account deletions and the data paths), services.apple "
            + "(Apple revocations), services.facebook (Facebook revocations)"), "\(validOutput)")
        // Each names what its own pipeline would have Google do.
        let (_, backfill) = try Binary.run(["validate", "Pipelines/backfill-apple-names.yaml"])
        #expect(backfill.contains("services the pipeline does not configure (its plan is made and can be reviewed all the same): "
            + "services.google (name updates)\n"), "\(backfill)")
        let unguarded = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "guards:\n  max_deletions: 100\n  max_deletion_share: 0.10\n", with: "")
        defer { Binary.removeVariant(unguarded) }
        let (_, unguardedOutput) = try Binary.run(["validate", unguarded])
        #expect(unguardedOutput.contains("guards: none (nothing caps the deletions; --max-deletions caps an apply)"), "\(unguardedOutput)")
        let out = Binary.temporaryDirectory()
        let small = ["IDPIPE_BATCH_RECORDS": "50", "IDPIPE_BATCH_BYTES": "8192"]
        let (stopped, _) = try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", out, "--as-of", asOf],
                                          environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "1"]) { $1 })
        #expect(stopped == 130)
        let (_, resumed) = try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", out, "--as-of", "2020-01-01T00:00:00Z"], environment: small)
        #expect(resumed.contains("--as-of 2020-01-01T00:00:00Z was not used: a resumed plan keeps the time it was started with (\(asOf))"), "\(resumed)")
    }

    /// The run keeps the idpipe that planned it: status, plan.md and plan.json name it, and an interrupted plan that another
    /// version started is not resumed (its first batches were planned by that version's rules), and status says so.
    @Test func anInterruptedPlanIsResumedOnlyByTheVersionThatStartedIt() throws {
        let out = Binary.temporaryDirectory()
        let state = out + "/state.sqlite"
        let plan = ["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", out, "--as-of", asOf]
        let small = ["IDPIPE_BATCH_RECORDS": "50", "IDPIPE_BATCH_BYTES": "8192"]
        let (stopped, _) = try Binary.run(plan, environment: small.merging(["IDPIPE_STOP_AFTER_BATCHES": "1"]) { $1 })
        #expect(stopped == 130)
        let (_, ours) = try Binary.run(["status", "--state", state])
        #expect(ours.contains("planned by: idpipe \(IdPipeVersion.text)\n") && ours.contains("finishes it"), "\(ours)")
        let (marked, markOutput) = try Binary.run(["-c", """
            import json, sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            record = json.loads(db.execute("SELECT record FROM run").fetchone()[0])
            record["idpipeVersion"] = "0.3.9"
            db.execute("UPDATE run SET record = ?", (json.dumps(record),)); db.commit()
            print(db.execute("SELECT input FROM checkpoint").fetchone()[0])
            """, state], executable: "/usr/bin/env", prefix: ["python3"])
        #expect(marked == 0, "\(markOutput)")
        let (_, theirs) = try Binary.run(["status", "--state", state])
        #expect(theirs.contains("planned by: idpipe 0.3.9 (this is idpipe \(IdPipeVersion.text))"), "\(theirs)")
        #expect(theirs.contains("(interrupted; started by idpipe 0.3.9: only that idpipe finishes it, or plan again into a new state store)"),
                "\(theirs)")
        // A store copied without its mark of an unsynced plan: the refusal writes none (the next plan would start it over).
        try? FileManager.default.removeItem(atPath: state + ".unsynced")
        for command in [["resume", "--state", state], plan] {
            let (refused, output) = try Binary.run(command, environment: small)
            #expect(refused == 2 && output.contains("cannot resume: the interrupted plan was started by idpipe 0.3.9, and this is idpipe "
                + "\(IdPipeVersion.text)"), "\(output)")
            #expect(!FileManager.default.fileExists(atPath: state + ".unsynced"), "\(command)")
        }
        // Apply and the reports say who finishes it, not `resume` (which refuses).
        let (applyCode, applyOutput) = try Binary.run(["apply", "--state", state, "--yes"])
        #expect(applyCode == 2 && applyOutput.contains("is not finished; it was started by idpipe 0.3.9; only that idpipe completes it (this is idpipe "
            + "\(IdPipeVersion.text)), or plan again into a new state store"), "\(applyOutput)")
        let (_, incomplete) = try Binary.run(["report", "--state", state, "--format", "md"])
        #expect(incomplete.contains("It was started by idpipe 0.3.9; only that idpipe finishes it.") && !incomplete.contains("`idpipe resume` finishes it"),
                "\(incomplete)")
        #expect(incomplete.contains("idpipe: warning: the plan is not finished: the report covers the input read so far; it was started by "
            + "idpipe 0.3.9; only that idpipe finishes it"), "\(incomplete)")
        let (_, checkpoint) = try Binary.run(["-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT input FROM checkpoint').fetchone()[0])",
                                              state], executable: "/usr/bin/env", prefix: ["python3"])
        #expect(checkpoint == markOutput, "nothing more was read")

        let fresh = Binary.temporaryDirectory()
        let (planned, _) = try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", fresh, "--as-of", asOf])
        #expect(planned == 1)
        #expect(try String(contentsOfFile: fresh + "/plan.md", encoding: .utf8).contains("| Planned by | idpipe \(IdPipeVersion.text) |"))
        #expect(try String(contentsOfFile: fresh + "/plan.json", encoding: .utf8).contains("\"idpipeVersion\": \"\(IdPipeVersion.text)\""))
    }

    /// Planning into another pipeline's store names that pipeline (it said this pipeline file had changed).
    @Test func anotherPipelinesStoreIsNamed() throws {
        let out = Binary.temporaryDirectory()
        let (first, _) = try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--as-of", asOf])
        #expect(first == 0 || first == 1)
        let (code, output) = try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", out, "--as-of", asOf])
        #expect(code == 2 && output.contains("the state store holds a plan of another pipeline, 'review-relay-accounts'"), "\(output)")
    }

    /// The binary allocates with jemalloc (linked in Package.swift for speed): asked to, it prints its statistics at exit.
    @Test func theBinaryAllocatesWithJemalloc() throws {
        let (status, output) = try Binary.run(["--help"], environment: ["MALLOC_CONF": "stats_print:true"])
        #expect(status == 0)
        #expect(output.contains("jemalloc statistics"))
    }

    @Test func exitCodesSayWhatHappened() throws {
        let out = Binary.temporaryDirectory()
        let (bad, message) = try Binary.run(["validate", "Pipelines/does-not-exist.yaml"])
        #expect(bad == 2)
        #expect(message.contains("does-not-exist.yaml"))
        // A broken byte is placed on its line.
        let broken = Binary.temporaryDirectory() + "/broken.yaml"
        try Data(Array("version: 1\nname: x\n# caf".utf8) + [0xE9] + Array("\nsource: {path: a.json}\n".utf8)).write(to: URL(fileURLWithPath: broken))
        let (brokenCode, brokenOutput) = try Binary.run(["validate", broken])
        #expect(brokenCode == 2 && brokenOutput.contains("broken.yaml:3: the pipeline file is not valid UTF-8"), "\(brokenOutput)")
        let strict = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "max_deletions: 100", with: "max_deletions: 1")
        defer { Binary.removeVariant(strict) }
        let (guardCode, guardOutput) = try Binary.run(["plan", strict, "--out", out, "--as-of", asOf])
        #expect(guardCode == 3, "\(guardOutput)")
        #expect(guardOutput.contains("guards.max_deletions allows 1"))
        #expect(try String(contentsOfFile: out + "/plan.md", encoding: .utf8).contains("Nothing may be applied from this plan. To go on, raise the guard"))
        let (status, statusOutput) = try Binary.run(["status", "--state", out + "/state.sqlite"])
        #expect(status == 0)
        #expect(statusOutput.contains("status: stopped-by-guard"))
        #expect(try Binary.run(["status", "--state", out + "/state.sqlite", "--exit-code"]).0 == 3)
        #expect(statusOutput.contains("pipeline: cleanup-deleted-accounts (\(strict))") && statusOutput.contains("input: Samples/accounts.json"), "\(statusOutput)")
        // From another folder, the paths the plan was given from its own are shown from there.
        let (_, elsewhere) = try Binary.run(["-c", "cd / && exec \"$0\" status --state \"$1\"", Binary.path, out + "/state.sqlite"], executable: "/bin/sh")
        let root = Binary.root.path
        #expect(elsewhere.contains("pipeline: cleanup-deleted-accounts (\(root)/\(strict))") && elsewhere.contains("input: \(root)/Samples/accounts.json"), "\(elsewhere)")
        // A store from idpipe 0.7.0 names the input as it was joined: planning into it again is the same plan, not a changed one.
        let rewrite = "import sqlite3,sys,json\nc=sqlite3.connect(sys.argv[1])\nr=json.loads(c.execute('select record from run').fetchone()[0])\n"
            + "assert r['sourcePath']=='Samples/accounts.json'\nr['sourcePath']='Pipelines/../Samples/accounts.json'\n"
            + "c.execute('update run set record=?',(json.dumps(r),))\nc.commit()"
        #expect(try Binary.run(["-c", rewrite, out + "/state.sqlite"], executable: TestPython.path).0 == 0)
        let (again, againOutput) = try Binary.run(["plan", strict, "--out", out, "--as-of", asOf])
        #expect(again == 3 && !againOutput.contains("changed") && againOutput.contains("guards.max_deletions allows 1"), "\(againOutput)")
        // status shows that store's path tidied too.
        #expect(try Binary.run(["status", "--state", out + "/state.sqlite"]).1.contains("input: Samples/accounts.json"))
        // A report that cannot be written whole (a full disk) is an error, not a quietly truncated file.
        let (full, fullOutput) = try Binary.run(["report", "--state", out + "/state.sqlite", "--format", "json", "--output", "/dev/full"])
        #expect(full == 2, "\(fullOutput)")
        #expect(fullOutput.contains("cannot write /dev/full"))
        // plan --yes points to the commands that apply (ArgumentParser offered --out).
        let (yes, yesOutput) = try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--yes"])
        #expect(yes == 2 && yesOutput.contains("plan is the dry run and applies nothing: `idpipe run PIPELINE.yaml --yes` plans and applies"),
                "\(yesOutput)")
        // Bad usage is 2 like any other bad input (not ArgumentParser's 64).
        let (usage, usageOutput) = try Binary.run(["plan"])
        #expect(usage == 2)
        #expect(usageOutput.contains("Missing expected argument '<pipeline>'"), "\(usageOutput)")
        let (format, _) = try Binary.run(["report", "--state", out + "/state.sqlite", "--format", "xml"])
        #expect(format == 2)
        try "".write(toFile: out + "/empty.sqlite", atomically: true, encoding: .utf8)
        // A negative count is refused for what it is, not taken for an unknown option ("Missing value").
        for (arguments, message) in [(["plan", strict, "--workers", "-1"], "--workers must be between 1 and 256"),
                                     (["plan", strict, "--workers", "100000"], "--workers must be between 1 and 256"),
                                     (["report", "--state", out + "/state.sqlite", "--list-limit", "-1"], "--list-limit must be 0 or more"),
                                     (["plan", strict, "--as-of", "2026-13-01"], "--as-of '2026-13-01' is not an RFC 3339 time: its month is not 01 to 12"),
                                     (["report", "--state", out + "/state.sqlite", "--mask-personal-data", "--reveal-personal-data"], "ask for opposite things"),
                                     (["apply", "--state", out + "/state.sqlite", "--max-deletions", "-3"], "--max-deletions must be 0 or more"),
                                     // An empty --out wrote into the root folder; a file for --out, a folder for --state, were
                                     // named as a state store's lock or a SQLite error.
                                     (["plan", strict, "--out", ""], "--out is empty"),
                                     (["plan", strict, "--out", out + "/plan.md"], "--out \(out)/plan.md is a file, not a folder"),
                                     (["status", "--state", out], "--state \(out) is a folder"),
                                     (["status", "--state", ""], "--state is empty"),
                                     (["status", "--state", out + "/empty.sqlite"], "empty.sqlite is empty: not a state store"),
                                     // A report over the run's own export replaced it, and apply refused the run after.
                                     (["report", "--state", out + "/state.sqlite", "--output", "Samples/accounts.json"], "is the run's input: the report would replace it"),
                                     (["report", "--state", out + "/state.sqlite", "--output", strict], "is the run's pipeline file"),
                                     (["report", "--state", out + "/state.sqlite", "--output", "Samples/deletion-requests.csv"], "is the run's inputs.deletion_requests")] {
            let (code, output) = try Binary.run(arguments)
            #expect(code == 2 && output.contains(message), "\(arguments): \(output)")
        }
    }

    /// The command a stopped plan suggests can be pasted as it is, from a folder whose name has a space and a quote.
    @Test func aSuggestedCommandQuotesItsPath() throws {
        let out = Binary.temporaryDirectory() + "/review's out"
        let (stopped, output) = try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--as-of", asOf],
                                               environment: ["IDPIPE_BATCH_RECORDS": "50", "IDPIPE_STOP_AFTER_BATCHES": "1"])
        #expect(stopped == 130)
        let command = try #require(output.firstMatch(of: /`(idpipe resume --state [^`]+)`/)?.output.1, "\(output)")
        #expect(command == "idpipe resume --state '\(out.replacingOccurrences(of: "'", with: #"'\''"#))/state.sqlite'")
        let (code, resumed) = try Binary.run(["-c", "idpipe() { \"$0\" \"$@\"; }; " + command, Binary.path], executable: "/bin/sh")
        #expect(code == 1 && resumed.contains("Resumed an interrupted plan"), "the samples hold quarantined rows: \(resumed)")
    }

    /// validate reads the side inputs as plan does: it said "valid" for a legacy table the plan then refused.
    @Test func validateReadsTheSideInputs() throws {
        let folder = Binary.temporaryDirectory()
        for (name, text, said) in [("no-consent.csv", "uid,given_name,family_name\nu1,A,B\n", "no-consent.csv:1: the header has no column 'consent'"),
                                   ("twice.csv", "uid,given_name,family_name,consent\nu1,A,B,true\nu1,C,D,false\n", "twice.csv:3: uid: 'u1' appears twice")] {
            try text.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8)
            let variant = try Binary.pipelineVariant("backfill-apple-names.yaml", replacing: "../Samples/legacy-names.csv", with: folder + "/" + name)
            defer { Binary.removeVariant(variant) }
            let (code, output) = try Binary.run(["validate", variant])
            #expect(code == 2 && output.contains("plan would stop at a side input: ") && output.contains(said), "\(output)")
        }
        // A side input given as a stream is not read (it would be used up before the plan).
        let streamed = try Binary.pipelineVariant("backfill-apple-names.yaml", replacing: "../Samples/legacy-names.csv", with: "/dev/stdin")
        defer { Binary.removeVariant(streamed) }
        let (code, output) = try Binary.run(["-c", #"printf 'uid,given_name\n' | "$0" validate "$1""#, Binary.path, streamed], executable: "/bin/sh")
        #expect(code == 0 && output.hasSuffix(": valid\n"), "\(output)")
    }

    /// A plan that `run --yes` started, stopped, says in `status` that resume will apply it once finished.
    @Test func statusSaysAResumedRunYesWillApply() throws {
        let out = Binary.temporaryDirectory()
        let (stopped, _) = try Binary.run(["run", "Pipelines/review-relay-accounts.yaml", "--yes", "--out", out, "--as-of", asOf],
                                          environment: ["IDPIPE_BATCH_RECORDS": "50", "IDPIPE_STOP_AFTER_BATCHES": "1"])
        #expect(stopped == 130)
        let (_, status) = try Binary.run(["status", "--state", out + "/state.sqlite"])
        #expect(status.contains("finishes it, then applies it, as `run --yes` asked)"), "\(status)")
    }

    /// A report written over the migration's import file replaced it with Markdown, and the plan run again named the
    /// file as if it were whole.
    @Test func aReportIsNotWrittenOverTheImportFile() throws {
        let out = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/backfill-apple-names.yaml", "--out", out, "--as-of", asOf])
        let before = try Data(contentsOf: URL(fileURLWithPath: out + "/cleaned-accounts.json"))
        let (code, output) = try Binary.run(["report", "--state", out + "/state.sqlite", "--output", out + "/cleaned-accounts.json"])
        #expect(code == 2 && output.contains("is the run's import file: the report would replace it"), "\(output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/cleaned-accounts.json")) == before)
    }

    /// The summary lines count in the singular too: "1 account read", "1 input row was quarantined".
    @Test func summaryLinesSayOneInTheSingular() throws {
        let data = Binary.temporaryDirectory()
        // The export's 52 fields and trailing comma, its email without an @.
        try ("onlyRow1,no-at" + String(repeating: ",", count: 51) + "\n").write(toFile: data + "/one.csv", atomically: true, encoding: .utf8)
        let (code, output) = try planVariant(replacing: Self.exportLine, with: "path: \(data)/one.csv\n  format: auth-export-csv")
        #expect(code == 1, "\(output)")
        #expect(output.contains("1 account read, 1 quarantined"), "\(output)")
        #expect(output.contains("idpipe: 1 input row was quarantined;"), "\(output)")
    }

    /// Another file given as a CSV export (the JSON export, a table with semicolons) had every row quarantined, and
    /// the plan ended "done, with quarantined rows" (exit 1): it is refused, as a CSV given as a JSON export is. An
    /// empty export (a CSV of no users is one) is planned, with a warning.
    @Test func aFileThatIsNoCSVExportIsRefused() throws {
        let data = Binary.temporaryDirectory()
        try "uid;email;name\nu1;a@example.com;Ann\n".write(toFile: data + "/semicolons.csv", atomically: true, encoding: .utf8)
        // The JSON export's first line, `{"users": [`, is a broken quote: its first row is its second line.
        for (file, line) in [("Samples/accounts.json", 2), (data + "/semicolons.csv", 1)] {
            let path = file.hasPrefix("/") ? file : Binary.root.appendingPathComponent(file).path
            let (code, output) = try planVariant(replacing: Self.exportLine, with: "path: \(path)\n  format: auth-export-csv")
            #expect(code == 2, "\(output)")
            #expect(output.contains("\(path):\(line): not an auth:export CSV file: none of its first ")
                        && output.contains("has the export's 52 fields (and trailing comma); line \(line) has 1 field"),
                    "\(output)")
        }
        try "".write(toFile: data + "/empty.csv", atomically: true, encoding: .utf8)
        let (code, output) = try planVariant(replacing: Self.exportLine, with: "path: \(data)/empty.csv\n  format: auth-export-csv")
        #expect(code == 0, "\(output)")
        #expect(output.contains("0 accounts read") && output.contains("idpipe: warning: the input \(data)/empty.csv holds no accounts"), "\(output)")
    }

    /// A header row (a table exported with one) is named as such, where its reason was "'e•••' is not true or false";
    /// a file cut inside its last row says so, as the JSON export's reader does.
    @Test func aHeaderRowAndACutLastRowAreNamed() throws {
        let data = Binary.temporaryDirectory()
        let rows = try String(contentsOfFile: Binary.root.appendingPathComponent("Samples/accounts.csv").path, encoding: .utf8)
            .split(separator: "\n").prefix(3).map(String.init)
        let header = "localId,Email,emailVerified,passwordHash" + String(repeating: ",", count: 49)
        try ([header] + rows).joined(separator: "\n").dropLast(30).write(toFile: data + "/cut.csv", atomically: true, encoding: .utf8)
        func quarantine(_ file: String) throws -> [String] {
            let (code, output) = try planVariant(replacing: Self.exportLine, with: "path: \(data)/\(file)\n  format: auth-export-csv")
            #expect(code == 1 && output.contains("4 accounts read, 2 quarantined"), "\(output)")
            let out = output.components(separatedBy: "report: ").dropFirst().first.map { String($0.prefix { $0 != "\n" }) } ?? ""
            let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out.replacingOccurrences(of: "plan.md", with: "plan.json"))))
            return ((report as? [String: Any])?["quarantine"] as? [[String: Any]] ?? []).map { "\($0["line"]!) \($0["reason"]!)" }
        }
        #expect(try quarantine("cut.csv") == [
            "1 looks like a header row (its second field is the word email): an auth:export CSV has none",
            "4 has 27 fields; an auth:export row has 52 and a trailing comma (the file ends inside this row, without a line end: cut short?)",
        ])
        // Too many fields at the end is no cut.
        try ([header] + rows.prefix(2) + [rows[2] + ",x,y,z"]).joined(separator: "\n").write(toFile: data + "/long.csv", atomically: true, encoding: .utf8)
        #expect(try quarantine("long.csv").last == "4 has 56 fields; an auth:export row has 52 and a trailing comma")
    }

    /// An id given twice, its first row selected for deletion and its second (quarantined) at a protected domain: the
    /// plan had deleted the account on the first row's word. It now stops as a guard stops it (exit 3), and apply
    /// refuses it. An id given twice with no deletion planned is only quarantined (exit 1).
    @Test func anIdGivenTwiceStopsAPlanThatWouldDeleteIt() throws {
        let data = Binary.temporaryDirectory()
        func user(_ uid: String, _ email: String, disabled: Bool) -> String {
            "{\n  \"localId\": \"\(uid)\",\n  \"email\": \"\(email)\",\n  \"disabled\": \(disabled)\n}"
        }
        let pipeline = "Pipelines/.test-\(UUID().uuidString).yaml"
        try """
            version: 1
            name: repeated
            source: {path: \(data)/export.json}
            select: {disabled: true, protect: {email_domains: [corp.example]}}
            stages: {delete: {when_not_revocable: delete}}
            """.write(toFile: Binary.root.appendingPathComponent(pipeline).path, atomically: true, encoding: .utf8)
        defer { Binary.removeVariant(pipeline) }
        for (first, code) in [(true, Int32(3)), (false, Int32(1))] {
            let users = [user("dup1", "a@example.com", disabled: first), user("dup1", "boss@corp.example", disabled: true), user("ok2", "b@example.com", disabled: true)]
            try ("{\"users\": [\n" + users.joined(separator: ",\n") + "]}\n").write(toFile: data + "/export.json", atomically: true, encoding: .utf8)
            let out = Binary.temporaryDirectory()
            let (planned, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
            #expect(planned == code, "\(output)")
            let said = output.contains("stopped by a guard: the input gives 1 id twice with a deletion planned for the first row")
            #expect(said == first, "\(output)")
            guard first else { continue }
            let (applied, applyOutput) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"])
            #expect(applied != 0 && applyOutput.contains("guard"), "\(applyOutput)")
        }
    }

    /// An export cut short (a copy that stopped midway), through the binary: every account it starts is read, the one
    /// cut ends in the quarantine with its file, line and id, and the plan exits 1 saying the input ends early. One that
    /// is not an export at all is refused (exit 2), naming the file and line.
    @Test func aTruncatedOrGarbledExportSaysWhereAndExitsSo() throws {
        let data = Binary.temporaryDirectory()
        let whole = try String(contentsOf: Binary.root.appendingPathComponent("Samples/accounts.json"), encoding: .utf8)
        // The cut falls in the 11th account, after its id.
        var starts = whole.ranges(of: "\n{\n").map(\.upperBound)
        starts.removeFirst(10)
        let cutAt = try #require(whole.range(of: ",\n", range: starts[0]..<whole.endIndex)).upperBound
        let cut = String(whole[..<cutAt]) + "  \"ema"
        try cut.write(toFile: data + "/cut.json", atomically: true, encoding: .utf8)
        let pipeline = try Binary.pipelineVariant("review-relay-accounts.yaml", replacing: "../Samples/accounts.json", with: data + "/cut.json")
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        #expect(output.contains("idpipe: the input ends early (truncated?), and 1 account was quarantined;"), "\(output)")
        let plan = try planJSON(out)
        let totals = try #require(plan["totals"] as? [String: Int])
        let started = cut.ranges(of: "\"localId\"").count
        #expect(totals["accounts.read"] == started && totals["accounts.read"] == totals["accounts.processed", default: 0] + totals["accounts.quarantined", default: 0],
                "\(totals)")
        // The line of the cut account's opening brace (`starts[0]` is just past it and its newline).
        let cutLine = cut[..<starts[0]].split(separator: "\n", omittingEmptySubsequences: false).count - 1
        let entries = try #require(plan["quarantine"] as? [[String: Any]])
        let entry = try #require(entries.first { $0["line"] as? Int == cutLine }, "no quarantine entry on line \(cutLine): \(entries)")
        #expect(entry["file"] as? String == data + "/cut.json")
        #expect(entry["uid"] as? String != nil && (entry["reason"] as? String ?? "").contains("truncated"), "\(entry)")

        try "hello, world\n".write(toFile: data + "/garbled.json", atomically: true, encoding: .utf8)
        let garbled = try Binary.pipelineVariant("review-relay-accounts.yaml", replacing: "../Samples/accounts.json", with: data + "/garbled.json")
        defer { Binary.removeVariant(garbled) }
        let (refused, refusal) = try Binary.run(["plan", garbled, "--out", Binary.temporaryDirectory(), "--as-of", asOf])
        #expect(refused == 2, "\(refusal)")
        #expect(refusal.contains("\(data)/garbled.json:1: not an auth:export JSON file"), "\(refusal)")
    }

    /// The progress line is drawn on a terminal (stderr), rewritten in place and cleared at the end; piped, the output
    /// has none of it.
    enum TerminalStreams { case stderr, all }

    /// Runs idpipe with `streams` on a new terminal (the others from and to nowhere), answering `answering.1` once the
    /// output shows `answering.0`; gives its exit code and what the terminal showed, as Python's repr of the bytes (so
    /// control sequences read as `\r\x1b[K`).
    func onATerminal(_ arguments: [String], streams: TerminalStreams, answering: (String, String)? = nil,
                     environment: [String: String] = [:]) throws -> (Int32, String) {
        let script = #"""
            import os, pty, subprocess, sys
            binary, streams, prompt, answer = sys.argv[1:5]
            master, terminal = pty.openpty()
            everything = streams == "all"
            child = subprocess.Popen([binary] + sys.argv[5:], stdin=terminal if everything else subprocess.DEVNULL,
                                     stdout=terminal if everything else subprocess.DEVNULL, stderr=terminal)
            os.close(terminal)
            shown, answered = b"", not prompt
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                shown += chunk
                if not answered and prompt.encode() in shown:
                    os.write(master, answer.encode() + b"\n")
                    answered = True
            child.wait()
            sys.stdout.write(repr(shown))
            sys.exit(child.returncode)
            """#
        return try runProgram("/usr/bin/env", ["python3", "-c", script, Binary.path, streams == .all ? "all" : "stderr",
                                               answering?.0 ?? "", answering?.1 ?? ""] + arguments, environment: environment)
    }

    /// Apply asks on a terminal before it changes anything: an answer other than "yes" leaves the plan as it was and
    /// says so (it read "pass --yes", as if nobody had been asked); with no terminal to ask on, it says to pass --yes.
    /// With nothing to send, it asks nothing (it asked to "apply these actions" and listed none).
    @Test func applyAsksOnATerminalAndAnAnswerOtherThanYesChangesNothing() throws {
        let out = Binary.temporaryDirectory()
        let (planCode, planOutput) = try Binary.run(["plan", "Pipelines/backfill-apple-names.yaml", "--out", out, "--as-of", asOf])
        #expect(planCode == 1, "\(planOutput)")
        let state = out + "/state.sqlite"
        let (code, output) = try Binary.run(["apply", "--state", state])
        #expect(code == 2 && output.contains("nothing was changed: apply changes accounts, and asks first on a terminal; pass --yes"), "\(output)")
        let (askedCode, asked) = try onATerminal(["apply", "--state", state], streams: .all, answering: ("Type 'yes': ", "n"))
        #expect(askedCode == 2, "\(asked)")
        #expect(asked.contains("update-name: 23 to do") && asked.contains("Apply these actions to the live accounts? Type 'yes': n"), "\(asked)")
        #expect(asked.contains("nothing was changed: the answer was not 'yes'; the plan in \(state) stays as it is"), "\(asked)")
        #expect(!asked.contains("pass --yes"), "\(asked)")
        let (_, status) = try Binary.run(["status", "--state", state])
        #expect(status.contains("status: planned") && status.contains("update-name: 23 planned"), "\(status)")
        // A plan with nothing to send (findings only) is not asked about: it was asked to apply no action at all.
        let review = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", review, "--as-of", asOf])
        let (reviewCode, reviewOutput) = try Binary.run(["apply", "--state", review + "/state.sqlite"])
        #expect(reviewCode == 1 && reviewOutput.contains("apply: 0 accounts, 0 actions done") && !reviewOutput.contains("asks first"), "\(reviewOutput)")
    }

    @Test func theProgressLineIsOnlyOnATerminal() throws {
        let slow = ["IDPIPE_BATCH_BYTES": "2048", "IDPIPE_TEST_BATCH_DELAY_MS": "5"]
        let (code, shown) = try onATerminal(["plan", "Pipelines/review-relay-accounts.yaml", "--out", Binary.temporaryDirectory(), "--as-of", asOf],
                                            streams: .stderr, environment: slow)
        #expect(code == 1, "\(shown)")
        // Python's repr of the bytes: \r\x1b[K starts each rewrite.
        let rewrites = shown.components(separatedBy: #"\r\x1b[Kplan: "#).count - 1
        #expect(rewrites > 5, "\(shown)")
        #expect(shown.contains("300 accounts"), "\(shown)")
        #expect(shown.hasSuffix(#"\r\x1b[K'"#) || shown.contains(#"\r\x1b[Kidpipe: "#), "the line is cleared at the end: \(shown)")
        let (pipedCode, piped) = try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", Binary.temporaryDirectory(), "--as-of", asOf],
                                                environment: slow)
        #expect(pipedCode == 1)
        #expect(!piped.contains("\u{1B}[K") && !piped.contains("\r") && !piped.contains("plan: "), "\(piped)")
    }

    /// Plans a variant that must be refused as bad input (exit 2), saying `message`.
    func expectRefused(replacing old: String, with new: String, saying message: String,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (code, output) = try planVariant(replacing: old, with: new)
        #expect(code == 2, "\(output)", sourceLocation: sourceLocation)
        #expect(output.contains(message), "\(output)", sourceLocation: sourceLocation)
    }

    /// The cleanup pipeline's `source` line, for `expectRefused`, with the export at `path`.
    static let exportLine = "path: ../Samples/accounts.json"
    static func export(at path: String) -> String { "path: \(path)\n  format: auth-export-json" }

    /// Plans a copy of the cleanup pipeline with `old` replaced by `new`, into a fresh folder; the copy is removed after.
    func planVariant(replacing old: String, with new: String) throws -> (Int32, String) {
        let pipeline = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: old, with: new)
        defer { Binary.removeVariant(pipeline) }
        return try Binary.run(["plan", pipeline, "--out", Binary.temporaryDirectory()])
    }

    /// A side input given as a stream (`/dev/stdin` here, `<(zcat tokens.gz)` in a shell) is planned from as its file
    /// is, and is fingerprinted by its bytes: a resume given other tokens is refused. Before, a stream was digested as
    /// empty, so a change went unnoticed. An export given as a stream is refused, since plans resume by position in it.
    @Test func streamedSideInputsAreFingerprinted() throws {
        let tokens = try String(contentsOfFile: Binary.root.appendingPathComponent("Samples/stored-tokens.jsonl").path, encoding: .utf8)
        let streamed = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/stored-tokens.jsonl", with: "/dev/stdin")
        defer { Binary.removeVariant(streamed) }
        let fileOut = Binary.temporaryDirectory(), streamOut = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", fileOut, "--as-of", asOf])
        let (code, output) = try runProgram(Binary.path, ["plan", streamed, "--out", streamOut, "--as-of", asOf], input: tokens)
        #expect(code == 1, "\(output)")
        let fileLedger = try String(contentsOfFile: fileOut + "/ledger.csv", encoding: .utf8)
        #expect(try String(contentsOfFile: streamOut + "/ledger.csv", encoding: .utf8) == fileLedger)
        #expect(fileLedger.contains("revoke-apple"))
        let (again, againOutput) = try runProgram(Binary.path, ["plan", streamed, "--out", streamOut, "--as-of", "2026-12-25T00:00:00Z"], input: tokens)
        #expect(again == 1, "the same tokens again: the finished plan stands")
        #expect(againOutput.contains("already holds a finished plan, as of \(asOf)"), "\(againOutput)")
        #expect(againOutput.contains("--as-of 2026-12-25T00:00:00Z was not used"), "\(againOutput)")
        // Nothing was read this time: the figures are the plan's, without a time (it said "in 0.01 s").
        #expect(againOutput.contains(" quarantined by that plan.\n") && !againOutput.contains(" quarantined, in "), "\(againOutput)")
        let fewer = tokens.split(separator: "\n").prefix(3).joined(separator: "\n") + "\n"
        let (changed, changedOutput) = try runProgram(Binary.path, ["plan", streamed, "--out", streamOut, "--as-of", asOf], input: fewer)
        #expect(changed == 2)
        #expect(changedOutput.contains("holds a finished plan, and the side input 'stored_tokens' changed since it was made"), "\(changedOutput)")
        let (apply, applyOutput) = try runProgram(Binary.path, ["apply", "--state", streamOut + "/state.sqlite", "--yes"], input: fewer)
        #expect(apply == 2)
        #expect(applyOutput.contains("refusing to apply: the side input 'stored_tokens'"), "\(applyOutput)")

        // The form a shell gives: a descriptor of its own, /dev/fd/5 here.
        let descriptor = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/stored-tokens.jsonl", with: "/dev/fd/5")
        defer { Binary.removeVariant(descriptor) }
        let descriptorOut = Binary.temporaryDirectory()
        let (shellCode, shellOutput) = try runProgram("/bin/bash", ["-c", #""$0" plan "$1" --out "$2" --as-of "$3" 5< <(cat Samples/stored-tokens.jsonl)"#,
                                                                    Binary.path, descriptor, descriptorOut, asOf])
        #expect(shellCode == 1, "\(shellOutput)")
        #expect(try String(contentsOfFile: descriptorOut + "/ledger.csv", encoding: .utf8) == fileLedger)

        // Ctrl-C while the stream is copied (its producer would be stopped too, cutting it short): nothing is recorded.
        let stoppedOut = Binary.temporaryDirectory()
        let (stopped, stoppedOutput) = try runProgram(
            "/bin/bash", ["-c", #"exec "$0" plan "$1" --out "$2" --as-of "$3" 5< <(sleep 1; cat Samples/stored-tokens.jsonl)"#,
                          Binary.path, descriptor, stoppedOut, asOf],
            signalWhenExists: (SIGINT, stoppedOut + "/state.sqlite.lock"))
        #expect(stopped == 130, "\(stoppedOutput)")
        #expect(stoppedOutput.contains("interrupted while reading the side inputs; nothing was recorded"), "\(stoppedOutput)")
        #expect(!FileManager.default.fileExists(atPath: stoppedOut + "/state.sqlite"))

        // A named pipe cannot be put back in its place: refused by name, before anything is read from it.
        let fifo = Binary.temporaryDirectory() + "/tokens.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        try expectRefused(replacing: "../Samples/stored-tokens.jsonl", with: fifo, saying: "inputs.stored_tokens: \(fifo): is a named pipe or a socket")
        // validate says so too (it called the file valid, and plan refused it).
        let fifoPipeline = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/stored-tokens.jsonl", with: fifo)
        defer { Binary.removeVariant(fifoPipeline) }
        let (validated, validateOutput) = try Binary.run(["validate", fifoPipeline])
        #expect(validated == 2 && validateOutput.contains("is a named pipe or a socket"), "\(validateOutput)")

        // Nothing is written to the pipe: idpipe stops before reading it, and a write after its exit would raise SIGPIPE here.
        try expectRefused(replacing: Self.exportLine, with: Self.export(at: "/dev/stdin"), saying: "source.path: the input /dev/stdin is a pipe")
        // Nor may the pipeline file be a pipe: resume and apply read it again.
        let pipelineText = try String(contentsOfFile: Binary.root.appendingPathComponent("Pipelines/review-relay-accounts.yaml").path, encoding: .utf8)
        let (pipedPipeline, pipedOutput) = try runProgram(Binary.path, ["plan", "/dev/stdin", "--out", Binary.temporaryDirectory()], input: pipelineText)
        #expect(pipedPipeline == 2)
        #expect(pipedOutput.contains("the pipeline file is a pipe"), "\(pipedOutput)")
    }

    /// Streams that a plain read loop would get wrong: a pipe inherited in non-blocking mode (a read finds no bytes
    /// yet while its writer pauses) and a terminal on stdin (a device, whose size says nothing, read up to Ctrl-D).
    /// Both are copied whole, so the plan and its digest see every token; a device by another name is refused.
    @Test func nonBlockingAndTerminalStreamsAreReadWhole() throws {
        let fileOut = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/cleanup-deleted-accounts.yaml", "--out", fileOut, "--as-of", asOf])
        let fileLedger = try String(contentsOfFile: fileOut + "/ledger.csv", encoding: .utf8)
        let descriptor = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/stored-tokens.jsonl", with: "/dev/fd/5")
        defer { Binary.removeVariant(descriptor) }
        let pausedOut = Binary.temporaryDirectory()
        let script = #"""
            set -e
            # The rest is written only once idpipe holds its lock (it copies the stream after): its reads find none first.
            exec 5< <(head -n 3 Samples/stored-tokens.jsonl; while [ ! -e "$2/state.sqlite.lock" ]; do sleep 0.05; done; sleep 0.3
                      tail -n +4 Samples/stored-tokens.jsonl)
            python3 -c 'import fcntl, os; fcntl.fcntl(5, fcntl.F_SETFL, fcntl.fcntl(5, fcntl.F_GETFL) | os.O_NONBLOCK)'
            exec timeout 60 "$0" plan "$1" --out "$2" --as-of "$3"
            """#
        let (paused, pausedOutput) = try runProgram("/bin/bash", ["-c", script, Binary.path, descriptor, pausedOut, asOf])
        #expect(paused == 1, "\(pausedOutput)")
        #expect(try String(contentsOfFile: pausedOut + "/ledger.csv", encoding: .utf8) == fileLedger)

        let stdin = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/stored-tokens.jsonl", with: "/dev/stdin")
        defer { Binary.removeVariant(stdin) }
        let terminalOut = Binary.temporaryDirectory()
        let typing = #"""
            import os, pty, select, subprocess, sys, termios
            binary, pipeline, out, as_of, tokens = sys.argv[1:6]
            # A terminal that echoes, as a user's does: what it shows back is checked for a token's text (and not printed).
            master, terminal = pty.openpty()
            plan = subprocess.Popen([binary, "plan", pipeline, "--out", out, "--as-of", as_of], stdin=terminal,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            os.close(terminal)
            prompt = plan.stdout.readline()  # typing starts once idpipe asks, as a user's would
            os.write(master, open(tokens, "rb").read() + b"\x04")
            try:
                output = prompt + plan.communicate(timeout=60)[0]
            except subprocess.TimeoutExpired:
                plan.kill()
                output = prompt + plan.communicate()[0] + b"\n(timed out)"
            shown = b""
            while select.select([master], [], [], 0.2)[0]:
                try:
                    shown += os.read(master, 65536)
                except OSError:
                    break
            echoed = b"refresh_token" in shown or b'"token"' in shown
            sys.stdout.buffer.write(output + b"\n(tokens echoed: " + (b"yes" if echoed else b"no") + b")")
            sys.exit(plan.returncode)
            """#
        func typed(_ tokens: String) throws -> (Int32, String) {
            try runProgram("/usr/bin/env", ["python3", "-c", typing, Binary.path, stdin, terminalOut, asOf, tokens])
        }
        let (typedCode, typedOutput) = try typed("Samples/stored-tokens.jsonl")
        #expect(typedCode == 1, "\(typedOutput)")
        // Tokens typed are not echoed (the terminal shows the line breaks only).
        #expect(typedOutput.contains("(what is typed does not show)"), "\(typedOutput)")
        #expect(typedOutput.hasSuffix("(tokens echoed: no)"), "\(typedOutput)")
        #expect(try String(contentsOfFile: terminalOut + "/ledger.csv", encoding: .utf8) == fileLedger)
        // Its digest is that of the bytes typed: fewer tokens typed into the same plan are refused.
        let tokens = try String(contentsOfFile: Binary.root.appendingPathComponent("Samples/stored-tokens.jsonl").path, encoding: .utf8)
        let fewer = TemporaryFile.write(tokens.split(separator: "\n").prefix(3).joined(separator: "\n") + "\n", name: "fewer-tokens.jsonl")
        let (changed, changedOutput) = try typed(fewer)
        #expect(changed == 2, "\(changedOutput)")
        #expect(changedOutput.contains("the side input 'stored_tokens' changed"), "\(changedOutput)")

        let (empty, emptyOutput) = try planVariant(replacing: "../Samples/stored-tokens.jsonl", with: "/dev/null")
        #expect(empty == 1, "/dev/null is an empty input: \(emptyOutput)")
        try expectRefused(replacing: "../Samples/stored-tokens.jsonl", with: "/dev/zero", saying: "inputs.stored_tokens: /dev/zero: is a device, not a file")
        try expectRefused(replacing: Self.exportLine, with: Self.export(at: "/dev/zero"), saying: "source.path: the input /dev/zero is a device, not a file")
    }

    /// A run killed while it renamed its reports into place left `plan.json.idpipe-partial.XXXXXX` files, a whole account list
    /// unfinished, that nothing removed. The next run that writes the same reports removes those no run holds locked,
    /// and says so; a link, a folder, another name, a file of the last seconds and one still locked stay.
    @Test func reportsLeftHalfWrittenByAStoppedRunAreRemoved() throws {
        let out = Binary.temporaryDirectory()
        let plan = ["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--as-of", asOf]
        #expect(try Binary.run(plan).0 == 1)
        let hourAgo = Date(timeIntervalSinceNow: -3600)
        func leave(_ name: String, old: Bool = true) throws {
            try "{\"accounts\": [".write(toFile: out + "/" + name, atomically: false, encoding: .utf8)
            if old { try FileManager.default.setAttributes([.modificationDate: hourAgo], ofItemAtPath: out + "/" + name) }
        }
        try leave("plan.json.idpipe-partial.Ab12Cd")
        try leave("ledger.csv.idpipe-partial.0Zz9aA")
        try leave("plan.md.idpipe-partial.Lock3d")
        try leave("plan.md.idpipe-partial.Young1", old: false)
        try leave("plan.json.idpipe-partial.toolong1")
        try leave("plan.json.idpipe-partial.Ab12C-")
        try leave("plan.json.bak")
        // A user's own file of the older pattern, or a copy: not idpipe's.
        try leave("plan.md.partial.v2copy")
        try FileManager.default.createSymbolicLink(atPath: out + "/ledger.csv.idpipe-partial.Link12", withDestinationPath: out + "/plan.json.bak")
        try FileManager.default.createDirectory(atPath: out + "/plan.json.idpipe-partial.Dir123", withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.modificationDate: hourAgo], ofItemAtPath: out + "/plan.json.idpipe-partial.Dir123")
        // Another run's, still being written: it holds its lock.
        let held = open(out + "/plan.md.idpipe-partial.Lock3d", O_RDONLY)
        #expect(held >= 0 && flock(held, LOCK_EX) == 0)
        func staged() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.contains("partial") }.sorted() }

        let (code, output) = try Binary.run(plan)
        #expect(code == 1, "\(output)")
        #expect(output.contains("idpipe: removed \(out)/plan.json.idpipe-partial.Ab12Cd, a report left half written by a run that was stopped"), "\(output)")
        #expect(output.contains("ledger.csv.idpipe-partial.0Zz9aA, a report left"), "\(output)")
        #expect(try staged() == ["ledger.csv.idpipe-partial.Link12", "plan.json.idpipe-partial.Ab12C-", "plan.json.idpipe-partial.Dir123", "plan.json.idpipe-partial.toolong1",
                                 "plan.md.idpipe-partial.Lock3d", "plan.md.idpipe-partial.Young1", "plan.md.partial.v2copy"], "\((try? staged()) ?? [])")
        #expect(try String(contentsOfFile: out + "/plan.json.bak", encoding: .utf8) == "{\"accounts\": [")

        // Its run stopped (the lock gone), it is removed by the next report written there, alone.
        close(held)
        let (rewritten, rewriteOutput) = try Binary.run(["report", "--state", out + "/state.sqlite", "--output", out + "/plan.md"])
        #expect(rewritten == 0, "\(rewriteOutput)")
        #expect(rewriteOutput.contains("removed \(out)/plan.md.idpipe-partial.Lock3d"), "\(rewriteOutput)")
        #expect(!rewriteOutput.contains("Young1"), "\(rewriteOutput)")
        #expect(try staged() == ["ledger.csv.idpipe-partial.Link12", "plan.json.idpipe-partial.Ab12C-", "plan.json.idpipe-partial.Dir123", "plan.json.idpipe-partial.toolong1",
                                 "plan.md.idpipe-partial.Young1", "plan.md.partial.v2copy"], "\((try? staged()) ?? [])")
    }

    /// Reports are renamed into place once whole: a write that fails (a full disk, here one that holds 1000 bytes of
    /// a file) leaves the report a reviewer read as it was, and nothing staged behind. Targets that are not files
    /// themselves (stdout redirected to a file, a symlink) are written through, and stay what they were.
    @Test func aReportThatCannotBeWrittenLeavesTheOldOneWhole() throws {
        let out = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--as-of", asOf])
        let reviewed = try String(contentsOfFile: out + "/plan.json", encoding: .utf8)
        func staged() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.contains("partial") } }
        #expect(try staged().isEmpty)
        let rewrite = ["report", "--state", out + "/state.sqlite", "--format", "json", "--output", out + "/plan.json", "--reveal-personal-data"]
        let (code, output) = try Binary.run(rewrite, environment: ["IDPIPE_TEST_DISK_BYTES": "1000"])
        #expect(code == 2)
        #expect(output.contains("cannot write \(out)/plan.json.idpipe-partial.") && output.contains("No space left on device"), "\(output)")
        #expect(try String(contentsOfFile: out + "/plan.json", encoding: .utf8) == reviewed)
        #expect(try staged().isEmpty)
        // Once it can be written whole, the new report takes the old one's place, with the old one's mode; one that
        // shows personal data, for its owner only.
        #expect(chmod(out + "/plan.json", 0o640) == 0)
        let (again, againOutput) = try Binary.run(rewrite)
        #expect(again == 0, "\(againOutput)")
        let revealed = try String(contentsOfFile: out + "/plan.json", encoding: .utf8)
        #expect(revealed != reviewed)
        #expect((try FileManager.default.attributesOfItem(atPath: out + "/plan.json")[.posixPermissions] as? Int) == 0o600)
        #expect(chmod(out + "/plan.json", 0o640) == 0)
        let (masked, maskedOutput) = try Binary.run(Array(rewrite.dropLast()))
        let rewritten = try String(contentsOfFile: out + "/plan.json", encoding: .utf8)
        #expect(masked == 0 && rewritten == reviewed, "\(maskedOutput)")
        #expect((try FileManager.default.attributesOfItem(atPath: out + "/plan.json")[.posixPermissions] as? Int) == 0o640)
        #expect(try staged().isEmpty)

        // Standard output redirected to a file: written through /dev/stdout, which stays a link.
        let (piped, pipedOutput) = try runProgram("/bin/bash", ["-c", #""$0" report --state "$1" --format json --output /dev/stdout --reveal-personal-data > "$2""#,
                                                                Binary.path, out + "/state.sqlite", out + "/stdout.json"])
        #expect(piped == 0, "\(pipedOutput)")
        #expect(try String(contentsOfFile: out + "/stdout.json", encoding: .utf8) == revealed)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: "/dev/stdout")) != nil)
        // A symlink of the user's: its file gets the report, and the link stays.
        try FileManager.default.createSymbolicLink(atPath: out + "/link.json", withDestinationPath: out + "/stdout.json")
        let (linked, _) = try Binary.run(["report", "--state", out + "/state.sqlite", "--format", "json", "--output", out + "/link.json"])
        #expect(linked == 0)
        #expect(try String(contentsOfFile: out + "/stdout.json", encoding: .utf8) == reviewed)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: out + "/link.json")) == out + "/stdout.json")
        // Nor may a report replace the state store it is read from.
        let (onState, onStateOutput) = try Binary.run(["report", "--state", out + "/state.sqlite", "--output", out + "/state.sqlite"])
        #expect(onState == 2)
        #expect(onStateOutput.contains("is the state store"), "\(onStateOutput)")
    }

    /// The three reports are replaced together or not at all: before, a ledger that could not be written left a new
    /// plan.md and plan.json beside the old ledger.
    @Test func theReportsAreReplacedTogetherOrNotAtAll() throws {
        let out = Binary.temporaryDirectory()
        try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--as-of", asOf])
        let reviewed = try ["plan.md", "plan.json"].map { try String(contentsOfFile: out + "/" + $0, encoding: .utf8) }
        try FileManager.default.removeItem(atPath: out + "/ledger.csv")
        try FileManager.default.createDirectory(atPath: out + "/ledger.csv", withIntermediateDirectories: false)
        let again = ["plan", "Pipelines/review-relay-accounts.yaml", "--out", out, "--as-of", asOf, "--reveal-personal-data"]
        let (code, output) = try Binary.run(again)
        #expect(code == 2 && output.contains("cannot write \(out)/ledger.csv"), "\(output)")
        #expect(try ["plan.md", "plan.json"].map { try String(contentsOfFile: out + "/" + $0, encoding: .utf8) } == reviewed)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.contains(".partial") }.isEmpty)
        try FileManager.default.removeItem(atPath: out + "/ledger.csv")
        let (fixed, fixedOutput) = try Binary.run(again)
        #expect(fixed == 1, "\(fixedOutput)")  // the samples' quarantined rows
        #expect(try String(contentsOfFile: out + "/plan.md", encoding: .utf8) != reviewed[0])
    }

    /// `/dev/fd/N` where the caller forgot to open N named one of idpipe's own descriptors (an eventfd), and the plan
    /// blocked reading it for ever: such a descriptor is now refused by number, for a side input and a pipeline file.
    @Test func descriptorsTheCallerDidNotOpenAreRefused() throws {
        let descriptor = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/stored-tokens.jsonl", with: "/dev/fd/5")
        defer { Binary.removeVariant(descriptor) }
        for number in [5, 7] {
            let pipeline = number == 5 ? descriptor : "/dev/fd/7"
            let (code, output) = try runProgram("/bin/bash", ["-c", #"exec 5<&- 7<&-; exec timeout 60 "$0" plan "$1" --out "$2" --as-of "$3""#,
                                                              Binary.path, pipeline, Binary.temporaryDirectory(), asOf])
            #expect(code == 2, "\(output)")
            #expect(output.contains("/dev/fd/\(number)\(number == 7 ? ": it" : "") names descriptor \(number), which was not open when idpipe started"),
                    "\(output)")
        }
    }

    /// A folder where a file is expected is named as such, with its pipeline key: before, a side input that was a
    /// folder was reported as "the file is shorter than before".
    @Test func foldersGivenAsInputsAreNamed() throws {
        let folder = Binary.temporaryDirectory()
        let sideFolder = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: "../Samples/deletion-requests.csv", with: folder)
        defer { Binary.removeVariant(sideFolder) }
        let (code, output) = try Binary.run(["plan", sideFolder, "--out", Binary.temporaryDirectory()])
        #expect(code == 2)
        #expect(output.contains("inputs.deletion_requests: \(folder) is a folder, not a file"), "\(output)")
        let (validateCode, described) = try Binary.run(["validate", sideFolder])
        #expect(described.contains("side input deletion_requests: \(folder)  (is a folder, not a file)"), "\(described)")
        #expect(described.contains("select: deletion requested; 1 protection rule\n"), "\(described)")
        // An input plan could not read fails validate too, naming it (a scheduled job checks before it runs).
        #expect(validateCode == 2 && described.contains("the file itself is well formed, but plan could not read \(folder)"), "\(described)")
        let device = try Binary.pipelineVariant("cleanup-deleted-accounts.yaml", replacing: Self.exportLine, with: Self.export(at: "/dev/zero"))
        defer { Binary.removeVariant(device) }
        let (deviceCode, deviceOutput) = try Binary.run(["validate", device])
        #expect(deviceCode == 2 && deviceOutput.contains("/dev/zero  (a device, but the export must be a file)"), "\(deviceOutput)")
        let (goodCode, good) = try Binary.run(["validate", "Pipelines/cleanup-deleted-accounts.yaml"])
        #expect(goodCode == 0 && good.hasSuffix("Pipelines/cleanup-deleted-accounts.yaml: valid\n"), "\(good)")
        try expectRefused(replacing: Self.exportLine, with: Self.export(at: folder), saying: "source.path: the input \(folder) is a folder, not a file")
    }

    /// The state store's folder is made like the output folder (before, plan failed naming the store's `.lock`).
    @Test func theStateFolderIsMade() throws {
        let state = Binary.temporaryDirectory() + "/not/yet/state.sqlite"
        let (code, output) = try Binary.run(["plan", "Pipelines/review-relay-accounts.yaml", "--out", Binary.temporaryDirectory(), "--state", state,
                                             "--as-of", asOf])
        #expect(code == 1 && output.contains("state: \(state)"), "\(output)")
    }

    /// A migration writes the repaired values into its import file: both reports name each account normalization
    /// changed, with its repairs, and their numbers add up to the repair counts. A cleanup changes no account's values
    /// (its repairs only serve matching): it lists none, and keeps no account for a repair alone.
    @Test func aMigrationListsTheAccountsItsRepairsChange() throws {
        func plan(_ pipeline: String) throws -> (report: String, accounts: [[String: Any]], totals: [String: Any]) {
            let out = Binary.temporaryDirectory()
            let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
            #expect(code == 1, "\(output)")
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as? [String: Any]
            return (try String(contentsOfFile: out + "/plan.md", encoding: .utf8), try #require(json?["accounts"] as? [[String: Any]]),
                    try #require(json?["totals"] as? [String: Any]))
        }
        let migration = try plan("Pipelines/backfill-apple-names.yaml")
        var perRepair: [String: Int] = [:]
        var repaired: [(uid: String, repairs: [String])] = []
        for account in migration.accounts {
            let repairs = try #require(account["repairs"] as? [String], "\(account)")
            if repairs.isEmpty { continue }
            repaired.append((account["uid"] as? String ?? "", repairs))
            for repair in repairs { perRepair[repair, default: 0] += 1 }
        }
        #expect(repaired.count == 26)
        for repair in Repair.allCases {
            let total = migration.totals["repairs.\(repair.key)"] as? Int ?? 0
            #expect(perRepair[repair.key, default: 0] == total, "\(repair)")
        }
        #expect(perRepair.values.reduce(0, +) == 27, "one account has two repairs: \(perRepair)")
        #expect(migration.report.contains("### Accounts written to the import file with repaired values (26)"), "\(migration.report)")
        let twice = try #require(repaired.first { $0.repairs.count == 2 })
        let row = try #require(migration.report.split(separator: "\n").first { $0.hasPrefix("| \(twice.uid) |") })
        #expect(row.contains("| email: internationalised domain converted to IDNA (xn--); phone: rewritten in E.164 |"), "\(row)")
        // An account kept for its repairs alone has no action and no finding.
        #expect(migration.accounts.contains { ($0["repairs"] as? [String])?.isEmpty == false && ($0["actions"] as? [Any])?.isEmpty == true
            && $0["consentReview"] is NSNull && $0["selection"] as? String == "not-selected" })

        let cleanup = try plan("Pipelines/cleanup-deleted-accounts.yaml")
        #expect(cleanup.totals["repairs.emailDomainIDNA"] as? Int == 7)
        #expect(cleanup.accounts.allSatisfy { ($0["repairs"] as? [String]) == [] })
        #expect(!cleanup.report.contains("repaired values"))
        #expect(cleanup.accounts.count < migration.accounts.count)
    }

    @Test func migrationWritesAnImportFileThatIsValidJSON() throws {
        let out = Binary.temporaryDirectory()
        let (_, planned) = try Binary.run(["plan", "Pipelines/backfill-apple-names.yaml", "--out", out, "--as-of", asOf, "--reveal-personal-data"])
        let data = try Data(contentsOf: URL(fileURLWithPath: out + "/cleaned-accounts.json"))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let users = try #require(object?["users"] as? [[String: Any]])
        #expect(users.count == 290)
        let report = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(report.contains("fill from legacy"))
        // The names the plan fills are in the import file (the point of the migration), each as planned.
        let plan = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/plan.json"))) as? [String: Any]
        let accounts = try #require(plan?["accounts"] as? [[String: Any]])
        let fills = accounts.compactMap { account -> (String, String)? in
            let actions = account["actions"] as? [[String: Any]] ?? []
            guard let fill = actions.first(where: { $0["kind"] as? String == "update-name" }), let uid = account["uid"] as? String else { return nil }
            return (uid, fill["value"] as? String ?? "")
        }
        #expect(fills.count == 23)
        let imported = Dictionary(uniqueKeysWithValues: users.map { ($0["localId"] as? String ?? "", $0["displayName"] as? String) })
        for (uid, name) in fills { #expect(imported[uid] == name, "\(uid)") }
        #expect(imported["F1sp11jdOyG04kDzjIH8CY9Q4G0i"] == "Mark MacDonald")
        // The accounts `firebase auth:import` would refuse (a link outside its four providers, or mfaInfo), counted
        // from the file itself, are the ones the report names.
        let cliProviders: Set<String> = ["google.com", "facebook.com", "twitter.com", "github.com"]
        let refused = users.filter { user in
            user["mfaInfo"] != nil || (user["providerUserInfo"] as? [[String: Any]] ?? []).contains { !cliProviders.contains($0["providerId"] as? String ?? "") }
        }
        #expect(refused.count > 100)
        #expect(report.contains("\(users.count) accounts are in the import file"))
        #expect(report.contains("**\(refused.count) of them stop `firebase auth:import`**"), "\(refused.count)")
        #expect(planned.contains("idpipe: \(refused.count) accounts in it would stop `firebase auth:import`"), "\(planned)")
    }
}
