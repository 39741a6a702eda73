import IdPipeCore
import IdPipeCrypto
import IdPipeExtract
#if canImport(Glibc)
import Glibc
#endif

/// A pipeline file read from disk, with its paths resolved against the file's folder.
struct PipelineContext {
    let path: String
    let text: String
    let definition: PipelineDefinition
    let folder: String
    /// SHA-256 of the bytes read (the file is not read a second time for it).
    let sha256: String

    init(path: String) throws {
        let kind = FileInfo.kind(path)
        if case .notGiven = kind, let problem = kind.problem { throw CommandError("cannot read the pipeline file \(path): it \(problem)") }
        guard let file = fopen(path, "r") else { throw CommandError("cannot read the pipeline file \(path): \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count == 0 {
                guard ferror(file) == 0 else { throw CommandError("cannot read the pipeline file \(path): \(String(cString: strerror(errno)))") }
                break
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let line = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).firstIndex { String(validating: $0, as: UTF8.self) == nil }
            throw CommandError("\(path)\(line.map { ":\($0 + 1)" } ?? ""): the pipeline file is not valid UTF-8")
        }
        self.path = path
        self.text = text
        self.sha256 = SHA256Hasher.hexDigest(text)
        self.definition = try PipelineDefinition.parse(yaml: text, file: path)
        self.folder = IdPipeCore.folder(of: path)
    }

    func resolve(_ relative: String) -> String {
        SideInputReader.resolve(relative, folder)
    }

    var sourcePath: String { resolve(definition.source.path) }

    /// Whether a plan of this pipeline sets its services up (and stops when they cannot be): to read the live API, or
    /// to count the data its deletions would remove.
    var planUsesServices: Bool {
        definition.source.format == .identityToolkit
            || definition.services.google != nil && definition.stages.delete?.pathKinds.isEmpty == false
    }

    /// The side inputs by role and resolved path.
    var sideInputPaths: [(String, String)] {
        InputsConfig.roles.compactMap { role, key in definition.inputs[keyPath: key].map { (role, resolve($0)) } }
    }

    /// Makes each side input readable as a file and returns its SHA-256 by role; apply calls it, and plan its two halves,
    /// before they read any side input. A side input given as a stream (`<(zcat tokens.gz)`) is copied into memory here, so that
    /// it can be read more than once (for its digest, then by its reader); the copy lasts until the process ends. So is
    /// a terminal given by descriptor (`/dev/stdin`), whose digest would otherwise be that of nothing.
    /// A missing file or a folder names its pipeline key.
    func prepareSideInputs() throws -> [String: String] {
        try captureSideInputs()
        return try sideInputDigests()
    }

    /// The first half of `prepareSideInputs`: each side input checked, and captured when it is a stream.
    func captureSideInputs() throws {
        try refuseSecretFilesAsInputs()
        for (role, path) in sideInputPaths {
            let kind = FileInfo.kind(path)
            if let problem = kind.problem { throw CommandError("\(self.path): inputs.\(role): \(path) \(problem)") }
            if kind == .stream || kind == .device {
                do { try FileInfo.captureStream(path, kind: kind, secret: role == "stored_tokens") } catch let error as InputError { throw CommandError("\(self.path): inputs.\(role): \(error)") }
            }
        }
    }

    /// The second half: the SHA-256 of each side input (captured first), by role.
    func sideInputDigests() throws -> [String: String] {
        var digests: [String: String] = [:]
        for (role, path) in sideInputPaths { digests[role] = try FileFingerprint.digest(of: path) }
        return digests
    }

    /// Refuses an input that is one of the pipeline's secret files (a key, an app secret): its lines would be read as
    /// ids, and those that match no account named in the reports (a review saw the webhook's secret in plan.md).
    func refuseSecretFilesAsInputs() throws {
        let d = definition
        // Resolved as `Services` reads them: the pipeline's paths from its folder, the environment's as given.
        var files: [(String, String?)] = [
            ("services.google.credentials", d.services.google?.credentials.map(resolve)),
            ("services.apple.private_key", d.services.apple.map { resolve($0.privateKey) }),
            ("services.facebook.app_secret_file", d.services.facebook?.appSecretFile.map(resolve)),
            ("services.webhook.secret_file", d.services.webhook?.secretFile.map(resolve)),
            ("stages.import.password_hash.signer_key_file", d.stages.importAccounts?.passwordHash?.signerKeyFile.map(resolve)),
        ]
        if let google = d.services.google, google.credentials == nil {
            files.append(("GOOGLE_APPLICATION_CREDENTIALS", ProcessEnvironment.value("GOOGLE_APPLICATION_CREDENTIALS")))
        }
        let known = files.compactMap { key, file in file.flatMap(FileInfo.identity).map { (key, $0) } }
        guard !known.isEmpty else { return }
        var inputs = sideInputPaths.map { ("inputs.\($0.0)", $0.1) }
        if d.source.format != .identityToolkit { inputs.insert(("source.path", sourcePath), at: 0) }
        for (role, input) in inputs {
            guard let identity = FileInfo.identity(input), let secret = known.first(where: { $0.1 == identity }) else { continue }
            throw CommandError("\(path): \(role) is the file of \(secret.0), a secret: its lines would be read as accounts or ids, and named in "
                + "the reports; give the input's own file")
        }
    }

    /// Refuses, before anything is written, an output that is one of this pipeline's inputs: an import file or a
    /// report named like the export truncated it while the plan read it, and a state store there would replace it.
    func refuseOutputsOverInputs(_ outputs: [String]) throws {
        var inputs = [("the pipeline file", path)] + sideInputPaths.map { ("inputs.\($0.0)", $0.1) }
        if definition.source.format != .identityToolkit { inputs.insert(("source.path", sourcePath), at: 1) }
        let known = inputs.compactMap { role, input in FileInfo.identity(input).map { (role, input, $0) } }
        for output in outputs {
            guard let identity = FileInfo.identity(output), let input = known.first(where: { $0.2 == identity }) else { continue }
            throw CommandError("\(path): \(input.0): \(input.1) is also where this run writes \(output), which would overwrite it; "
                + "choose another --out folder, --state or output name")
        }
    }

    func openSource(_ checkpoint: InputCheckpoint, services: Services?) throws -> any AccountSource {
        let source = definition.source
        // For a record a reader cannot read: what the normalize stage would also find in it (nothing with it off).
        let normalize = definition.stages.normalize ? AccountNormalizer.Options(source: source) : nil
        switch source.format {
        case .identityToolkit:
            guard let client = services?.identityToolkit, let project = services?.projectId else {
                throw CommandError("\(path): source: the live API needs services.google")
            }
            return IdentityToolkitSource(project: project, checkpoint: checkpoint) { token in
                try blocking { try await client.listUsers(pageToken: token) }
            }
        case .authExportJSON:
            return try ExportJSONSource(path: sourcePath, checkpoint: checkpoint, batchBytes: batchBytes(ExportJSONSource.defaultBatchBytes),
                                        normalize: normalize)
        case .authExportCSV: return try CSVSource.authExport(path: sourcePath, checkpoint: checkpoint, batchBytes: batchBytes(CSVSource.defaultBatchBytes))
        case .mappedCSV:
            return try CSVSource.mapped(path: sourcePath, mapping: source.mapping!, timestamps: source.timestampFormat, zone: source.timestampZone,
                                        nullCells: source.nullCells, normalize: normalize,
                                        checkpoint: checkpoint,
                                        batchBytes: batchBytes(CSVSource.defaultBatchBytes))
        }
    }

    /// How much of an export file a batch reads. Tests cut a small file into many batches.
    private func batchBytes(_ standard: Int) -> Int {
        ProcessEnvironment.value("IDPIPE_BATCH_BYTES").flatMap(Int.init) ?? standard
    }

    /// What `validate` says of an input that plan could not read; nothing when it can.
    private func fileProblem(_ path: String, isExport: Bool = false) -> String {
        inputProblem(path, isExport: isExport).map { "  (\($0))" } ?? ""
    }

    private func inputProblem(_ path: String, isExport: Bool = false) -> String? {
        let kind = FileInfo.kind(path)
        if isExport && kind == .stream { return "a pipe, but the export must be a file" }
        if isExport && kind == .device { return "a device, but the export must be a file" }
        return kind.problem ?? FileInfo.streamProblem(path, kind: kind)
    }

    /// What the pipeline reads and does not use: deletion requests given with no rule that selects by them were read,
    /// shown in the reports, and honoured nowhere, without a word.
    func warnings() -> [String] {
        var found: [String] = []
        if definition.inputs.deletionRequests != nil && !definition.selection.deletionRequested {
            found.append("inputs.deletion_requests is given, but select.deletion_requested is not true: the requests are shown, and select nothing")
        }
        // Read by a `legacy` name source; its consent column by relay detection, and by a name source of another login
        // than Apple (a relay account takes that name only with consent).
        let sources = definition.stages.backfillNames ?? []
        let readers = definition.stages.detectRelay || sources.contains {
            if case .provider(let id) = $0 { return id != ProviderID.apple }
            return $0 == .legacy
        }
        if definition.inputs.legacyNames != nil && !readers {
            found.append("inputs.legacy_names is given, but nothing reads it: no stages.backfill_names source is 'legacy' or a login "
                + "other than Apple (whose names a relay account takes with the consent it records), and detect_relay is off")
        }
        // A live source's accounts imported where they are read from: each is in the project already.
        if let config = definition.stages.importAccounts, config.existingAccounts == .keep, definition.source.format == .identityToolkit,
           let google = definition.services.google, (config.projectId ?? google.projectId) == google.projectId,
           (config.tenantId ?? google.tenantId) == google.tenantId {
            found.append("stages.import imports into the project (and tenant) the live source reads: every account is there already, so "
                + "with existing_accounts: keep (the default) none is imported; write existing_accounts: overwrite to replace them with the cleaned ones")
        }
        return found
    }

    /// The services apply would need that the pipeline does not configure: its plan is made and reviewed all the same,
    /// and apply refuses it (validate said "valid" without a word, and plan.md only of uncounted data).
    func servicesApplyNeeds() -> [String] {
        let d = definition, services = d.services
        var missing: [String] = []
        // What this pipeline would have Google do, by name.
        let uses = [d.stages.backfillNames != nil ? "name updates" : nil, d.stages.revoke?.firebaseSessions == true ? "session ends" : nil,
                    d.stages.delete?.accounts == true ? "account deletions" : nil, d.stages.delete?.pathKinds.isEmpty == false ? "the data paths" : nil]
            .compactMap { $0 }
        if !uses.isEmpty && services.google == nil {
            let listed = uses.count == 1 ? uses[0] : uses.dropLast().joined(separator: ", ") + " and " + uses[uses.count - 1]
            missing.append("services.google (\(listed))")
        }
        if d.stages.revoke?.apple == true && services.apple == nil { missing.append("services.apple (Apple revocations)") }
        if d.stages.revoke?.facebook == true && services.facebook == nil { missing.append("services.facebook (Facebook revocations)") }
        return missing
    }

    /// The inputs plan could not read now (the export and the side inputs), by path.
    func unreadableInputs() -> [String] {
        var paths: [String] = []
        if definition.source.format != .identityToolkit, inputProblem(sourcePath, isExport: true) != nil { paths.append(sourcePath) }
        for (_, path) in sideInputPaths where inputProblem(path) != nil { paths.append(path) }
        return paths
    }

    /// What a stage would do, in words, for `validate`.
    func describe() -> [String] {
        let d = definition
        var lines = ["pipeline \(d.name)" + (d.description.map { ": \($0)" } ?? "")]
        if d.source.format == .identityToolkit {
            lines.append("extract: the live API (accounts:batchGet pages of 1000; the page token is checkpointed)")
        } else {
            // A table's times written without a zone are read in the one it names.
            let zone = d.source.zoneAssumption.map { " (\($0))" } ?? ""
            lines.append("extract: \(d.source.format.rawValue) from \(sourcePath)" + zone + fileProblem(sourcePath, isExport: true))
        }
        for (role, path) in sideInputPaths { lines.append("  side input \(role): \(path)" + fileProblem(path)) }
        let phones = d.source.phoneAssumption.map { " (\($0))" } ?? ""
        lines.append("normalize: " + (d.stages.normalize ? "on" + phones : "off"))
        lines.append("detect private relay: " + (d.stages.detectRelay ? "on" : "off"))
        lines.append("backfill names: " + (d.stages.backfillNames.map { "from " + $0.map(\.description).joined(separator: ", then ") } ?? "off"))
        var rules: [String] = []
        if d.selection.deletionRequested {
            rules.append("deletion requested" + (d.selection.deletionGraceDays.map { " (acted on \(Console.count($0, "day")) after the request)" } ?? ""))
        }
        let retention = [d.selection.disabled ? "disabled" : nil, d.selection.inactiveForDays.map { "no sign-in for \($0) days" }].compactMap { $0 }
        if d.selection.retentionMatch == .all { rules.append(retention.joined(separator: " and ")) } else { rules += retention }
        if !rules.isEmpty {
            var line = "select: " + rules.joined(separator: " or ")
            if !d.selection.providers.isEmpty { line += ", linked to " + d.selection.providers.joined(separator: " or ") }
            let protected = d.selection.protectedIds.count + d.selection.protectedEmailDomains.count
            if protected > 0 { line += "; \(protected) protection rule" + (protected == 1 ? "" : "s") }
            lines.append(line)
        }
        if let revoke = d.stages.revoke {
            let what = [revoke.apple ? "Apple tokens" : nil, revoke.facebook ? "Facebook permissions" : nil, revoke.firebaseSessions ? "Firebase sessions" : nil]
            lines.append("revoke: " + what.compactMap { $0 }.joined(separator: ", "))
        } else {
            lines.append("revoke: off")
        }
        if let delete = d.stages.delete {
            var what: [String] = []
            if delete.dataWebhook != nil {
                // Unsigned, the hook cannot tell idpipe's deletions from anyone's requests (a secret from the environment counts).
                let variable = d.services.webhook?.secretEnv ?? WebhookServiceConfig().secretEnv
                let signed = d.services.webhook?.secretFile != nil || !(ProcessEnvironment.value(variable) ?? "").isEmpty
                what.append("data through the webhook" + (signed ? " (signed)" : " (unsigned: no shared secret, services.webhook.secret_file or \(variable))"))
            }
            // The stores' paths go at once.
            let paths = delete.pathKinds.map { Planner.pathDetail($0, delete) }
            if !paths.isEmpty { what.append((paths.count > 1 ? "at once, " : "") + paths.joined(separator: "; ")) }
            if delete.accounts { what.append("accounts (batch delete)") }
            lines.append("delete: " + what.joined(separator: ", then ") + "; when a revocation is not possible: \(delete.whenNotRevocable.rawValue)"
                + ", when one fails: \(delete.whenRevocationFails.rawValue)")
        } else {
            lines.append("delete: off")
        }
        if let limits = d.guards.limits {
            lines.append("guards: " + limits)
        } else if d.stages.delete != nil {
            lines.append("guards: none (nothing caps the deletions; --max-deletions caps an apply)")
        }
        if d.apply.unattended { lines.append("apply: unattended (`run` applies without --yes)") }
        let services = d.services
        if let google = services.google {
            // The emulator's variable wins over the endpoint, as it does when the services are built.
            let emulator = ProcessEnvironment.value("FIREBASE_AUTH_EMULATOR_HOST").flatMap { $0.isEmpty ? nil : "the emulator at \($0) (FIREBASE_AUTH_EMULATOR_HOST)" }
            lines.append("services.google: " + (emulator ?? google.endpoint ?? "production") + ", \(google.updatesPerSecond) updates/s, \(google.batchDeletesPerSecond) batch deletes/s, "
                + "\(google.readsPerSecond) reads/s (batchGet, lookup)")
        }
        if let apple = services.apple { lines.append("services.apple: client \(apple.clientId), team \(apple.teamId), key \(apple.keyId)") }
        if let facebook = services.facebook { lines.append("services.facebook: app \(facebook.appId), Graph \(facebook.graphVersion)") }
        if let output = d.output.importJSON {
            lines.append("output: auth:import JSON at \(output) (in the output folder), "
                + (d.output.allowDuplicateEmails ? "two accounts may share an email, not a phone number or federated sign-in"
                   : "no two accounts share an email, phone number or federated sign-in"))
        }
        if let config = d.stages.importAccounts {
            lines.append("import: apply imports the import file into \(d.importTargetDescription ?? "") through accounts:batchCreate, "
                + "\(config.usersPerRequest) accounts a request, \(d.services.google?.batchCreatesPerSecond ?? 1) requests/s, "
                + (config.passwordHash.map { hash in "password hashes as \(hash.algorithm)"
                    + (hash.usesSignerKey ? " (signer key from " + (hash.signerKeyFile == nil ? "$" + hash.signerKeyEnv : "signer_key_file") + ")" : "") }
                   ?? "no password hash parameters (an account with a passwordHash stops the import)")
                + (config.existingAccounts == .keep ? "; an account whose uid the project has already is kept as it is, one whose "
                    + (d.output.allowDuplicateEmails ? "" : "email, ") + "phone number or sign-in another account of the project has is "
                    + "left out (each request's accounts looked up first), both listed"
                    : "; an account whose uid the project has already is overwritten with the file's (nothing is looked up)"))
        }
        return lines
    }
}

extension PipelineDefinition {
    /// The project (and tenant) `stages.import` sends the accounts to, in words; nil without it.
    var importTargetDescription: String? {
        guard let config = stages.importAccounts else { return nil }
        let google = services.google
        let project = config.projectId ?? google?.projectId
        let tenant = config.tenantId ?? google?.tenantId
        return (project.map { "project \($0)" } ?? "the project of services.google's credentials") + (tenant.map { ", tenant \($0)" } ?? "")
    }
}
