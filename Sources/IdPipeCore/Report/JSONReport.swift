/// The report for machines: every noteworthy account and every quarantined row, then the run and every total.
/// Written as a stream, in input order, with personal data masked unless revealed.
public struct JSONReport {
    public let source: any ReportSource
    public let masking: Masking

    public init(source: any ReportSource, masking: Masking) {
        self.source = source
        self.masking = masking
    }

    public func render(into out: inout some TextOutputStream) throws {
        out.write(Self.opening)
        // Accounts are appended to one buffer that goes out in pieces of 64 KiB: a `write` and a few strings per
        // account cost more than the text itself.
        var buffer = ReportBuffer()
        var scratch: [UInt8] = []
        var count = 0
        try source.accountsWithActions(nil, limit: nil) { account, actions in
            Self.appendEntry(account, actions, index: count, masking: masking, to: &buffer.bytes, scratch: &scratch)
            count += 1
            buffer.flush(whenFull: &out)
        }
        buffer.flush(&out)
        try renderTail(accounts: count, into: &out)
    }

    /// The report up to the opening bracket of the accounts array, the same for every run: a plan writes the accounts
    /// as it goes into the file that becomes the report, and nothing is copied at the end. What is known only once the
    /// accounts are read (the run's outcome, the totals, what apply did) follows them.
    public static let opening = "{\n  \"accounts\": ["

    /// The rest after `accounts` entries of the array: its closing bracket, the quarantine, the run, the totals, what
    /// apply did, the data counted, the closing brace.
    public func renderTail(accounts: Int, into out: inout some TextOutputStream) throws {
        out.write(accounts == 0 ? "],\n  \"quarantine\": [" : "\n  ],\n  \"quarantine\": [")
        var first = true
        try source.quarantine(limit: nil) { _, entry in
            out.write(first ? "\n    " : ",\n    ")
            first = false
            out.write("{\"file\": \(JSONText.string(entry.position.file)), \"line\": \(entry.position.line), \"uid\": \(JSONText.string(masking.quarantinedId(entry.localId))), "
                + "\"field\": \(JSONText.string(entry.field)), \"reason\": \(JSONText.string(masking.quotedValues(in: entry.reason, field: entry.field))), "
                + "\"otherIssues\": [" + entry.otherIssues.map { issue in
                    "{\"field\": \(JSONText.string(issue.field)), \"reason\": \(JSONText.string(masking.quotedValues(in: issue.reason, field: issue.field)))}"
                }.joined(separator: ", ") + "]}")
        }
        out.write(first ? "],\n" : "\n  ],\n")
        let run = try source.run()
        let tally = try source.tally()
        out.write("  \"run\": {")
        let fields: [(String, String?)] = [
            ("pipeline", run.pipelineName), ("pipelinePath", run.pipelinePath), ("pipelineSha256", run.pipelineSHA256),
            ("input", run.sourcePath), ("inputFormat", run.sourceFormat), ("inputSha256", run.sourceSHA256),
            ("asOf", Timestamp.formatRFC3339(run.asOf)), ("status", run.status.rawValue), ("guard", run.guardVerdict),
            ("idpipeVersion", run.idpipeVersion), ("sourceAssumptions", run.sourceAssumptions),
        ]
        out.write(fields.map { "\"\($0.0)\": \(JSONText.string($0.1))" }.joined(separator: ", "))
        out.write(", \"inputBytes\": \(run.sourceSize), \"personalDataMasked\": \(!masking.reveal)")
        if let unmatched = run.unmatchedSideInputIds {
            out.write(", \"unmatchedSideInputIds\": {" + unmatched.sorted { $0.key < $1.key }.map { "\(JSONText.string($0.key)): \($0.value)" }
                .joined(separator: ", ") + "}")
        }
        if let first = run.unmatchedSideInputIdsFirst {
            out.write(", \"unmatchedSideInputIdsFirst\": {" + first.sorted { $0.key < $1.key }
                .map { "\(JSONText.string($0.key)): " + idList($0.value) }
                .joined(separator: ", ") + "}")
        }
        if let later = run.deletionRequestsAfterAsOf { out.write(", \"deletionRequestsAfterAsOf\": \(later)") }
        if let waiting = run.deletionRequestsInGrace { out.write(", \"deletionRequestsInGrace\": \(waiting)") }
        if let count = run.deletionRequestsOfQuarantined {
            out.write(", \"deletionRequestsOfQuarantined\": {\"count\": \(count), \"first\": " + idList(run.deletionRequestsOfQuarantinedFirst ?? []) + "}")
        }
        out.write("},\n  \"totals\": {")
        out.write(tally.counts.sorted { $0.key < $1.key }.map { "\(JSONText.string($0.key)): \($0.value)" }.joined(separator: ", "))
        out.write("}")
        if let summary = try source.applySummary() { out.write(",\n  \"apply\": " + Self.apply(summary)) }
        if let data = try source.dataSummary(limit: 0) { out.write(",\n  \"data\": " + Self.data(data)) }
        if let imported = try source.importSummary(limit: Int.max) {
            out.write(",\n  \"import\": " + importJSON(imported, existingAccounts: run.importExistingAccounts))
        }
        out.write("\n}\n")
    }
}

extension JSONReport {
    /// A list of ids, masked as ids that read as an address or a number.
    func idList(_ ids: [String]) -> String {
        "[" + ids.map { JSONText.string(masking.quarantinedId($0) ?? $0) }.joined(separator: ", ") + "]"
    }

    /// Apply's import: requests by state, accounts, and every account the API refused.
    /// `existingAccounts`: the plan's `stages.import.existing_accounts` (nil for a plan before it was kept: overwrite).
    func importJSON(_ summary: ImportSummary, existingAccounts: String?) -> String {
        let states = ActionState.allCases.compactMap { state in summary.requests[state].map { "\(JSONText.string(state.rawValue)): \($0)" } }
        let refused = summary.firstRefused.map { "{\"uid\": \(JSONText.string(masking.accountId($0.uid))), \"message\": \(JSONText.string($0.message))}" }
        let kept = summary.firstKept.map { JSONText.string(masking.accountId($0.uid)) }
        let clashing = summary.firstClashing.map {
            "{\"uid\": \(JSONText.string(masking.accountId($0.uid))), \"field\": \(JSONText.string($0.clash?.field ?? "")), "
                + "\"projectUid\": \(JSONText.string(masking.accountId($0.clash?.projectUid ?? "")))}"
        }
        return "{\"requests\": {\(states.joined(separator: ", "))}, \"accounts\": \(summary.users), \"imported\": \(summary.imported), "
            + "\"resentRequests\": \(summary.resentRequests), \"refused\": [\(refused.joined(separator: ", "))], "
            + "\"existingAccounts\": \(JSONText.string(existingAccounts ?? "overwrite")), "
            + "\"keptExisting\": {\"count\": \(summary.keptExisting), \"uids\": [\(kept.joined(separator: ", "))]}, "
            + "\"clashing\": {\"count\": \(summary.clashing), \"accounts\": [\(clashing.joined(separator: ", "))]}}"
    }

    /// Entry `index` of the `accounts` array: what separates it from the one before, and the account's line.
    static func appendEntry(_ account: ReportAccount, _ actions: [ReportAction], index: Int, masking: Masking, to out: inout some ByteOutput,
                            scratch: inout [UInt8]) {
        out.put(index == 0 ? "\n    " : ",\n    ")
        appendAccount(account, actions, masking: masking, to: &out, scratch: &scratch)
    }

    /// One account with its actions, as one line of the `accounts` array. `scratch` holds each masked value on its
    /// way to the line (reused, so masking allocates nothing per account).
    static func appendAccount(_ account: ReportAccount, _ actions: [ReportAction], masking: Masking, to out: inout some ByteOutput,
                              scratch: inout [UInt8]) {
        out.put("{\"uid\": ")
        JSONText.append(masking.accountId(account.uid), to: &out)
        out.put(", \"source\": \"")
        JSONText.appendEscaped(account.file, to: &out)
        out.append(UInt8(ascii: ":"))
        out.putDecimal(account.line)
        out.put("\", \"email\": ")
        appendMasked(account.email, masking.email, to: &out, scratch: &scratch)
        out.put(", \"displayName\": ")
        appendMasked(account.displayName, masking.name, to: &out, scratch: &scratch)
        out.put(", \"phoneNumber\": ")
        appendMasked(account.phone, masking.phone, to: &out, scratch: &scratch)
        out.put(", \"providers\": [")
        // Provider ids are stored separated by single spaces (a space byte never falls inside a multi-byte character).
        account.providers.withUTF8Bytes { ids in
            var start = 0
            var first = true
            while start < ids.count {
                let end = ids[start...].firstIndex(of: UInt8(ascii: " ")) ?? ids.count
                if end > start {
                    out.put(first ? "\"" : ", \"")
                    first = false
                    JSONText.appendEscaped(UnsafeBufferPointer(rebasing: ids[start..<end]), to: &out)
                    out.append(UInt8(ascii: "\""))
                }
                start = end + 1
            }
        }
        JSONText.member("], \"relay\": ", account.relay, to: &out)
        JSONText.member(", \"consentReview\": ", account.consentReview, to: &out)
        JSONText.member(", \"selection\": ", account.selection, to: &out)
        JSONText.member(", \"selectionDetail\": ", account.selectionDetail, to: &out)
        JSONText.member(", \"deletionRequest\": ", account.deletionRequest, to: &out)
        JSONText.member(", \"name\": ", account.nameOutcome, to: &out)
        // In a migration only (the import file carries the repaired values); empty otherwise.
        out.put(", \"repairs\": [")
        if !account.repairs.isEmpty {
            for (index, repair) in account.repairs.all.enumerated() {
                out.put(index == 0 ? "\"" : ", \"")
                out.put(repair.key)
                out.append(UInt8(ascii: "\""))
            }
        }
        out.put("], \"actions\": [")
        for index in actions.indices {
            let action = actions[index]
            out.put(index == 0 ? "{\"kind\": " : ", {\"kind\": ")
            JSONText.append(action.kind, to: &out)
            JSONText.member(", \"state\": ", action.state, to: &out)
            JSONText.member(", \"detail\": ", action.detail, to: &out)
            JSONText.member(", \"reason\": ", action.reason, to: &out)
            out.put(", \"value\": ")
            appendMasked(action.value, masking.name, to: &out, scratch: &scratch)
            JSONText.member(", \"result\": ", action.result, to: &out)
            JSONText.member(", \"policy\": ", action.policy, to: &out)
            out.put(", \"attempts\": ")
            out.putDecimal(action.attempts)
            if ActionKind.named(action.kind)?.isPathDeletion == true {
                out.put(", \"wouldDelete\": ")
                out.put(action.wouldDelete.map(String.init) ?? "null")
                JSONText.member(", \"counted\": ", action.counted, to: &out)
                out.put(", \"deleted\": ")
                out.put(action.deleted.map(String.init) ?? "null")
            }
            out.put("}")
        }
        out.put("]}")
    }

    /// The masked value as a JSON string, or null.
    private static func appendMasked(_ value: String?, _ mask: (String, inout [UInt8]) -> Void, to out: inout some ByteOutput, scratch: inout [UInt8]) {
        guard let value else { return out.put("null") }
        scratch.removeAll(keepingCapacity: true)
        mask(value, &scratch)
        out.append(UInt8(ascii: "\""))
        JSONText.appendEscaped(scratch, to: &out)
        out.append(UInt8(ascii: "\""))
    }
}

/// Text gathered for a stream as UTF-8 and handed over in pieces of about 64 KiB.
struct ReportBuffer {
    static let pieceBytes = 1 << 16
    var bytes: [UInt8] = []

    init() {
        bytes.reserveCapacity(Self.pieceBytes + (Self.pieceBytes >> 2))
    }

    mutating func flush(whenFull out: inout some TextOutputStream) {
        if bytes.count >= Self.pieceBytes { flush(&out) }
    }

    mutating func flush(_ out: inout some TextOutputStream) {
        guard !bytes.isEmpty else { return }
        if let sink = out as? any ByteSink {
            bytes.withUnsafeBytes { sink.write(bytes: $0) }
        } else {
            out.write(String(decoding: bytes, as: UTF8.self))
        }
        bytes.removeAll(keepingCapacity: true)
    }
}

/// An output that takes UTF-8 as bytes (a file): reports hand it their buffers without making a String of them
/// (which checks the UTF-8 again, 115 MB of it for the JSON report of a million accounts).
public protocol ByteSink: AnyObject {
    func write(bytes: UnsafeRawBufferPointer)
}

/// Where rendered report text goes: an array, or a `ByteWriter`.
public protocol ByteOutput {
    mutating func append(_ byte: UInt8)
    mutating func appendBytes(_ bytes: UnsafeBufferPointer<UInt8>)
}

extension [UInt8]: ByteOutput {
    @inline(__always)
    public mutating func appendBytes(_ bytes: UnsafeBufferPointer<UInt8>) {
        append(contentsOf: bytes)
    }
}

extension ByteOutput {
    @inline(__always)
    public mutating func put(_ text: String) {
        // On the string's own bytes (a literal's, most often; a short one's copied to the stack): through the UTF-8
        // view it cost about 170 instructions.
        text.withUTF8Bytes { appendBytes($0) }
    }

    /// A non-negative integer's decimal digits (a negative one's through `String`).
    @inline(__always)
    mutating func putDecimal(_ value: Int) {
        guard value >= 0 else { return put(String(value)) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var value = value
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(48 + value % 10)
                value /= 10
            } while value > 0
            appendBytes(UnsafeBufferPointer(rebasing: buffer[start...]))
        }
    }
}

/// Text rendered through a pointer into room made ahead: an array's `append(contentsOf:)` costs about a hundred
/// instructions a call, and an account of plan.json took some twenty of them. A class, so that the values holding one
/// share it: one thread writes it, and hands it on to be read.
public final class ByteWriter: ByteOutput, @unchecked Sendable {
    // Unchecked: checked, each access to a property cost a call to the runtime (as many as the appends saved).
    @exclusivity(unchecked) private var base: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) public private(set) var count = 0

    public init(capacity: Int = 1 << 16) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    @inline(__always)
    public func append(_ byte: UInt8) {
        if count == capacity { grow(1) }
        base[count] = byte
        count += 1
    }

    @inline(__always)
    public func appendBytes(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let start = bytes.baseAddress else { return }
        if capacity - count < bytes.count { grow(bytes.count) }
        (base + count).initialize(from: start, count: bytes.count)
        count += bytes.count
    }

    /// The bytes in `range` (within `0..<count`), valid during the call.
    public func withBytes<Result>(_ range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        precondition(range.lowerBound >= 0 && range.upperBound <= count)
        return try body(UnsafeBufferPointer(start: base + range.lowerBound, count: range.count))
    }

    private func grow(_ needed: Int) {
        capacity = max(capacity * 2, count + needed)
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        larger.initialize(from: base, count: count)
        base.deallocate()
        base = larger
    }
}

extension JSONReport {
    static func data(_ summary: DataSummary) -> String {
        let kinds = summary.kinds.map { kind in
            let paths = kind.perPath.map { "{\"path\": \(JSONText.string($0.template)), \"wouldDelete\": \($0.count)}" }
            return "\(JSONText.string(kind.kind.rawValue)): {\"unit\": \(JSONText.string(kind.unit)), \"accounts\": \(kind.planned), \"counted\": \(kind.counted), \"uncounted\": \(kind.uncounted), "
                + "\"wouldDelete\": \(kind.wouldDelete), \"done\": \(kind.done), \"deleted\": \(kind.deleted), \"paths\": [\(paths.joined(separator: ", "))]}"
        }
        let notCounted = summary.notCounted.map { "{\"reason\": \(JSONText.string($0.reason)), \"count\": \($0.count)}" }
        return "{\(kinds.joined(separator: ", ")), \"notCounted\": [\(notCounted.joined(separator: ", "))], \"traffic\": \(traffic(summary.traffic))}"
    }

    /// Requests per service, as a JSON array.
    static func traffic(_ entries: [ServiceTraffic]) -> String {
        "[" + entries.map {
            "{\"service\": \(JSONText.string($0.service)), \"requests\": \($0.requests), \"retries\": \($0.retries), \"throttled\": \($0.throttled), \"failures\": \($0.failures)}"
        }.joined(separator: ", ") + "]"
    }

    static func apply(_ summary: ApplySummary) -> String {
        let outcomes = summary.kinds.map { figures in
            let states = ActionState.allCases.compactMap { state in figures.states[state].map { "\(JSONText.string(state.rawValue)): \($0)" } }
            let rate = figures.ratePerSecond.map { FixedPoint.text($0, places: 2) } ?? "null"
            return "\(JSONText.string(figures.kind.rawValue)): {\(states.joined(separator: ", ")), \"busySeconds\": \(FixedPoint.text(figures.busySeconds, places: 3)), \"donePerSecond\": \(rate)}"
        }
        let policies = summary.policies.map {
            "{\"kind\": \(JSONText.string($0.kind)), \"policy\": \(JSONText.string($0.policy)), \"state\": \(JSONText.string($0.state)), \"count\": \($0.count)}"
        }
        let reasons = summary.reasons.map {
            "{\"kind\": \(JSONText.string($0.kind)), \"state\": \(JSONText.string($0.state)), \"reason\": \(JSONText.string($0.reason)), \"count\": \($0.count)}"
        }
        let sessions = summary.sessions.map {
            "{\"command\": \(JSONText.string($0.command)), \"startedAt\": \(JSONText.string(Timestamp.formatRFC3339($0.startedAt))), "
                + "\"seconds\": \(FixedPoint.text(Double(($0.endedAt ?? $0.startedAt) - $0.startedAt) / 1000, places: 3)), \"resent\": \($0.resent), "
                + "\"outcome\": \(JSONText.string($0.outcome)), \"idpipeVersion\": \(JSONText.string($0.idpipeVersion))}"
        }
        return "{\"outcomes\": {\(outcomes.joined(separator: ", "))}, \"open\": \(summary.open), \"failed\": \(summary.failed), \"resent\": \(summary.resent), "
            + "\"seconds\": \(FixedPoint.text(summary.seconds, places: 3)), \"policies\": [\(policies.joined(separator: ", "))], "
            + "\"reasons\": [\(reasons.joined(separator: ", "))], \"traffic\": \(traffic(summary.traffic)), \"sessions\": [\(sessions.joined(separator: ", "))]}"
    }
}

/// The CSV ledger: one line per planned action per account, for a compliance reviewer to file.
public struct CSVLedger {
    public let source: any ReportSource
    public let masking: Masking

    public init(source: any ReportSource, masking: Masking) {
        self.source = source
        self.masking = masking
    }

    /// `attempts` counts sends; `resent` the sends after an interruption (the answer to the earlier one was never recorded).
    /// `would_delete` is the dry run's count for a path deletion (`counted` has it per path), `deleted` what apply removed.
    public static let header = "sequence,uid,action,service,state,detail,reason,value,result,policy,attempts,resent,would_delete,counted,deleted"

    /// The ledger's first bytes, its header line: a plan writes the lines after it as it goes.
    public static let opening = header + "\n"

    public func render(into out: inout some TextOutputStream) throws {
        out.write(Self.opening)
        var buffer = ReportBuffer()
        var masked: [UInt8] = []
        try source.actions(limit: nil) { action in
            Self.appendLine(action, masking: masking, masked: &masked, to: &buffer.bytes)
            buffer.flush(whenFull: &out)
        }
        buffer.flush(&out)
    }

    /// One line, the fields in the header's order, written in place: building each line's fields as an array of
    /// strings first cost about three times as much as the line.
    static func appendLine(_ action: ReportAction, masking: Masking, masked: inout [UInt8], to out: inout some ByteOutput) {
        append(String(action.sequence), to: &out)
        out.append(UInt8(ascii: ","))
        appendFields(afterSequenceOf: action, masking: masking, masked: &masked, to: &out)
    }

    /// A line's fields after the first (the sequence number), with its newline.
    static func appendFields(afterSequenceOf action: ReportAction, masking: Masking, masked: inout [UInt8], to out: inout some ByteOutput) {
        let comma = UInt8(ascii: ",")
        append(masking.accountId(action.uid), to: &out)
        out.append(comma)
        append(action.kind, to: &out)
        out.append(comma)
        append(ActionKind.named(action.kind)?.service ?? "", to: &out)
        out.append(comma)
        append(action.state, to: &out)
        out.append(comma)
        append(action.detail, to: &out)
        out.append(comma)
        // A service's words: a control character in them would reach the terminal that shows the ledger.
        append(VisibleText.shown(action.reason ?? ""), to: &out)
        out.append(comma)
        if let value = action.value {
            masked.removeAll(keepingCapacity: true)
            masking.name(value, into: &masked)
            masked.withUnsafeBufferPointer { append(bytes: $0, to: &out) }
        }
        out.append(comma)
        append(VisibleText.shown(action.result ?? ""), to: &out)
        out.append(comma)
        append(action.policy ?? "", to: &out)
        out.append(comma)
        append(String(action.attempts), to: &out)
        out.append(comma)
        append(String(action.resent), to: &out)
        out.append(comma)
        append(action.wouldDelete.map(String.init) ?? "", to: &out)
        out.append(comma)
        append(action.counted ?? "", to: &out)
        out.append(comma)
        append(action.deleted.map(String.init) ?? "", to: &out)
        out.append(0x0A)
    }

    static func append(_ field: String, to out: inout some ByteOutput) {
        field.withUTF8Bytes { append(bytes: $0, to: &out) }
    }

    /// RFC 4180 quoting; a leading `=`, `+`, `-` or `@` is prefixed with `'` so spreadsheets do not run it.
    static func append(bytes utf8: UnsafeBufferPointer<UInt8>, to out: inout some ByteOutput) {
        let formula = utf8.first.map { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "@") } ?? false
        let quoted = utf8.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
        if quoted { out.append(UInt8(ascii: "\"")) }
        if formula { out.append(UInt8(ascii: "'")) }
        guard quoted else {
            out.appendBytes(utf8)
            return
        }
        for byte in utf8 {
            out.append(byte)
            if byte == UInt8(ascii: "\"") { out.append(byte) }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// The quarantined input rows as CSV, one line per problem (a row's first problem first), for whoever fixes the source:
/// plan.md lists the first `report.list_limit` rows, and plan.json keeps them among the accounts.
public enum QuarantineCSV {
    /// `problem`: the problem's number within its row (1 for its first), so that rows are counted by `problem == 1`.
    public static let header = "file,line,uid,problem,field,reason"

    public static func render(_ source: any ReportSource, masking: Masking, into out: inout some TextOutputStream) throws {
        out.write(Self.header + "\n")
        var buffer = ReportBuffer()
        let comma = UInt8(ascii: ",")
        try source.quarantine(limit: nil) { _, entry in
            for (index, issue) in entry.issues.enumerated() {
                // For whoever fixes the source: an invisible character in the path, the id, a mapped table's column name
                // or a quoted value shows as its code.
                CSVLedger.append(VisibleText.shown(entry.position.file), to: &buffer.bytes)
                buffer.bytes.append(comma)
                CSVLedger.append(String(entry.position.line), to: &buffer.bytes)
                buffer.bytes.append(comma)
                CSVLedger.append(VisibleText.shown(masking.quarantinedId(entry.localId) ?? ""), to: &buffer.bytes)
                buffer.bytes.append(comma)
                CSVLedger.append(String(index + 1), to: &buffer.bytes)
                buffer.bytes.append(comma)
                CSVLedger.append(VisibleText.shown(issue.field), to: &buffer.bytes)
                buffer.bytes.append(comma)
                CSVLedger.append(VisibleText.shown(masking.quotedValues(in: issue.reason, field: issue.field)), to: &buffer.bytes)
                buffer.bytes.append(0x0A)
            }
            buffer.flush(whenFull: &out)
        }
        buffer.flush(&out)
    }
}

/// JSON string literals, escaped by hand so the output is the same byte for byte on every run.
public enum JSONText {
    /// The byte a one-letter escape stands for (`\n` → 0x0A, `\/` → `/`); nil for `u` (four hex digits follow) and for
    /// a letter JSON has no escape for. For the readers of JSON text (`JSONCursor`, the connectors' `JSONValueParser`).
    public static func unescaped(_ letter: UInt8) -> UInt8? {
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): letter
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }

    public static func string(_ value: String?) -> String {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the literal (or `null`); a value with nothing to escape is copied as it is.
    public static func append(_ value: String?, to out: inout some ByteOutput) {
        guard let value else {
            out.put("null")
            return
        }
        out.append(UInt8(ascii: "\""))
        appendEscaped(value, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// `append` for a byte array, made here for the other modules: the generic one, called from another module, runs
    /// unspecialized (through witness tables for each byte), which cost the connectors' request bodies 3× the time.
    public static func append(_ value: String, to out: inout [UInt8]) {
        append(Optional(value), to: &out)
    }

    /// A string's UTF-8 escaped (without the quotes), read on its own storage when it has one.
    static func appendEscaped(_ text: String, to out: inout some ByteOutput) {
        // Not `withContiguousStorageIfAvailable` alone: a short string (up to 15 bytes: most values here) has no
        // storage of its own, and was copied into a new array each time.
        text.withUTF8Bytes { appendEscaped($0, to: &out) }
    }

    /// Appends `key` (the text before the value, such as `, "name": `) and the value's literal.
    @inline(__always)
    static func member(_ key: String, _ value: String?, to out: inout some ByteOutput) {
        out.put(key)
        append(value, to: &out)
    }

    /// Appends UTF-8 text escaped for the inside of a JSON string (without the quotes).
    public static func appendEscaped(_ utf8: some Collection<UInt8>, to out: inout some ByteOutput) {
        guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            if utf8.withContiguousStorageIfAvailable({ out.appendBytes($0) }) == nil { for byte in utf8 { out.append(byte) } }
            return
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.put("\\\"")
            case UInt8(ascii: "\\"): out.put("\\\\")
            case 0x0A: out.put("\\n")
            case 0x0D: out.put("\\r")
            case 0x09: out.put("\\t")
            case 0..<0x20:
                let hex = String(byte, radix: 16)
                out.put("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default: out.append(byte)
            }
        }
    }
}

/// A number with a fixed count of decimals (`12.50`), the same on every platform, without Foundation.
public enum FixedPoint {
    public static func text(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = Int64((abs(value) * scale).rounded())
        let unit = Int64(scale)
        let fraction = String(scaled % unit)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        guard places > 0 else { return sign + String(scaled) }
        return sign + String(scaled / unit) + "." + String(repeating: "0", count: places - fraction.count) + fraction
    }
}
