import Foundation
import IdPipeTestSupport
import Testing

/// `idpipe-sandbox serve` in the background on a free port; stopped when the test is done.
final class SandboxProcess {
    let process = Process()
    let port: Int
    let directory: String

    init(accounts: String, storedTokens: String? = nil, data: String? = nil, arguments: [String] = []) throws {
        directory = Binary.temporaryDirectory()
        let sandbox = URL(fileURLWithPath: Binary.path).deletingLastPathComponent().appendingPathComponent("idpipe-sandbox").path
        let (initCode, initOutput) = try Binary.run(["init", "--dir", directory + "/sandbox", "--port", "0"], executable: sandbox)
        guard initCode == 0 else { throw ToolError("idpipe-sandbox init: \(initOutput)") }
        process.executableURL = URL(fileURLWithPath: sandbox)
        process.arguments = ["serve", "--dir", directory + "/sandbox", "--port", "0", "--accounts", accounts]
            + (storedTokens.map { ["--stored-tokens", $0] } ?? []) + (data.map { ["--data", $0] } ?? []) + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        // The first line says where it listens: "idpipe-sandbox listening on http://127.0.0.1:PORT (...)".
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(text[range].split(separator: ":")[1]) else {
            process.terminate()
            throw ToolError("the sandbox did not start: \(text)")
        }
        self.port = port
    }

    /// Every side effect the sandbox carried out, in order.
    func ledger() throws -> [[String: Any]] {
        let (_, body) = try Binary.run(["-s", "http://127.0.0.1:\(port)/__sandbox/ledger"], executable: "/usr/bin/curl")
        let document = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return document?["entries"] as? [[String: Any]] ?? []
    }

    /// What the data stores hold now: `firestore` {db: {path: fields}}, `database` {instance: tree}, `storage` {bucket: {name: …}}.
    func data() throws -> [String: Any] {
        let (_, body) = try Binary.run(["-s", "http://127.0.0.1:\(port)/__sandbox/data"], executable: "/usr/bin/curl")
        return try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
    }

    /// The `services:` section the sandbox wrote for idpipe (its real port, absolute key paths).
    func servicesSection() throws -> String {
        try String(contentsOfFile: directory + "/sandbox/idpipe-services.yaml", encoding: .utf8)
    }

    var webhookURL: String { "http://127.0.0.1:\(port)/hooks/delete-user-data" }

    func stats() throws -> [String: Any] {
        let (_, body) = try Binary.run(["-s", "http://127.0.0.1:\(port)/__sandbox/stats"], executable: "/usr/bin/curl")
        return try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
    }

    /// A pipeline file in Pipelines/ (so relative paths hold) reading the live API; removed by the caller.
    static func livePipeline(_ services: String) throws -> String {
        let relative = "Pipelines/.test-\(UUID().uuidString).yaml"
        let text = """
            version: 1
            name: live-review
            source:
              format: identity-toolkit
            inputs:
              legacy_names: ../Samples/legacy-names.csv
            stages:
              normalize: true
              detect_relay: true
            report:
              list_limit: 100
            services:
            \(services)
            """
        try text.write(toFile: Binary.root.appendingPathComponent(relative).path, atomically: true, encoding: .utf8)
        return relative
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }
}

@Suite(.serialized) struct LiveSourceEndToEndTests {
    /// The live API as the source: pages through the sandbox the way the Admin SDKs reach the emulator, and an
    /// interrupted plan resumes from the recorded page token instead of reading again from the first page.
    @Test func livePlanResumesFromThePageToken() throws {
        let data = Binary.temporaryDirectory()
        let (genCode, genOutput) = try Binary.run(["Scripts/gen_samples.py", "--accounts", "2500", "--seed", "3", "--out-dir", data, "--format", "json"],
                                                  executable: "/usr/bin/env", prefix: ["python3"])
        #expect(genCode == 0, "\(genOutput)")
        let sandbox = try SandboxProcess(accounts: data + "/accounts.json")
        let pipeline = try SandboxProcess.livePipeline("  google:\n    project_id: demo-idpipe")
        defer { Binary.removeVariant(pipeline) }
        let environment = ["FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:\(sandbox.port)"]
        let reference = Binary.temporaryDirectory()
        let (referenceCode, referenceOutput) = try Binary.run(["plan", pipeline, "--out", reference, "--as-of", "2026-11-21T00:00:00Z"], environment: environment)
        #expect(referenceCode == 0, "\(referenceOutput)")
        #expect(referenceOutput.contains("2500 accounts read"))

        let interrupted = Binary.temporaryDirectory()
        try Binary.run(["plan", pipeline, "--out", interrupted, "--as-of", "2026-11-21T00:00:00Z"],
                       environment: environment.merging(["IDPIPE_STOP_AFTER_BATCHES": "1"]) { $1 })
        let (code, output) = try Binary.run(["plan", pipeline, "--out", interrupted, "--as-of", "2026-11-21T00:00:00Z"], environment: environment)
        #expect(code == 0, "\(output)")
        #expect(output.contains("Resumed an interrupted plan"))
        for file in ["plan.md", "ledger.csv"] {
            let a = try String(contentsOfFile: "\(reference)/\(file)", encoding: .utf8)
            let b = try String(contentsOfFile: "\(interrupted)/\(file)", encoding: .utf8)
            #expect(a == b, "\(file) differs after an interrupted live plan")
        }
        // Three pages for the reference; one, then the other two, for the interrupted run.
        let requests = try sandbox.stats()["requests"] as? [String: Int]
        #expect(requests?["accounts:batchGet"] == 6)
    }

    /// The migration's import file, with the one field plan.md says to rename, is what `accounts:batchCreate` takes for
    /// the accounts `firebase auth:import` refuses (Apple links): the sandbox checks each request against the Identity
    /// Toolkit schema, which refused the file as written (`Unknown name "lastSignedInAt"`).
    @Test func theImportFileGoesThroughBatchCreateAsPlanMdSays() throws {
        let folder = Binary.temporaryDirectory()
        try #"{"users": []}"#.write(toFile: folder + "/none.json", atomically: true, encoding: .utf8)
        let sandbox = try SandboxProcess(accounts: folder + "/none.json")
        let out = Binary.temporaryDirectory()
        let (code, output) = try Binary.run(["plan", "Pipelines/backfill-apple-names.yaml", "--out", out, "--as-of", "2026-11-21T00:00:00Z"])
        #expect(code == 1, "\(output)")
        #expect(try String(contentsOfFile: out + "/plan.md", encoding: .utf8).contains("`lastSignedInAt` is `lastLoginAt` there"))
        let file = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/cleaned-accounts.json"))) as? [String: Any]
        let users = try #require(file?["users"] as? [[String: Any]]).map { user in
            var user = user
            if let last = user.removeValue(forKey: "lastSignedInAt") { user["lastLoginAt"] = last }
            return user
        }
        #expect(users.count > 200 && users.contains { ($0["providerUserInfo"] as? [[String: Any]])?.contains { $0["providerId"] as? String == "apple.com" } == true })
        // The project's password hash parameters, as plan.md says (the sandbox's own are any).
        let request: [String: Any] = ["users": users, "hashAlgorithm": "SCRYPT", "signerKey": "c2lnbmVy", "saltSeparator": "Bw==", "rounds": 8, "memoryCost": 14]
        try JSONSerialization.data(withJSONObject: request).write(to: URL(fileURLWithPath: folder + "/request.json"))
        let (_, answer) = try Binary.run(["-s", "-H", "Authorization: Bearer owner", "-H", "Content-Type: application/json", "--data-binary", "@" + folder + "/request.json",
                                          "http://127.0.0.1:\(sandbox.port)/identitytoolkit.googleapis.com/v1/projects/demo-idpipe/accounts:batchCreate"],
                                         executable: "/usr/bin/curl")
        let body = try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any]
        #expect(body?["kind"] as? String == "identitytoolkit#UploadAccountResponse" && (body?["error"] as? [Any])?.isEmpty != false, "\(answer.prefix(600))")
        #expect(try sandbox.ledger().count == users.count)
    }

    /// A migration of the live API into the project it reads: every account is there already, which validate says
    /// under `existing_accounts: keep` (nothing would be imported), and not with overwrite or another project.
    @Test(arguments: [("", true), ("    existing_accounts: overwrite\n", false), ("    project_id: other-project\n", false)])
    func importingIntoTheProjectReadIsWarnedOf(importKeys: String, warned: Bool) throws {
        let pipeline = try SandboxProcess.livePipeline("  google:\n    project_id: demo-idpipe\n    credentials: sa.json\n"
            + "output:\n  import_json: cleaned.json\n")
        defer { Binary.removeVariant(pipeline) }
        let path = Binary.root.appendingPathComponent(pipeline).path
        let stage = importKeys.isEmpty ? "  import: true\n" : "  import:\n" + importKeys
        try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "  detect_relay: true\n", with: "  detect_relay: true\n" + stage)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let (code, output) = try Binary.run(["validate", pipeline])
        #expect(code == 0 && output.contains("import: apply imports the import file into project "), "\(output)")
        #expect(output.contains("stages.import imports into the project (and tenant) the live source reads") == warned, "\(output)")
    }

    @Test func validateChecksServicesWithoutSideEffects() throws {
        let sandbox = try SandboxProcess(accounts: Binary.root.appendingPathComponent("Samples/accounts.json").path)
        let pipeline = try SandboxProcess.livePipeline("  google:\n    project_id: demo-idpipe\n    endpoint: http://127.0.0.1:\(sandbox.port)/v1")
        defer { Binary.removeVariant(pipeline) }
        let (code, output) = try Binary.run(["validate", pipeline, "--check-services"],
                                            environment: ["GOOGLE_APPLICATION_CREDENTIALS": sandbox.directory + "/sandbox/service-account.json"])
        // init wrote token_uri with port 0; serve pointed it at its real port once bound.
        #expect(code == 0, "\(output)")
        #expect(output.contains("ok: google"))
        let (emulatorCode, emulatorOutput) = try Binary.run(["validate", pipeline, "--check-services"],
                                                            environment: ["FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:\(sandbox.port)"])
        #expect(emulatorCode == 0, "\(emulatorOutput)")
        #expect(emulatorOutput.contains("ok: google"))
        // validate names the emulator the variable points at (it said the endpoint, or production).
        #expect(emulatorOutput.contains("services.google: the emulator at 127.0.0.1:\(sandbox.port) (FIREBASE_AUTH_EMULATOR_HOST)"), "\(emulatorOutput)")
        #expect((try sandbox.stats()["ledger"] as? Int) == 0)
    }
}
