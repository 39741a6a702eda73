/// The report for machines: the run, every total, every noteworthy account and every quarantined row.
/// Written as a stream, in input order, with personal data masked unless revealed.
public struct JSONReport {
    public let source: any ReportSource
    public let masking: Masking

    public init(source: any ReportSource, masking: Masking) {
        self.source = source
        self.masking = masking
    }

    public func render(into out: inout some TextOutputStream) throws {
        let run = try source.run()
        let tally = try source.tally()
        out.write("{\n  \"run\": {")
        let fields: [(String, String?)] = [
            ("pipeline", run.pipelineName), ("pipelinePath", run.pipelinePath), ("pipelineSha256", run.pipelineSHA256),
            ("input", run.sourcePath), ("inputFormat", run.sourceFormat), ("inputSha256", run.sourceSHA256),
            ("asOf", Timestamp.formatRFC3339(run.asOf)), ("status", run.status.rawValue), ("guard", run.guardVerdict),
        ]
        out.write(fields.map { "\"\($0.0)\": \(JSONText.string($0.1))" }.joined(separator: ", "))
        out.write(", \"inputBytes\": \(run.sourceSize), \"personalDataMasked\": \(!masking.reveal)},\n  \"totals\": {")
        out.write(tally.counts.sorted { $0.key < $1.key }.map { "\(JSONText.string($0.key)): \($0.value)" }.joined(separator: ", "))
        out.write("},\n")
        if let summary = try source.applySummary() { out.write("  \"apply\": " + Self.apply(summary) + ",\n") }
        if let data = try source.dataSummary(limit: 0) { out.write("  \"data\": " + Self.data(data) + ",\n") }
        out.write("  \"accounts\": [")
        var first = true
        try source.accountsWithActions { account, actions in
            out.write(first ? "\n    " : ",\n    ")
            first = false
            var parts: [String] = [
                "\"uid\": \(JSONText.string(account.uid))", "\"source\": \(JSONText.string("\(account.file):\(account.line)"))",
                "\"email\": \(JSONText.string(account.email.map { masking.email($0) }))",
                "\"displayName\": \(JSONText.string(account.displayName.map { masking.name($0) }))",
                "\"phoneNumber\": \(JSONText.string(account.phone.map { masking.phone($0) }))",
                "\"providers\": [\(account.providers.split(separator: " ").map { JSONText.string(String($0)) }.joined(separator: ", "))]",
                "\"relay\": \(JSONText.string(account.relay))", "\"consentReview\": \(JSONText.string(account.consentReview))",
                "\"selection\": \(JSONText.string(account.selection))", "\"selectionDetail\": \(JSONText.string(account.selectionDetail))",
                "\"deletionRequest\": \(JSONText.string(account.deletionRequest))", "\"name\": \(JSONText.string(account.nameOutcome))",
            ]
            parts.append("\"actions\": [" + actions.map { action in
                "{\"kind\": \(JSONText.string(action.kind)), \"state\": \(JSONText.string(action.state)), \"detail\": \(JSONText.string(action.detail)), "
                    + "\"reason\": \(JSONText.string(action.reason)), \"value\": \(JSONText.string(action.value.map { masking.name($0) })), "
                    + "\"result\": \(JSONText.string(action.result)), \"policy\": \(JSONText.string(action.policy)), \"attempts\": \(action.attempts)"
                    + (ActionKind(rawValue: action.kind)?.isPathDeletion == true
                        ? ", \"wouldDelete\": \(action.wouldDelete.map(String.init) ?? "null"), \"counted\": \(JSONText.string(action.counted)), "
                            + "\"deleted\": \(action.deleted.map(String.init) ?? "null")" : "")
                    + "}"
            }.joined(separator: ", ") + "]")
            out.write("{" + parts.joined(separator: ", ") + "}")
        }
        out.write(first ? "],\n  \"quarantine\": [" : "\n  ],\n  \"quarantine\": [")
        first = true
        try source.quarantine(limit: nil) { _, entry in
            out.write(first ? "\n    " : ",\n    ")
            first = false
            out.write("{\"file\": \(JSONText.string(entry.position.file)), \"line\": \(entry.position.line), \"uid\": \(JSONText.string(entry.localId)), "
                + "\"field\": \(JSONText.string(entry.field)), \"reason\": \(JSONText.string(masking.quotedValues(in: entry.reason, field: entry.field)))}")
        }
        out.write(first ? "]\n}\n" : "\n  ]\n}\n")
    }
}

extension JSONReport {
    static func data(_ summary: DataSummary) -> String {
        let kinds = summary.kinds.map { kind in
            let paths = kind.perPath.map { "{\"path\": \(JSONText.string($0.template)), \"wouldDelete\": \($0.count)}" }
            return "\(JSONText.string(kind.kind.rawValue)): {\"unit\": \(JSONText.string(kind.unit)), \"accounts\": \(kind.planned), \"counted\": \(kind.counted), "
                + "\"wouldDelete\": \(kind.wouldDelete), \"done\": \(kind.done), \"deleted\": \(kind.deleted), \"paths\": [\(paths.joined(separator: ", "))]}"
        }
        let notCounted = summary.notCounted.map { "{\"reason\": \(JSONText.string($0.reason)), \"count\": \($0.count)}" }
        return "{\(kinds.joined(separator: ", ")), \"notCounted\": [\(notCounted.joined(separator: ", "))]}"
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
        let traffic = summary.traffic.map {
            "{\"service\": \(JSONText.string($0.service)), \"requests\": \($0.requests), \"retries\": \($0.retries), \"throttled\": \($0.throttled), \"failures\": \($0.failures)}"
        }
        let sessions = summary.sessions.map {
            "{\"command\": \(JSONText.string($0.command)), \"startedAt\": \(JSONText.string(Timestamp.formatRFC3339($0.startedAt))), "
                + "\"seconds\": \(FixedPoint.text(Double(($0.endedAt ?? $0.startedAt) - $0.startedAt) / 1000, places: 3)), \"resent\": \($0.resent), "
                + "\"outcome\": \(JSONText.string($0.outcome))}"
        }
        return "{\"outcomes\": {\(outcomes.joined(separator: ", "))}, \"open\": \(summary.open), \"failed\": \(summary.failed), \"resent\": \(summary.resent), "
            + "\"seconds\": \(FixedPoint.text(summary.seconds, places: 3)), \"policies\": [\(policies.joined(separator: ", "))], "
            + "\"reasons\": [\(reasons.joined(separator: ", "))], \"traffic\": [\(traffic.joined(separator: ", "))], \"sessions\": [\(sessions.joined(separator: ", "))]}"
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

    public func render(into out: inout some TextOutputStream) throws {
        out.write(Self.header + "\n")
        try source.actions(limit: nil) { action in
            let service = ActionKind(rawValue: action.kind)?.service ?? ""
            let fields = ["\(action.sequence)", action.uid, action.kind, service, action.state, action.detail, action.reason ?? "",
                          action.value.map { masking.name($0) } ?? "", action.result ?? "", action.policy ?? "", "\(action.attempts)", "\(action.resent)",
                          action.wouldDelete.map(String.init) ?? "", action.counted ?? "", action.deleted.map(String.init) ?? ""]
            out.write(fields.map(Self.escape).joined(separator: ",") + "\n")
        }
    }

    /// RFC 4180 quoting; a leading `=`, `+`, `-` or `@` is prefixed with `'` so spreadsheets do not run it.
    static func escape(_ field: String) -> String {
        var text = field
        if let first = text.first, "=+-@".contains(first) { text = "'" + text }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingAll("\"", with: "\"\"") + "\""
    }
}

/// JSON string literals, escaped by hand so the output is the same byte for byte on every run.
public enum JSONText {
    public static func string(_ value: String?) -> String {
        guard let value else { return "null" }
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + value + "\""
        }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
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
