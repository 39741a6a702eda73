import Yams

extension PipelineDefinition {
    /// Parses a pipeline file's text. `file` names it in errors.
    public static func parse(yaml text: String, file: String) throws(PipelineFileError) -> PipelineDefinition {
        let root: Node
        do {
            // A byte-order mark, as some editors on Windows write one, is not YAML's business.
            guard let node = try Yams.compose(yaml: text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text) else {
                throw PipelineFileError(file: file, line: nil, path: "", message: "the file is empty")
            }
            root = node
        } catch let error as PipelineFileError {
            throw error
        } catch YamlError.duplicatedKeysInMapping(let duplicates, let context) {
            // Yams's own message quotes the whole mapping (the whole file, for a top-level key), and its place is
            // the mapping's: the line given is the second key's, found in the text.
            let keys = duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")
            let again = duplicates.sorted().compactMap { secondLine(of: $0, in: text, from: context.mark.line) }.min()
            throw PipelineFileError(file: file, line: again ?? context.mark.line, path: "",
                                    message: "not valid YAML: \(keys) given twice in one mapping" + (again == nil ? " (the mapping starts here)" : ""))
        } catch let error as YamlError {
            throw PipelineFileError(file: file, line: error.problemLine, path: "", message: "not valid YAML: \(described(error, in: text))")
        } catch {
            throw PipelineFileError(file: file, line: nil, path: "", message: "not valid YAML: \(shortened("\(error)"))")
        }
        do {
            let problems = ConfigProblems()
            do {
                return try decode(ConfigNode(node: root, path: "", file: file, problems: problems))
            } catch let error as PipelineFileError {
                // With the unknown keys read past before a problem that stopped the file (a version this idpipe does not read).
                var first = error
                first.others = []
                var all = [first] + error.others
                var given = Set(all.map(\.description))
                for problem in problems.problems where given.insert(problem.description).inserted { all.append(problem) }
                throw PipelineFileError.together(all)
            }
        } catch let error as PipelineFileError {
            throw error
        } catch {
            throw PipelineFileError(file: file, line: nil, path: "", message: "\(error)")
        }
    }

    /// The line (from 1) where `key` is written a second time, from line `start` (where its mapping starts): a block
    /// key at the indentation of its first, or a flow mapping that has it twice on one line.
    static func secondLine(of key: String, in text: String, from start: Int) -> Int? {
        let forms = ["\(key):", "\"\(key)\":", "'\(key)':"]
        var indent: Int?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() where index + 1 >= start {
            let inFlow = forms.reduce(0) { count, form in
                count + line.components(separatedBy: "{" + form).count - 1 + line.components(separatedBy: ", " + form).count - 1
            }
            if inFlow >= 2 { return index + 1 }
            let body = line.drop { $0 == " " || $0 == "-" }
            guard forms.contains(where: { body.hasPrefix($0) }) else { continue }
            let depth = line.count - body.count
            guard let first = indent else {
                indent = depth
                continue
            }
            if depth == first { return index + 1 }
        }
        return nil
    }

    /// libyaml's problem in a line of words: what it found, at which column, and while reading what; a tab, which
    /// YAML does not indent with, is named.
    static func described(_ error: YamlError, in text: String) -> String {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(mark.line - 1).first ?? ""
            let tab = line.contains("\t") ? " (the line holds a tab: YAML indents with spaces)"
                // `[users/{uid}]`: in brackets, a brace opens a mapping.
                : line.contains("{uid}") ? " (a path with {uid} in [ ] is read as a mapping: quote it, or list the paths one `- users/{uid}` a line)"
                : ""
            // libyaml's context reads before its problem ("expected a single document" … "but found another").
            let reading = context.map { "; \($0.text)" + ($0.mark.line != mark.line ? " (line \($0.mark.line))" : "") } ?? ""
            let found = problem.hasPrefix("but ") ? String(problem.dropFirst(4)) : problem
            return shortened("\(found.contains("nesting level") ? "nested too deeply" : found) at column \(mark.column)\(reading)\(tab)")
        case .reader(let problem, _, _, _):
            return shortened(problem)
        default:
            return shortened("\(error)")
        }
    }

    /// Yams's messages quote the line at fault, whole: 200 kB of it for a line of nested brackets. Each line of the
    /// message is cut to 300 characters.
    static func shortened(_ message: String) -> String {
        message.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.count > 300 ? $0.prefix(300) + " …" : $0 }.joined(separator: "\n")
    }

    private static func decode(_ root: ConfigNode) throws -> PipelineDefinition {
        let top = try root.mapping(allowed: ["version", "name", "description", "source", "inputs", "select", "stages", "guards", "report", "output", "services", "apply"])
        // A version this idpipe does not read ends the reading: its keys may mean other things. One not given is read as
        // version 1, for the rest of the file's problems to be given with it.
        var version = 1
        if let versionNode = top["version"] {
            // Digits beyond any number are a version this idpipe does not read, as 2 is.
            if let text = versionNode.node.scalar?.string, text.count > 1, text.allSatisfy({ $0.isASCII && $0.isNumber }), Int(text) == nil {
                throw versionNode.error("version \(text) is not supported (this idpipe reads version 1)")
            }
            version = try versionNode.int()
            guard version == 1 else { throw versionNode.error("version \(version) is not supported (this idpipe reads version 1)") }
        } else {
            root.tell("missing key 'version' (this idpipe reads version 1)")
        }
        let name = top["name"].map { nameNode in
            nameNode.value { node in
                let name = try node.string()
                guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw node.error("a name is letters, digits, '-' and '_' (it names the output folder)")
                }
                return name
            }
        } ?? {
            root.tell("missing key 'name'")
            return nil
        }()
        let sourceNode = top["source"]
        if sourceNode == nil { root.tell("missing key 'source'") }
        // Each section is read whatever another's problem, and the problems are given together, in line order: one at
        // a time, a file took one validate per mistake. (Within a section, every unknown key and every bad value are
        // given: `ConfigNode.mapping` and `value` tell them to `root.problems`, and read on. A problem that leaves
        // nothing to read on from, a missing key, a value the others depend on, ends its section, stage or service.)
        var problems: [PipelineFileError] = []
        func read<T>(_ body: () throws -> T) throws -> T? {
            do { return try root.section(body) } catch let problem as PipelineFileError {
                problems.append(problem)
                return nil
            } catch is ProblemsTold {
                return nil
            }
        }
        let stages = try read { try top["stages"].map(decodeStages) ?? StagesConfig() }
        let selection = try read { try top["select"].map(decodeSelection) ?? SelectionConfig() }
        let source = try sourceNode.flatMap { node in try read { try decodeSource(node) } }
        let inputs = try read { try top["inputs"].map(decodeInputs) ?? InputsConfig() }
        let description = try read { try top["description"]?.string() }
        let guards = try read { try top["guards"].map(decodeGuards) ?? GuardsConfig() }
        let report = try read { try top["report"].map(decodeReport) ?? ReportConfig() }
        let output = try read { try top["output"].map(decodeOutput) ?? OutputConfig() }
        let services = try read { try top["services"].map(decodeServices) ?? ServicesConfig() }
        let apply = try read { try top["apply"].map(decodeApply) ?? ApplyConfig() }
        // What one section asks of another, when both could be read.
        if let stages, let item = top["stages"]?.child("import") {
            // A migration imports; a cleanup revokes and deletes. Both in one plan would import accounts it also deletes.
            if stages.revoke != nil || stages.delete != nil {
                problems.append(item.error("a pipeline that imports accounts does not revoke or delete: make the cleanup another pipeline"))
            }
            if stages.importAccounts != nil, top["output"]?.node.mapping?["import_json"] == nil {
                problems.append(item.error("imports the import file: name it with output.import_json"))
            }
            if stages.importAccounts != nil, top["services"]?.node.mapping?["google"] == nil {
                problems.append(item.error("imports into services.google's project: add services.google (project_id, credentials)"))
            }
        }
        if let stages, let selection, stages.revoke != nil || stages.delete != nil, !selection.selectsAnything {
            problems.append((top["select"] ?? root).error("the revoke and delete stages need a 'select' rule (deletion_requested, disabled or inactive_for_days)"))
        }
        if let source, let stages, source.phoneDefault != nil, !stages.normalize, let code = sourceNode?.child("phone_country_code") {
            problems.append(code.error("is read by the normalize stage, which stages.normalize turns off"))
        }
        if let source, let sourceNode, source.format == .identityToolkit, top["services"]?.node.mapping?["google"] == nil {
            problems.append(sourceNode.error("format identity-toolkit reads the live API: add services.google (project_id, credentials)"))
        }
        // A rule whose input is missing does nothing, and the plan said so only as "no configured source has a name".
        if let stages, let inputs, stages.backfillNames?.contains(.legacy) == true, inputs.legacyNames == nil {
            problems.append((top["stages"]?.child("backfill_names") ?? root)
                .error("the name source 'legacy' reads inputs.legacy_names, which the pipeline does not give"))
        }
        if let selection, let inputs, selection.deletionRequested, inputs.deletionRequests == nil {
            problems.append((top["select"]?.child("deletion_requested") ?? root)
                .error("deletion_requested reads inputs.deletion_requests, which the pipeline does not give"))
        }
        guard problems.isEmpty, root.problems.problems.isEmpty, let name, let stages, let selection, let source, let inputs, let description,
              let guards, let report, let output, let services, let apply else {
            let found = problems + root.problems.problems
            throw PipelineFileError.together(found.isEmpty ? [root.error("could not be read")] : found)
        }
        return PipelineDefinition(
            version: version, name: name, description: description,
            source: source,
            inputs: inputs,
            selection: selection, stages: stages,
            guards: guards,
            report: report,
            output: output,
            services: services,
            apply: apply)
    }

    private static func decodeSource(_ node: ConfigNode) throws -> SourceConfig {
        let keys = try node.mapping(allowed: ["format", "path", "mapping", "timestamp_format", "timestamp_zone", "phone_country_code", "phone_trunk_prefix",
                                              "null_values"])
        if let formatNode = keys["format"], try formatNode.oneOf(SourceFormat.self) == .identityToolkit {
            if let pathNode = keys["path"] { throw pathNode.error("format identity-toolkit reads the live API and takes no path") }
            // Read by a mapped table's reader only: with the live API they did nothing, without a word.
            for key in ["mapping", "timestamp_format", "timestamp_zone", "phone_country_code", "phone_trunk_prefix", "null_values"] {
                // (epoch-ms says what the API's times are: taken, as on an export.)
                if let node = keys[key], key != "timestamp_format" || (try? node.oneOf(TimestampFormat.self)) != .epochMilliseconds {
                    throw node.error("is for a mapped table (format: mapped-csv); format identity-toolkit reads the live API's accounts "
                        + "as they are")
                }
            }
            return SourceConfig(format: .identityToolkit, path: "", mapping: nil, timestampFormat: .epochMilliseconds)
        }
        guard let pathNode = keys["path"] else { throw node.error("missing key 'path'") }
        let path = try pathNode.string()
        let format: SourceFormat
        if let formatNode = keys["format"] {
            format = try formatNode.oneOf(SourceFormat.self)
        } else if keys["mapping"] != nil && !path.lowercased().hasSuffix(".json") {
            // A column mapping is for a table with a header: an export's .csv has none.
            format = .mappedCSV
        } else if path.lowercased().hasSuffix(".json") {
            format = .authExportJSON
        } else if path.lowercased().hasSuffix(".csv") {
            format = .authExportCSV
        } else {
            throw node.error("cannot tell the format from '\(path)'; add format: \(SourceFormat.allCases.map(\.rawValue).joined(separator: " | "))")
        }
        var mapping: ColumnMapping?
        if let mappingNode = keys["mapping"] {
            guard format == .mappedCSV else { throw mappingNode.error("a mapping is only for format: mapped-csv") }
            mapping = try decodeMapping(mappingNode)
        } else if format == .mappedCSV {
            throw node.error("format mapped-csv needs a 'mapping' of account fields to column names")
        }
        let timestamps = try keys["timestamp_format"]?.oneOf(TimestampFormat.self) ?? (format == .mappedCSV ? .rfc3339 : .epochMilliseconds)
        // An export's times are epoch milliseconds whatever the key said (another unit was ignored, without a word).
        if let node = keys["timestamp_format"], format != .mappedCSV, timestamps != .epochMilliseconds {
            throw node.error("is for a mapped table (format: mapped-csv): an export's times are epoch milliseconds")
        }
        return SourceConfig(format: format, path: path, mapping: mapping, timestampFormat: timestamps,
                            timestampZone: keys["timestamp_zone"]?.value { try decodeTimestampZone($0, format: format, timestamps: timestamps) },
                            phoneDefault: node.value { _ in try decodePhoneDefault(keys, format: format) } ?? nil,
                            nullValues: keys["null_values"]?.value { try decodeNullValues($0, format: format) })
    }

    /// `null_values`: the texts a table's cells hold for NULL.
    private static func decodeNullValues(_ node: ConfigNode, format: SourceFormat) throws -> [String] {
        guard format == .mappedCSV else {
            throw node.error("is for a mapped table (format: mapped-csv): an export leaves a field without a value empty")
        }
        // One text alone is a list of one.
        let items = node.node.sequence == nil ? [node] : try node.list()
        return items.compactMap { item in
            item.value { item in
                let text = try item.string()
                guard !text.isEmpty else { throw item.error("an empty cell is no value already: list only the texts that stand for NULL") }
                // In double quotes, YAML reads \N as one character (U+0085, a line end).
                guard text != "\u{85}" else { throw item.error("in double quotes YAML reads \\N as a line end (U+0085): write '\\N' in single quotes, or \\N alone") }
                // A flag's spelling would turn the flags written so into false, without a word.
                guard !["true", "false", "1", "0", "yes", "no", "y", "n", "t", "f"].contains(text.lowercased()) else {
                    throw item.error("'\(text)' is also how a flag is written (true/false, 1/0, yes/no, y/n, t/f): a table's NULL text cannot be one")
                }
                return text
            }
        }
    }

    /// `timestamp_zone`: UTC or a fixed offset, for a table's RFC 3339 column written without one (a SQL `DATETIME`).
    private static func decodeTimestampZone(_ node: ConfigNode, format: SourceFormat, timestamps: TimestampFormat) throws -> TimestampZone {
        guard format == .mappedCSV else {
            throw node.error("is for a mapped table (format: mapped-csv): an export's times are epoch milliseconds, in UTC")
        }
        guard timestamps == .rfc3339 else {
            throw node.error("is for times written as dates (timestamp_format: rfc3339): an epoch time is in UTC")
        }
        let text = try node.string().trimmingSpaces
        guard let zone = TimestampZone(text) else {
            // UTC+1, GMT+01:00: the offset alone is what is asked for.
            let upper = text.uppercased()
            let offset = String(text.dropFirst(3))
            // (UTC+1: an hour of one digit, which an offset writes with two.)
            if ["UTC", "GMT"].contains(where: upper.hasPrefix),
               let zone = TimestampZone(offset) ?? (offset.count == 2 ? TimestampZone(offset.prefix(1) + "0" + offset.suffix(1)) : nil) {
                throw node.error("expected UTC or an offset alone, found '\(text)': write \(zone.description.dropFirst(3))")
            }
            // A zone's name (Europe/Berlin, CET, EST): most such names stand for a zone with summer time.
            guard text.contains(where: \.isLetter) else {
                throw node.error("expected UTC or an offset of hours and minutes, two digits each, from -12:00 to +14:00 (+01:00, -05:30), "
                    + "found '\(text)'")
            }
            throw node.error("expected UTC or an offset such as +01:00 or -05:00, found '\(text)': a zone is given by its offset, as a name "
                + "may stand for one with summer time, whose times a table cannot tell apart (its autumn hour comes twice); a column "
                + "written in such a zone is exported with each time's offset (PostgreSQL's timestamptz writes it), or as epoch milliseconds")
        }
        return zone
    }

    /// `phone_country_code` with its `phone_trunk_prefix`, both or neither: a trunk prefix assumed wrongly gives another
    /// person's number (`+44 07911…`, or Rome's `06…` without its 0), which could then sign in by SMS.
    private static func decodePhoneDefault(_ keys: [String: ConfigNode], format: SourceFormat) throws -> PhoneDefault? {
        guard let codeNode = keys["phone_country_code"] else {
            if let trunkNode = keys["phone_trunk_prefix"] { throw trunkNode.error("goes with phone_country_code, the country whose numbers it is for") }
            return nil
        }
        guard format == .mappedCSV else {
            throw codeNode.error("is for a mapped table (format: mapped-csv): an export's phone numbers are in E.164, with their country code")
        }
        let code = try codeNode.string().trimmingSpaces
        let digits = code.hasPrefix("+") ? String(code.dropFirst()) : code
        guard (1...3).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), !digits.hasPrefix("0") else {
            throw codeNode.error("expected a calling code of 1 to 3 digits (1, 44, 81), found '\(code)'")
        }
        guard let trunkNode = keys["phone_trunk_prefix"] else {
            throw codeNode.error("needs phone_trunk_prefix: what a caller inside the country dials before a national number (0 in most countries, "
                + "1 in North America, none in Italy or Spain)")
        }
        // Only prefixes that no national number starts with: Russia's 8 also begins St Petersburg's 812, so "812 345…"
        // would lose a digit of its area code.
        let trunk = try trunkNode.string().trimmingSpaces
        let allowed = digits == "1" ? ["1", "none"] : ["0", "none"]
        guard allowed.contains(trunk.lowercased()) else {
            throw trunkNode.error("expected \(allowed.joined(separator: " or ")) with country code \(digits), found '\(trunk)': a trunk prefix that can also "
                + "begin an area code (8 in Russia) cannot be told from it; write such a table's numbers in E.164 at the source")
        }
        // Italy's numbers (San Marino's, the Vatican's) keep their 0: dropped, Rome's 06 6988 1234 became another number.
        if ["39", "378", "379"].contains(digits) && trunk == "0" {
            throw trunkNode.error("is none for country code \(digits): its numbers keep their leading 0 (Rome's 06…)")
        }
        return PhoneDefault(countryCode: digits, trunkPrefix: trunk.lowercased() == "none" ? "" : trunk)
    }

    private static func decodeMapping(_ node: ConfigNode) throws -> ColumnMapping {
        let keys = try node.mapping(allowed: Set(ColumnMapping.fields + ["providers"]))
        var columns: [String: String] = [:]
        for field in ColumnMapping.fields { columns[field] = keys[field]?.value { try $0.string() } }
        if keys["localId"] == nil { node.tell("the mapping needs at least 'localId'") }
        var providers: [String: String] = [:]
        if let providerNode = keys["providers"], let entries = providerNode.value({ try $0.mapping(allowed: Set(ProviderID.exported)) }) {
            for (id, column) in entries { providers[id] = column.value { try $0.string() } }
        }
        return ColumnMapping(columns: columns, providers: providers)
    }

    private static func decodeInputs(_ node: ConfigNode) throws -> InputsConfig {
        let keys = try node.mapping(allowed: ["legacy_names", "deletion_requests", "stored_tokens", "protected_accounts"])
        func path(_ key: String) -> String? { keys[key]?.value { try $0.string() } }
        return InputsConfig(legacyNames: path("legacy_names"), deletionRequests: path("deletion_requests"), storedTokens: path("stored_tokens"),
                            protectedAccounts: path("protected_accounts"))
    }

    private static func decodeSelection(_ node: ConfigNode) throws -> SelectionConfig {
        let keys = try node.mapping(allowed: ["deletion_requested", "deletion_grace_days", "disabled", "inactive_for_days", "retention_match",
                                              "providers", "protect"])
        var selection = SelectionConfig()
        // Nil when not given; nil inside when its value is bad (told already).
        let requested = keys["deletion_requested"].map { node in node.value { try $0.bool() } }
        selection.deletionRequested = (requested ?? false) ?? false
        if let grace = keys["deletion_grace_days"] {
            selection.deletionGraceDays = grace.value { try $0.int(minimum: 1, maximum: 3_650, why: " (10 years)") }
            // Without the rule it delays, the key would do nothing, silently.
            if (requested ?? false) == false { grace.tell("delays the deletion_requested rule, which is not on") }
        }
        selection.disabled = keys["disabled"]?.value { try $0.bool() } ?? false
        selection.inactiveForDays = keys["inactive_for_days"]?.value { try $0.int(minimum: 1, maximum: 36_500, why: " (100 years)") }
        if let match = keys["retention_match"], let value = match.value({ try $0.oneOf(RetentionMatch.self) }) {
            selection.retentionMatch = value
            // With one rule, `all` would read as a narrower selection than it is.
            if value == .all && (keys["disabled"] == nil || keys["inactive_for_days"] == nil) {
                match.tell("all combines disabled and inactive_for_days: give both (an account is then selected when it is disabled and unused)")
            } else if value == .all, let disabled = keys["disabled"], (try? disabled.bool()) == false {
                match.tell("all combines disabled and inactive_for_days, and disabled is false: no account would meet both")
            }
        }
        if let providers = keys["providers"], let items = providers.value({ try $0.list() }) {
            // An empty list would read as "no filter": every account selected, whatever it is linked to.
            if items.isEmpty { providers.tell("is empty: name the providers to act on, or leave the key out") }
            selection.providers = items.compactMap { item in
                item.value { item in
                    let id = try item.string()
                    guard ProviderID.isKnown(id) else { throw item.error("'\(id)' is not a provider id (e.g. apple.com, facebook.com)") }
                    return id
                }
            }
        }
        if let protect = keys["protect"], let entries = protect.value({ try $0.mapping(allowed: ["uids", "email_domains"]) }) {
            selection.protectedIds = (entries["uids"]?.value { try $0.list() } ?? []).compactMap { item in
                item.value { item in
                    let uid = try item.string()
                    if let problem = uid.isEmpty ? "empty" : Selector.problem(inProtectedId: uid) {
                        throw item.error("'\(uid)': \(problem) (an id that matches no account protects nobody)")
                    }
                    return uid
                }
            }
            // Written as the normalize stage writes an email's domain (lower case, Unicode labels in their xn-- form), so
            // that `Bücher.example` protects `boss@bücher.example`, which the stage turns into `boss@xn--bcher-kva.example`.
            // A domain that could match no address (`@corp.example`, `corp`) would protect nobody, silently: refused.
            selection.protectedEmailDomains = (entries["email_domains"]?.value { try $0.list() } ?? []).compactMap { item in
                item.value { item in
                    let written = try item.string()
                    var repairs = RepairSet()
                    switch EmailNormalizer.normalizeDomain(TextScan.trimmingWhitespace(Substring(written)), repairs: &repairs) {
                    case .success(let domain): return domain
                    case .failure(let reason): throw item.error("'\(written)' is not an email domain: \(reason)")
                    }
                }
            }
        }
        return selection
    }

    private static func decodeStages(_ node: ConfigNode) throws -> StagesConfig {
        let keys = try node.mapping(allowed: ["normalize", "detect_relay", "backfill_names", "revoke", "delete", "import"])
        var stages = StagesConfig()
        stages.normalize = keys["normalize"]?.value { try $0.bool() } ?? true
        stages.detectRelay = keys["detect_relay"]?.value { try $0.bool() } ?? true
        if let backfill = keys["backfill_names"] {
            stages.backfillNames = backfill.reading {
                try backfill.stage(defaults: [NameSource.legacy], allowed: ["sources"]) { sources, entries in
                    guard let list = entries["sources"], let items = list.value({ try $0.list() }) else { return }
                    sources = items.compactMap { item in
                        item.value { item in
                            let text = try item.string()
                            guard let source = NameSource(text: text) else {
                                throw item.error("'\(text)' is not a name source (legacy, provider:<provider id>, email-local-part)")
                            }
                            return source
                        }
                    }
                    // Planned with no source, the stage filled nothing, and validate described it as "from ".
                    if items.isEmpty { list.tell("is empty: name at least one source (legacy, provider:<provider id>, email-local-part)") }
                }
            } ?? nil
        }
        if let revoke = keys["revoke"] {
            stages.revoke = revoke.reading {
                try revoke.stage(defaults: RevokeConfig(), allowed: ["apple", "facebook", "firebase_sessions"]) { config, entries in
                    config.apple = entries["apple"]?.value { try $0.bool() } ?? true
                    config.facebook = entries["facebook"]?.value { try $0.bool() } ?? true
                    config.firebaseSessions = entries["firebase_sessions"]?.value { try $0.bool() } ?? true
                }
            } ?? nil
        }
        if let delete = keys["delete"] {
            let allowed: Set = ["data_webhook", "firestore", "realtime_database", "storage", "accounts", "when_not_revocable", "when_revocation_fails"]
            stages.delete = delete.reading {
                try delete.stage(defaults: DeleteConfig(), allowed: allowed) { config, entries in
                    config.dataWebhook = entries["data_webhook"]?.value { hook in
                        let url = try hook.string()
                        guard url.hasPrefix("https://") || url.hasPrefix("http://127.0.0.1") || url.hasPrefix("http://localhost") else {
                            throw hook.error("the webhook must be an https:// URL (http only on loopback)")
                        }
                        return url
                    }
                    config.firestore = entries["firestore"]?.value(decodeFirestorePaths)
                    config.realtimeDatabase = entries["realtime_database"]?.value(decodeDatabasePaths)
                    config.storage = entries["storage"]?.value(decodeStoragePaths)
                    config.accounts = entries["accounts"]?.value { try $0.bool() } ?? true
                    config.whenNotRevocable = entries["when_not_revocable"]?.value { try $0.oneOf(NotRevocablePolicy.self) } ?? .keep
                    config.whenRevocationFails = entries["when_revocation_fails"]?.value { try $0.oneOf(NotRevocablePolicy.self) } ?? .keep
                }
            } ?? nil
        }
        if let item = keys["import"] {
            let allowed: Set = ["users_per_request", "password_hash", "project_id", "tenant_id", "existing_accounts"]
            stages.importAccounts = item.reading {
                try item.stage(defaults: ImportConfig(), allowed: allowed) { config, entries in
                    config.projectId = entries["project_id"]?.value { node in
                        // Google's rule for project ids; anything else would be sent as a path (`demo/tenants/x`).
                        let id = try node.string()
                        let bytes = Array(id.utf8)
                        guard (6...30).contains(bytes.count), (0x61...0x7a).contains(bytes[0]), bytes.last != UInt8(ascii: "-"),
                              bytes.allSatisfy({ (0x61...0x7a).contains($0) || TextScan.isASCIIDigit($0) || $0 == UInt8(ascii: "-") }) else {
                            throw node.error("'\(id)' is not a project id (6 to 30 lowercase letters, digits and hyphens, from a letter)")
                        }
                        return id
                    }
                    config.tenantId = entries["tenant_id"]?.value { node in
                        let id = try node.string()
                        guard !id.isEmpty, id.utf8.allSatisfy({ TextScan.isASCIILetterOrDigit($0) || $0 == UInt8(ascii: "-") }) else {
                            throw node.error("'\(id)' is not a tenant id (letters, digits and hyphens, as the console shows it)")
                        }
                        return id
                    }
                    config.usersPerRequest = entries["users_per_request"]?.value { try $0.int(minimum: 1, maximum: 1000, why: " (the API takes 1000 accounts a request)") }
                        ?? config.usersPerRequest
                    config.passwordHash = entries["password_hash"]?.value(decodePasswordHash)
                    config.existingAccounts = entries["existing_accounts"]?.value { try $0.oneOf(ImportConfig.ExistingAccounts.self) } ?? .keep
                }
            } ?? nil
        }
        return stages
    }

    private static func decodePasswordHash(_ node: ConfigNode) throws -> PasswordHashConfig {
        let keys = try node.mapping(allowed: ["algorithm", "signer_key_file", "signer_key_env", "salt_separator", "rounds", "memory_cost"])
        guard let algorithm = keys["algorithm"] else { throw node.error("missing key 'algorithm' (SCRYPT for Firebase's own hashes)") }
        let name = try algorithm.string()
        guard PasswordHashConfig.algorithms.contains(name) else {
            if name == "STANDARD_SCRYPT" {
                throw algorithm.error("STANDARD_SCRYPT is not supported here (its block size, parallelization and key length have no keys): "
                    + "import such accounts with the Admin SDK's import_users")
            }
            throw algorithm.error("'\(name)' is not one of the API's hash algorithms: " + PasswordHashConfig.algorithms.joined(separator: ", "))
        }
        var config = PasswordHashConfig(algorithm: name)
        config.signerKeyFile = try keys["signer_key_file"]?.secretFilePath()
        // A key is base64 (with '/' and '+' in it, it passes for a path): given here, it would be read as a file's name.
        if let file = config.signerKeyFile, SecretText.isBase64Key(file) {
            throw keys["signer_key_file"]!.error("looks like the key itself (base64, not shown), not the path of its file: put the key in a file "
                + "only you can read and give its path, or set the environment variable signer_key_env names (\(config.signerKeyEnv) by default)")
        }
        config.signerKeyEnv = try keys["signer_key_env"]?.environmentVariableName() ?? config.signerKeyEnv
        if !config.usesSignerKey, let key = keys["signer_key_file"] ?? keys["signer_key_env"] {
            throw key.error("\(name) hashes take no signer key (SCRYPT and the HMAC algorithms do)")
        }
        config.saltSeparator = keys["salt_separator"]?.value { separator in
            let text = try separator.string()
            guard TextScan.isBase64(text) else { throw separator.error("is not base64 (the console shows it so, e.g. Bw==)") }
            return text
        } ?? config.saltSeparator
        config.rounds = keys["rounds"]?.value { try $0.int(minimum: 0, maximum: 120_000) }
        config.memoryCost = keys["memory_cost"]?.value { try $0.int(minimum: 0, maximum: 14) }
        // The digests and PBKDFs are run a number of times: the API needs it (BCRYPT and the HMACs take none). Only the
        // keys not given are named: one given with a bad value is told already.
        if name == "SCRYPT" {
            let missing = ["rounds", "memory_cost"].filter { keys[$0] == nil }
            if !missing.isEmpty { node.tell("SCRYPT needs \(missing.joined(separator: " and ")) (the console's Password hash parameters)") }
        } else if name != "BCRYPT", !name.hasPrefix("HMAC_"), keys["rounds"] == nil {
            node.tell("\(name) needs rounds (how many times the hash was applied)")
        }
        return config
    }

    /// A list of paths, each holding `{uid}` (without it, every account would delete the same data).
    private static func templates(_ node: ConfigNode?, in parent: ConfigNode, _ check: (String) -> String?) throws -> [String] {
        guard let node else { throw parent.error("missing key 'paths' (a list of paths with {uid})") }
        let items = try node.list()
        guard !items.isEmpty else { throw node.error("the list of paths is empty") }
        return items.compactMap { item in
            item.value { item in
                let path = try item.string()
                guard path.contains(DataPath.placeholder) else {
                    throw item.error("'\(path)' has no {uid}: every selected account would delete the same data")
                }
                // The state store keeps per-path counts as "path: n; path: n".
                if path.contains("; ") { throw item.error("'\(path)': idpipe does not take '; ' in a data path") }
                if let problem = check(path) { throw item.error("'\(path)': \(problem)") }
                return path
            }
        }
    }

    private static func decodeFirestorePaths(_ node: ConfigNode) throws -> FirestorePaths {
        let keys = try node.mapping(allowed: ["database", "mode", "paths"])
        var config = FirestorePaths()
        config.database = keys["database"]?.value { node in
            let id = try node.string()
            guard !id.isEmpty, !id.contains("/") else { throw node.error("a database id has no '/'") }
            return id
        } ?? config.database
        config.mode = keys["mode"]?.value { try $0.oneOf(FirestoreDeleteMode.self) } ?? .shallow
        config.paths = try templates(keys["paths"], in: node) { path in
            if path.hasPrefix("/") || path.hasSuffix("/") { return "a Firestore path has no leading or trailing '/' (users/{uid})" }
            if path.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) { return "a segment is empty" }
            return nil
        }
        return config
    }

    private static func decodeDatabasePaths(_ node: ConfigNode) throws -> DatabasePaths {
        let keys = try node.mapping(allowed: ["url", "paths"])
        guard let urlNode = keys["url"] else { throw node.error("missing key 'url' (https://<instance>.firebaseio.com)") }
        // (The paths are read whatever the url's problem.)
        let url = urlNode.value { urlNode in
            let url = try urlNode.string()
            guard DataPath.databaseInstance(url: url) != nil else {
                throw urlNode.error("'\(url)' is neither https://<instance>.firebaseio.com nor https://<instance>.<region>.firebasedatabase.app")
            }
            return url
        } ?? ""
        let instance = DataPath.databaseInstance(url: url) ?? ""
        let paths = try templates(keys["paths"], in: node) { path in
            if !path.hasPrefix("/") { return "a database path starts at the root with '/' (/users/{uid})" }
            if path == "/" || path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) { return "a segment is empty" }
            if path.hasSuffix(".json") { return "give the path without .json" }
            return nil
        }
        var trimmed = url
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        return DatabasePaths(url: trimmed, instance: instance, paths: paths)
    }

    private static func decodeStoragePaths(_ node: ConfigNode) throws -> StoragePaths {
        let keys = try node.mapping(allowed: ["paths"])
        let paths = try templates(keys["paths"], in: node) { path in
            guard let slash = path.firstIndex(of: "/"), slash != path.startIndex else { return "a storage path is bucket/prefix (my-app.appspot.com/users/{uid}/)" }
            if path[slash...].count < 2 { return "the prefix after the bucket is empty" }
            if path[..<slash].contains(DataPath.placeholder) { return "{uid} belongs in the prefix, not in the bucket name" }
            if path.hasSuffix(DataPath.placeholder) {
                return "a prefix ending in {uid} also matches every account whose uid starts with this one (users/abc matches users/abcd/…): end it with '/' for a folder"
            }
            return nil
        }
        return StoragePaths(paths: paths)
    }

    private static func decodeGuards(_ node: ConfigNode) throws -> GuardsConfig {
        let keys = try node.mapping(allowed: ["max_deletions", "max_deletion_share"])
        var guards = GuardsConfig()
        guards.maxDeletions = keys["max_deletions"]?.value { try $0.int() }
        guards.maxDeletionShare = keys["max_deletion_share"]?.value { share in
            let value = try share.double()
            guard value >= 0 && value <= 1 else { throw share.error("a share is between 0 and 1 (0.05 is 5 %)") }
            return value
        }
        return guards
    }

    private static func decodeReport(_ node: ConfigNode) throws -> ReportConfig {
        let keys = try node.mapping(allowed: ["reveal_personal_data", "list_limit"])
        var report = ReportConfig()
        report.revealPersonalData = keys["reveal_personal_data"]?.value { try $0.bool() } ?? false
        report.listLimit = keys["list_limit"]?.value { try $0.int() } ?? report.listLimit
        return report
    }

    private static func decodeApply(_ node: ConfigNode) throws -> ApplyConfig {
        let keys = try node.mapping(allowed: ["unattended", "accounts_in_flight"])
        var apply = ApplyConfig()
        apply.unattended = keys["unattended"]?.value { try $0.bool() } ?? false
        apply.accountsInFlight = keys["accounts_in_flight"]?.value { try $0.int(minimum: 1) } ?? apply.accountsInFlight
        return apply
    }

    private static func decodeOutput(_ node: ConfigNode) throws -> OutputConfig {
        let keys = try node.mapping(allowed: ["import_json", "allow_duplicate_emails"])
        guard let item = keys["import_json"] else {
            if let allow = keys["allow_duplicate_emails"] {
                throw allow.error("concerns the import file, which the pipeline does not write (no output.import_json)")
            }
            return OutputConfig()
        }
        let name = item.value { item in
            // Written in the plan's output folder: a path was joined to it (`out//tmp/x.json`) and the plan failed at its end.
            let name = try item.string()
            guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                throw item.error("'\(name)' is not a file name: the import file is written in the plan's output folder (--out)")
            }
            // `firebase auth:import` takes the format from the extension: JSON written as `x.csv` would be read as CSV.
            guard name.lowercased().hasSuffix(".json") else {
                throw item.error("'\(name)' does not end in .json: the import file is JSON, and firebase auth:import reads a file by its extension")
            }
            // The plan's and apply's JSON reports are written in the same folder (plan refused it; validate said valid).
            guard !OutputConfig.reportFileNames.contains(name) else {
                throw item.error("'\(name)' is the name of a report the run writes in the same folder (\(OutputConfig.reportFileNames.joined(separator: ", "))): "
                    + "choose another name")
            }
            return name
        }
        return OutputConfig(importJSON: name ?? "", allowDuplicateEmails: keys["allow_duplicate_emails"]?.value { try $0.bool() } ?? false)
    }
}

extension YamlError {
    /// The line (from 1) libyaml stopped at, when it says.
    var problemLine: Int? {
        switch self {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark.line
        default: nil
        }
    }
}
