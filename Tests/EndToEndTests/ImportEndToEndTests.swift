import Foundation
import IdPipeTestSupport
import Testing

/// A migration that imports its accounts (`stages.import`): apply sends the reviewed import file to the sandbox's
/// `accounts:batchCreate`, which checks each request against the Identity Toolkit schema.
@Suite(.serialized) struct ImportEndToEndTests {
    let asOf = "2026-11-21T00:00:00Z"
    static let signerKey = "c2FuZGJveC1zaWduZXIta2V5"

    /// The sample migration with `stages.import` (and `importStage` in place of the default), on the sandbox's project.
    func migration(_ sandbox: SandboxProcess, importStage: String? = nil, source: String = "../Samples/accounts.json") throws -> String {
        let stage = importStage ?? """
              import:
                users_per_request: 40
                password_hash: {algorithm: SCRYPT, salt_separator: Bw==, rounds: 8, memory_cost: 14}
            """
        var text = try String(contentsOfFile: Binary.root.appendingPathComponent("Pipelines/backfill-apple-names.yaml").path, encoding: .utf8)
        text = text.replacingOccurrences(of: "path: ../Samples/accounts.json", with: "path: \(source)")
            .replacingOccurrences(of: "output:\n", with: stage + "\noutput:\n")
        // Only services.google: the import needs nothing else.
        let services = try sandbox.servicesSection()
        let google = services.components(separatedBy: "\n  apple:")[0]
        let relative = "Pipelines/.test-\(UUID().uuidString).yaml"
        try (text + "\n" + google + "\n").write(toFile: Binary.root.appendingPathComponent(relative).path, atomically: true, encoding: .utf8)
        return relative
    }

    var environment: [String: String] { ["IDPIPE_PASSWORD_HASH_KEY": Self.signerKey] }

    /// A sandbox whose project has no accounts yet, started with `arguments`.
    func emptySandbox(_ arguments: [String] = []) throws -> SandboxProcess {
        let folder = Binary.temporaryDirectory()
        try #"{"users": []}"#.write(toFile: folder + "/none.json", atomically: true, encoding: .utf8)
        return try SandboxProcess(accounts: folder + "/none.json", arguments: arguments)
    }

    /// The sample migration planned for a sandbox that answers in 250 ms, importing 20 accounts a request (15 requests
    /// at the client's pace of one a second): its pipeline (removed by the caller), and its output folder.
    func plannedSlowImport() throws -> (SandboxProcess, pipeline: String, out: String) {
        let sandbox = try emptySandbox(["--latency-ms", "250"])
        let pipeline = try migration(sandbox, importStage: "  import:\n    users_per_request: 20\n    password_hash: {algorithm: SCRYPT, salt_separator: Bw==, rounds: 8, memory_cost: 14}\n")
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(code == 1, "\(output)")
        return (sandbox, pipeline, out)
    }

    /// The accounts the import file holds, by uid.
    func importedIds(_ out: String) throws -> [String] {
        let file = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/cleaned-accounts.json"))) as? [String: Any]
        return (file?["users"] as? [[String: Any]] ?? []).compactMap { $0["localId"] as? String }
    }

    func lookup(_ sandbox: SandboxProcess, _ uid: String) throws -> [String: Any]? {
        let (_, body) = try Binary.run(["-s", "-H", "Authorization: Bearer owner", "-H", "Content-Type: application/json", "--data", #"{"localId": [""# + uid + #""]}"#,
                                        "http://127.0.0.1:\(sandbox.port)/identitytoolkit.googleapis.com/v1/projects/demo-idpipe/accounts:lookup"],
                                       executable: "/usr/bin/curl")
        let document = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return (document?["users"] as? [[String: Any]])?.first
    }

    /// apply names the project the accounts go to before it sends anything: the import's, where it gives one, not
    /// services.google's (which the migration reads from). The sandbox has no such project: nothing is sent.
    @Test func applyNamesTheProjectTheImportGoesTo() throws {
        let sandbox = try emptySandbox()
        let stage = "  import:\n    project_id: new-project\n    password_hash: {algorithm: SCRYPT, salt_separator: Bw==, rounds: 8, memory_cost: 14}\n"
        let pipeline = try migration(sandbox, importStage: stage)
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        #expect(try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf]).0 == 1)
        let (code, output) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"], environment: environment)
        #expect(code == 2 && output.contains("applying the plan of backfill-apple-names (\(pipeline)) as of \(asOf) to project new-project, from "),
                "\(output)")
        #expect(try sandbox.ledger().isEmpty)
    }

    /// Every account of the file is created once, with its filled name, through dropped answers and 503s: a request whose
    /// answer was lost is sent again and overwrites what it made. The name updates are not sent on their own.
    @Test func applyImportsTheReviewedFileOnceThroughFaults() throws {
        let sandbox = try emptySandbox(["--fault-drop", "0.2", "--fault503", "0.1", "--seed", "5"])
        let pipeline = try migration(sandbox)
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        let (planCode, planOutput) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(planCode == 1, "\(planOutput)")
        let plan = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(plan.contains("`idpipe apply` imports it (`stages.import`)") && plan.contains("carry a password hash"), "\(plan)")
        let (code, output) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"], environment: environment)
        // 1: the plan quarantined sample rows; nothing failed in the import.
        #expect(code == 1, "\(output)")
        let ids = try importedIds(out)
        #expect(ids.count == 290)
        #expect(output.contains("import: 290 of 290 accounts imported into http://127.0.0.1:\(sandbox.port)/v1/projects/demo-idpipe"), "\(output)")
        #expect(output.contains("name updates went in with the imported accounts") && !output.contains("apply imported no accounts"), "\(output)")
        let ledger = SandboxLedger(try sandbox.ledger())
        #expect(Set(ledger.changes.filter { $0.hasPrefix("identitytoolkit create ") }) == Set(ids.map { "identitytoolkit create \($0)" }))
        #expect(ledger.count("identitytoolkit", "create") == 290, "each account created once")
        #expect(ledger.count("identitytoolkit", "update") == 0, "no name update sent on its own")
        let requests = try sandbox.stats()["requests"] as? [String: Int]
        #expect((requests?["accounts:batchCreate"] ?? 0) > 8, "the faults made requests go again: \(requests ?? [:])")
        // A name the plan filled is in the imported account, and its update is done.
        let rows = try LedgerRow.read(Binary.run(["report", "--state", out + "/state.sqlite", "--format", "csv", "--reveal-personal-data"]).1)
        let filled = try #require(rows.first { $0["action"] == "update-name" })
        #expect(filled["state"] == "done" && filled["result"] == "imported with this name", "\(filled.fields)")
        let account = try #require(try lookup(sandbox, filled["uid"]))
        #expect(account["displayName"] as? String == filled["value"])
        // The export's last sign-in went in as the API's lastLoginAt.
        #expect(ids.contains { (try? lookup(sandbox, $0))??["lastLoginAt"] != nil })
        let report = try String(contentsOfFile: out + "/report.md", encoding: .utf8)
        #expect(report.contains("| accounts imported | 290 |") && report.contains("| requests done | 8 |"), "\(report)")
        let (statusCode, status) = try Binary.run(["status", "--state", out + "/state.sqlite"])
        #expect(statusCode == 0 && status.contains("import: 290 of 290 accounts imported, 0 refused, 0 of 8 requests still to send"), "\(status)")
        // The signer key is sent in the requests only.
        #expect(!output.contains(Self.signerKey))
        for file in try FileManager.default.contentsOfDirectory(atPath: out) {
            #expect(!String(decoding: try Data(contentsOf: URL(fileURLWithPath: "\(out)/\(file)")), as: UTF8.self).contains(Self.signerKey), "\(file)")
        }
        // Applied again: nothing more is sent.
        let (again, againOutput) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"], environment: environment)
        #expect(again == 1 && againOutput.contains("already final"), "\(againOutput)")
        #expect((try sandbox.stats()["requests"] as? [String: Int])?["accounts:batchCreate"] == requests?["accounts:batchCreate"])
    }

    /// Killed in the middle of its import, the apply is resumed: every account is in, and only a request that was in
    /// flight at the kill is sent again.
    @Test func aKilledImportResumesWithoutLosingOrRepeatingAccounts() throws {
        let (sandbox, pipeline, out) = try plannedSlowImport()
        defer { Binary.removeVariant(pipeline) }
        let state = out + "/state.sqlite"
        // The service check (a read), then 15 requests of 20 at the client's pace of one a second: killed after a few.
        try Binary.run(["apply", "--state", state, "--yes"], environment: environment, killAfter: 4.5)
        let before = SandboxLedger(try sandbox.ledger()).count("identitytoolkit", "create")
        #expect(before > 0 && before < 290, "killed midway: \(before) created")
        // The accounts went in with one signer key: the rest may not go with another.
        let (otherKey, otherKeyOutput) = try Binary.run(["resume", "--state", state], environment: ["IDPIPE_PASSWORD_HASH_KEY": "b3RoZXIta2V5"])
        #expect(otherKey == 2 && otherKeyOutput.contains("the signer key (stages.import.password_hash) is not the one this import started with"),
                "\(otherKeyOutput)")
        // Moved elsewhere, the plan's folder (store, reports and import file) is applied where it lies.
        let moved = Binary.temporaryDirectory() + "/moved"
        try FileManager.default.moveItem(atPath: out, toPath: moved)
        let (code, output) = try Binary.run(["resume", "--state", moved + "/state.sqlite"], environment: environment)
        #expect(code == 1, "\(output)")
        let ledger = SandboxLedger(try sandbox.ledger())
        let ids = try importedIds(moved)
        #expect(Set(ledger.changes.filter { $0.hasPrefix("identitytoolkit create ") }) == Set(ids.map { "identitytoolkit create \($0)" }))
        #expect(ledger.count("identitytoolkit", "create") == 290)
        #expect(ledger.count("identitytoolkit", "overwrite") <= 20, "at most the request in flight went again")
        let report = try String(contentsOfFile: moved + "/report.md", encoding: .utf8)
        #expect(report.contains("| accounts imported | 290 |"), "\(report)")
    }

    /// A SIGTERM waits for the request in flight, records it, and stops (130); resume sends the rest and nothing twice.
    /// Resumed from a copy of the plan's folder, the copy is what goes on: its reports, its import file.
    @Test func aSignalStopsTheImportBetweenTwoRequests() throws {
        let (sandbox, pipeline, out) = try plannedSlowImport()
        defer { Binary.removeVariant(pipeline) }
        let state = out + "/state.sqlite"
        let (code, output) = try Binary.run(["apply", "--state", state, "--yes"], environment: environment, signals: [(SIGTERM, 4.5)])
        #expect(code == 130, "\(output)")
        #expect(output.contains("stopping: no new account or step is started") && output.contains("idpipe: interrupted; `idpipe resume --state"), "\(output)")
        // The report of the stopped apply says what was done: an apply's, not the plan's "nothing was changed".
        let stopped = try String(contentsOfFile: out + "/report.md", encoding: .utf8)
        #expect(stopped.hasPrefix("# idpipe apply: ") && stopped.contains("| requests not sent yet | "), "\(stopped.prefix(300))")
        let (_, status) = try Binary.run(["status", "--state", state])
        #expect(status.contains("requests still to send") && status.contains("last apply stopped: interrupted"), "\(status)")
        let copy = Binary.temporaryDirectory() + "/copy"
        try FileManager.default.copyItem(atPath: out, toPath: copy)
        let (resumed, resumedOutput) = try Binary.run(["resume", "--state", copy + "/state.sqlite"], environment: environment)
        #expect(resumed == 1 && resumedOutput.contains("report: \(copy)/report.md"), "\(resumedOutput)")
        #expect(try String(contentsOfFile: out + "/report.md", encoding: .utf8) == stopped, "the original's reports are left as they were")
        let ledger = SandboxLedger(try sandbox.ledger())
        #expect(ledger.count("identitytoolkit", "create") == 290 && ledger.count("identitytoolkit", "overwrite") == 0, "\(ledger.changes.count)")
    }

    /// Values the API refuses keep their accounts out of the import file, quarantined with the field. An account the API
    /// refuses all the same (here an email, as the pipeline does not normalize) is named with the API's reason, and the
    /// name the plan filled for it fails with it; the others go in; the exit code says it (1).
    @Test func refusedAccountsAreNamedAndTheRestIsImported() throws {
        let folder = Binary.temporaryDirectory()
        let long = "https://photos.example/" + String(repeating: "p", count: 2100)
        let export = #"{"users": [{"localId": "keep-1", "email": "one@example.com", "createdAt": "1700000000000"},"#
            + #"{"localId": "long-photo", "email": "two@example.com", "photoUrl": ""# + long + #"", "createdAt": "1700000000000"},"#
            + #"{"localId": "list-claims", "email": "four@example.com", "customAttributes": "[1, 2, 3]", "createdAt": "1700000000000"},"#
            + #"{"localId": "no-at", "email": "no-at-sign", "createdAt": "1700000000000", "#
            + #""providerUserInfo": [{"providerId": "facebook.com", "rawId": "10001", "displayName": "Bo Example"}]},"#
            + #"{"localId": "keep-2", "email": "three@example.com", "createdAt": "1700000000000"}]}"#
        try export.write(toFile: folder + "/export.json", atomically: true, encoding: .utf8)
        let sandbox = try emptySandbox()
        let pipeline = try migration(sandbox, importStage: "  import: true\n", source: folder + "/export.json")
        defer { Binary.removeVariant(pipeline) }
        let path = Binary.root.appendingPathComponent(pipeline).path
        try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "normalize: true", with: "normalize: false")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let out = Binary.temporaryDirectory()
        let (planCode, planOutput) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(planCode == 1 && planOutput.contains("2 accounts left out of the import file and quarantined"), "\(planOutput)")
        let plan = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(plan.contains("**2 accounts are left out of it** for a value Identity Toolkit refuses")
                && plan.contains("is longer than 2048 characters: Identity Toolkit refuses it") && plan.contains("is not a JSON object: Identity Toolkit refuses it"),
                "\(plan)")
        #expect(try importedIds(out) == ["keep-1", "no-at", "keep-2"])
        let (code, output) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"])
        #expect(code == 1, "\(output)")
        #expect(output.contains("1 account of the import file not imported (1 refused by the API); see the Import section"), "\(output)")
        let report = try String(contentsOfFile: out + "/report.md", encoding: .utf8)
        #expect(report.contains("| no-at | email is invalid |") && report.contains("| accounts imported | 2 |"), "\(report)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/report.json"))) as? [String: Any]
        let imported = try #require(json?["import"] as? [String: Any])
        #expect(imported["imported"] as? Int == 2 && (imported["refused"] as? [[String: Any]])?.map { $0["uid"] as? String } == ["no-at"])
        // The name the plan filled for the refused account fails with it; nothing was sent for it on its own.
        let rows = try LedgerRow.read(Binary.run(["report", "--state", out + "/state.sqlite", "--format", "csv"]).1)
        let name = try #require(rows.first { $0["action"] == "update-name" })
        #expect(name["uid"] == "no-at" && name["state"] == "failed" && name["reason"] == "not imported: email is invalid", "\(name.fields)")
        #expect(Set(SandboxLedger(try sandbox.ledger()).changes) == ["identitytoolkit create keep-1", "identitytoolkit create keep-2"])
    }

    /// An account whose uid the project has already is kept as it is by default: looked up before its request is
    /// sent, left out of it, listed, and its filled name fails with why (exit 1). So is one whose email (in another
    /// letter case) or Facebook sign-in another account of the project has. `existing_accounts: overwrite` replaces the
    /// first with the file's, as the API does, and checks neither.
    @Test func accountsTheProjectHasAreKeptUnlessOverwriteIsAsked() throws {
        let folder = Binary.temporaryDirectory()
        let export = #"{"users": [{"localId": "new-1", "email": "one@example.com", "createdAt": "1700000000000"},"#
            + #"{"localId": "there-1", "email": "two@example.com", "createdAt": "1700000000000", "#
            + #""providerUserInfo": [{"providerId": "facebook.com", "rawId": "10001", "displayName": "Bo Example"}]},"#
            + #"{"localId": "new-2", "email": "three@example.com", "createdAt": "1700000000000"},"#
            + #"{"localId": "new-3", "email": "Four@example.com", "createdAt": "1700000000000"},"#
            + #"{"localId": "new-4", "createdAt": "1700000000000", "#
            + #""providerUserInfo": [{"providerId": "facebook.com", "rawId": "20002", "displayName": "Cy Example"}]}]}"#
        try export.write(toFile: folder + "/export.json", atomically: true, encoding: .utf8)
        try (#"{"users": [{"localId": "there-1", "email": "kept@example.com", "displayName": "Already Here"}, "#
            + #"{"localId": "p-mail", "email": "four@example.com"}, "#
            + #"{"localId": "p-fb", "providerUserInfo": [{"providerId": "facebook.com", "rawId": "20002"}]}]}"#)
            .write(toFile: folder + "/project.json", atomically: true, encoding: .utf8)
        let sandbox = try SandboxProcess(accounts: folder + "/project.json")
        let pipeline = try migration(sandbox, importStage: "  import: true\n", source: folder + "/export.json")
        defer { Binary.removeVariant(pipeline) }
        let (_, validated) = try Binary.run(["validate", pipeline])
        #expect(validated.contains("an account whose uid the project has already is kept as it is, one whose email, phone number or sign-in "
                + "another account of the project has is left out (each request's accounts looked up first), both listed"), "\(validated)")
        let out = Binary.temporaryDirectory()
        try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        let plan = try String(contentsOfFile: out + "/plan.md", encoding: .utf8)
        #expect(plan.contains("An account whose uid is in the project already is kept as the project has it, not imported, and listed"), "\(plan)")
        let (code, output) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"])
        #expect(code == 1 && output.contains("import: 2 of 5 accounts imported into") && output.contains("1 kept as the project has them")
                && output.contains("2 left out (another account of the project has their email or sign-in)"), "\(output)")
        #expect(output.contains("3 accounts of the import file not imported (1 kept as the project has them, their uid being there already, "
                + "2 left out, another account of the project having their email or sign-in)"), "\(output)")
        #expect(Set(SandboxLedger(try sandbox.ledger()).changes) == ["identitytoolkit create new-1", "identitytoolkit create new-2"])
        #expect(try lookup(sandbox, "there-1")?["email"] as? String == "kept@example.com")
        let report = try String(contentsOfFile: out + "/report.md", encoding: .utf8)
        #expect(report.contains("| accounts kept as the project has them, their uid there already (not imported) | 1 |")
                && report.contains("**1 account was kept as the project has it**") && report.contains("| there-1 |"), "\(report)")
        #expect(report.contains("| accounts sharing their email or sign-in with another account of the project (not imported) | 2 |")
                && report.contains("**2 accounts were not imported** because another account of the project has their email or sign-in: the import "
                + "would have made a second account for each person")
                && report.contains("| new-3 | `email` | p-mail |") && report.contains("| new-4 | `providerUserInfo (facebook.com)` | p-fb |"), "\(report)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/report.json"))) as? [String: Any]
        #expect((json?["import"] as? [String: Any])?["existingAccounts"] as? String == "keep")
        let kept = (json?["import"] as? [String: Any])?["keptExisting"] as? [String: Any]
        #expect(kept?["count"] as? Int == 1 && kept?["uids"] as? [String] == ["there-1"], "\(String(describing: kept))")
        let clashing = (json?["import"] as? [String: Any])?["clashing"] as? [String: Any]
        #expect(clashing?["count"] as? Int == 2 && (clashing?["accounts"] as? [[String: String]])?.map { [$0["uid"], $0["field"], $0["projectUid"]] }
                == [["new-3", "email", "p-mail"], ["new-4", "providerUserInfo (facebook.com)", "p-fb"]], "\(String(describing: clashing))")
        let rows = try LedgerRow.read(Binary.run(["report", "--state", out + "/state.sqlite", "--format", "csv"]).1)
        let name = try #require(rows.first { $0["action"] == "update-name" && $0["uid"] == "there-1" })
        #expect(name["state"] == "failed" && name["reason"] == "not imported: " + "its uid is in the project already: "
                + "kept as the project has it (stages.import.existing_accounts: overwrite would replace it with the file's)", "\(name.fields)")
        let clashingName = try #require(rows.first { $0["action"] == "update-name" && $0["uid"] == "new-4" })
        #expect(clashingName["state"] == "failed" && clashingName["reason"] == "not imported: another account of the project has the same "
                + "facebook.com user (a sign-in); the import would make a second account for it", "\(clashingName.fields)")
        let (_, status) = try Binary.run(["status", "--state", out + "/state.sqlite"])
        #expect(status.contains("import: 2 of 5 accounts imported, 0 refused, 1 kept as the project has them (their uid is there already), "
                + "2 left out (another account of the project has their email or sign-in)"), "\(status)")

        let overwriting = try migration(sandbox, importStage: "  import: {existing_accounts: overwrite}\n", source: folder + "/export.json")
        defer { Binary.removeVariant(overwriting) }
        let again = Binary.temporaryDirectory()
        try Binary.run(["plan", overwriting, "--out", again, "--as-of", asOf])
        #expect(try String(contentsOfFile: again + "/plan.md", encoding: .utf8).contains("is in the project already is overwritten with the file's; "
                + "nothing is looked up, so one whose email, phone number or federated sign-in another account of the project has is imported beside it"))
        let lookups = (try sandbox.stats()["requests"] as? [String: Int])?["accounts:lookup"] ?? 0
        let (overwritten, overwrittenOutput) = try Binary.run(["apply", "--state", again + "/state.sqlite", "--yes"])
        #expect(overwritten == 0 && overwrittenOutput.contains("import: 5 of 5 accounts imported"), "\(overwrittenOutput)")
        #expect((try sandbox.stats()["requests"] as? [String: Int])?["accounts:lookup"] ?? 0 == lookups, "overwrite looks nothing up")
        #expect(try lookup(sandbox, "there-1")?["email"] as? String == "two@example.com")
    }

    /// validate refuses a key pasted where its file's path goes, reads the signer key as apply will, warns when it cannot,
    /// and never shows it.
    @Test func validateChecksTheSignerKeyWithoutShowingIt() throws {
        let sandbox = try emptySandbox()
        let pasted = "cF7lnri6" + String(repeating: "Qx9Zk2Lm", count: 10) + "Pg=="
        let hashed = "  import:\n    password_hash: {algorithm: SCRYPT, signer_key_file: \(pasted), salt_separator: Bw==, rounds: 8, memory_cost: 14}\n"
        let pipeline = try migration(sandbox, importStage: hashed)
        defer { Binary.removeVariant(pipeline) }
        let (code, output) = try Binary.run(["validate", pipeline])
        #expect(code == 2 && output.contains("looks like the key itself (base64, not shown)") && !output.contains("cF7lnri6"), "\(output)")
        let missing = try migration(sandbox, importStage: hashed.replacingOccurrences(of: pasted, with: "no-such-key.txt"))
        defer { Binary.removeVariant(missing) }
        let (missingCode, missingOutput) = try Binary.run(["validate", missing])
        #expect(missingCode == 0 && missingOutput.contains("warning: apply could not read the import's signer key here")
                && missingOutput.contains("signer key from signer_key_file"), "\(missingOutput)")
        let (checked, checkedOutput) = try Binary.run(["validate", missing, "--check-services"])
        #expect(checked == 2 && checkedOutput.contains("signer_key_file: cannot read"), "\(checkedOutput)")

        let fromEnvironment = try migration(sandbox)
        defer { Binary.removeVariant(fromEnvironment) }
        let (_, unset) = try Binary.run(["validate", fromEnvironment])
        #expect(unset.contains("SCRYPT needs the signer key: set signer_key_file, or the environment variable IDPIPE_PASSWORD_HASH_KEY"), "\(unset)")
        let (_, notBase64) = try Binary.run(["validate", fromEnvironment], environment: ["IDPIPE_PASSWORD_HASH_KEY": "not base64!!"])
        #expect(notBase64.contains("the signer key in the environment variable IDPIPE_PASSWORD_HASH_KEY is not base64 (not shown)")
                && !notBase64.contains("not base64!!"), "\(notBase64)")
        let (_, good) = try Binary.run(["validate", fromEnvironment], environment: environment)
        #expect(!good.contains("warning") && good.contains("into project demo-idpipe through accounts:batchCreate"), "\(good)")
    }

    /// Nothing is sent for a file changed since the plan, nor for password hashes without their parameters.
    @Test func aChangedFileOrMissingHashParametersSendNothing() throws {
        let sandbox = try emptySandbox()
        let pipeline = try migration(sandbox)
        defer { Binary.removeVariant(pipeline) }
        let out = Binary.temporaryDirectory()
        // The plan, made without the signer key, says that apply will need it (validate said so; the plan did not).
        let (_, planned) = try Binary.run(["plan", pipeline, "--out", out, "--as-of", asOf])
        #expect(planned.contains("warning: apply will not be able to set up the services: ") && planned.contains("SCRYPT needs the signer key"),
                "\(planned)")
        let file = out + "/cleaned-accounts.json"
        let original = try Data(contentsOf: URL(fileURLWithPath: file))
        try (String(decoding: original, as: UTF8.self).replacingOccurrences(of: "\"emailVerified\": true", with: "\"emailVerified\": false"))
            .write(toFile: file, atomically: true, encoding: .utf8)
        let (code, output) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"], environment: environment)
        #expect(code == 2 && output.contains("refusing to import: the import file \(file) changed since the plan was made"), "\(output)")
        try original.write(to: URL(fileURLWithPath: file))
        // The signer key is a secret from the environment: without it, the command stops before asking any service.
        let (noKey, noKeyOutput) = try Binary.run(["apply", "--state", out + "/state.sqlite", "--yes"])
        #expect(noKey == 2 && noKeyOutput.contains("SCRYPT needs the signer key"), "\(noKeyOutput)")

        let bare = try migration(sandbox, importStage: "  import: true\n")
        defer { Binary.removeVariant(bare) }
        let bareOut = Binary.temporaryDirectory()
        let (_, planOutput) = try Binary.run(["plan", bare, "--out", bareOut, "--as-of", asOf])
        #expect(planOutput.contains("carry a password hash, and stages.import gives no password_hash"), "\(planOutput)")
        let (bareCode, bareOutput) = try Binary.run(["apply", "--state", bareOut + "/state.sqlite", "--yes"])
        #expect(bareCode == 2 && bareOutput.contains("refusing to import: 33 accounts in the import file have a password hash"), "\(bareOutput)")
        #expect(try sandbox.ledger().isEmpty)
        #expect((try sandbox.stats()["requests"] as? [String: Int])?["accounts:batchCreate"] == nil)
    }
}
