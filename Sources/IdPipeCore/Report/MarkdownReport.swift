/// The report a reviewer reads before anything is changed.
public struct MarkdownReport {
    public let source: any ReportSource
    public let masking: Masking
    public let listLimit: Int

    public init(source: any ReportSource, masking: Masking, listLimit: Int) {
        self.source = source
        self.masking = masking
        self.listLimit = listLimit
    }

    public func render(into out: inout some TextOutputStream) throws {
        let run = try source.run()
        let tally = try source.tally()
        let applied = try source.applySummary()
        let totals = try source.counts()
        if applied != nil {
            // Named for the stage, as the plan's is: "run" is also the command that plans and applies in one go.
            out.write("# idpipe apply: \(Self.escaped(run.pipelineName))\n\n")
            // An apply going on, or stopped before its end, has not applied the plan: "Applied" read as done.
            if let applied, applied.open > 0 {
                out.write("Applied in part: \(applied.open) action\(applied.open == 1 ? " is" : "s are") still open (apply is going on, or stopped "
                    + "before its end: `idpipe status` says which); the outcomes so far are what the services answered. ")
            } else {
                out.write("Applied: the outcomes are what the services answered. ")
            }
        } else {
            out.write("# idpipe plan: \(Self.escaped(run.pipelineName))\n\n")
            out.write("Dry run: nothing was changed. ")
        }
        out.write(masking.reveal ? "Personal data is shown (--reveal-personal-data, or report.reveal_personal_data in the pipeline).\n\n"
            : "Personal data is masked; `--reveal-personal-data` shows it.\n\n")
        table(&out, ["", ""], [
            ["Pipeline", "\(Self.code(run.pipelinePath)) (sha256 \(run.pipelineSHA256.prefix(12)))"],
            ["Input", "\(Self.code(run.sourcePath)) (\(run.sourceFormat), \(run.sourceSize) bytes, sha256 \(run.sourceSHA256.map { String($0.prefix(12)) } ?? "not finished"))"],
        ] + (run.sourceAssumptions.map { [["Input read with", Self.escaped($0)]] } ?? []) + [
            ["As of", Timestamp.formatRFC3339(run.asOf)],
            ["Planned by", Self.escaped(run.plannedBy)],
            ["Status", run.status.rawValue + (run.applyStop.map { " (last apply stopped: \(Self.escaped($0)))" } ?? "")],
        ] + guardsRow(run, tally))
        if let verdict = run.guardVerdict {
            out.write("\n**Stopped by a guard:** \(Self.escaped(verdict)). Nothing may be applied from this plan. To go on, raise the guard in the "
                + "pipeline (or narrow its selection) and plan again into a new state store.\n")
        }
        if run.status == .planning {
            out.write("\n**Incomplete:** the plan stopped before the end of its input (interrupted, or still running); the counts and "
                + "lists below cover only the accounts read so far. "
                + (run.resumesHere ? "`idpipe resume` finishes it.\n" : "It was started by \(Self.escaped(run.plannedBy)); only that idpipe finishes it.\n"))
        }

        section(&out, "Summary")
        table(&out, ["accounts", "count"], [
            ["read", "\(tally["accounts.read"])"],
            ["processed", "\(tally["accounts.processed"])"],
            ["quarantined (not processed)", "\(tally["accounts.quarantined"])"],
            ["disabled", "\(tally["accounts.disabled"])"],
            ["with no exported provider", "\(tally["accounts.no-providers"])"],
        ])
        if let unmatched = run.unmatchedSideInputIds {
            // A scheduled cleanup's list of requests keeps those it carried out: their accounts are gone from later exports.
            out.write("\n**Side-input ids (and protected uids) that match no processed account** (an id not in the export, a "
                + "quarantined account, or a mistyped id; a deletion request's account may have been deleted by an earlier run): "
                + "their rows change nothing.\n\n")
            let first = run.unmatchedSideInputIdsFirst ?? [:]
            table(&out, ["side input", "ids", "the first of them"], unmatched.sorted { $0.key < $1.key }.map { role, count in
                let named = first[role] ?? []
                // An id that looks like an address or a number (a file keyed by email) is masked as one.
                let shown = role == PlanRunner.storedTokensRole ? "(not named: the file holds tokens, which a mixed-up line puts in its uid)"
                    : firstIds(named, of: count)
                return ["`\(role == PlanRunner.protectUidsRole ? role : "inputs." + role)`", "\(count)", shown]
            })
        }
        if let count = run.deletionRequestsOfQuarantined, count > 0 {
            let named = run.deletionRequestsOfQuarantinedFirst ?? []
            out.write("\n**\(count) deletion \(count == 1 ? "request names an account" : "requests name accounts") whose \(count == 1 ? "row" : "rows") "
                + "the plan quarantined** (among the ids above; see Quarantine): not acted on until "
                + "\(count == 1 ? "that row is" : "those rows are") fixed at the source: "
                + firstIds(named, of: count) + ".\n")
        }
        if let later = run.deletionRequestsAfterAsOf, later > 0 {
            out.write("\n**\(later) deletion \(later == 1 ? "request is" : "requests are") dated after the plan's time** "
                + "(\(Timestamp.formatRFC3339(run.asOf))), and not honoured: a clock or time zone is off, or the plan was made "
                + "as of an earlier day. A plan made later honours them.\n")
        }
        let odd = tally[OddTimes.accountsKey]
        if odd > 0 {
            let parts = OddTimes.keys.compactMap { _, key, said in tally[key] == 0 ? nil : "\(tally[key]) \(said)" }
            out.write("\n**\(odd) \(odd == 1 ? "account has times" : "accounts have times") that cannot be right**, by more than a minute "
                + "(\(parts.joined(separator: ", ")); the plan's time is \(Timestamp.formatRFC3339(run.asOf))): a clock, time zone or time unit "
                + "is off at the source, or the plan was made as of an earlier day. \(odd == 1 ? "It is" : "They are") processed "
                + "with \(odd == 1 ? "its" : "their") times as they are (`select.inactive_for_days` reads them so); plan.json counts "
                + "\(odd == 1 ? "it" : "them") (`accounts.odd-times`, `times.…`).\n")
        }
        if tally.inputEndsEarly {
            out.write("\n**The input ends early** (truncated?): the export may hold accounts that were not read. See the Quarantine section.\n")
        }

        section(&out, "Providers")
        table(&out, ["provider", "linked accounts"], ProviderID.reported.compactMap { id in
            let count = tally["providers.\(id)"]
            return count == 0 ? nil : ["`\(id)`", "\(count)"]
        })

        if tally["relay.relayAddress"] + tally["relay.appleRealEmail"] + tally["relay.appleNoEmail"] + tally["relay.notApple"] > 0 {
            section(&out, "Private relay")
            table(&out, ["class", "accounts"], RelayClass.allCases.map { ["\($0.label)", "\(tally["relay.\($0.name)"])"] }
                + [["relay accounts needing consent review", "\(tally["relay.consent-review"])"]])
            try accountList(&out, totals, .consentReview, title: "Relay accounts linked to identifying data without recorded consent",
                            columns: ["uid", "email", "linked data", "providers", "source"]) { account, _ in
                escapedCells(masking.accountId(account.uid), masking.email(account.email), account.consentReview ?? "", account.providers, "\(account.file):\(account.line)")
            }
        }

        let names = tally.group("names.")
        if !names.isEmpty {
            section(&out, "Display names")
            table(&out, ["outcome", "accounts"], names.map { [$0.0.replacingFirst("fill.", "fill from ").replacingFirst("no-source.", "no source: "), "\($0.1)"] })
            // The new name is the value of the account's name update.
            try accountList(&out, totals, .nameFill, title: "Names to fill", columns: ["uid", "new name", "source", "email"]) { account, actions in
                escapedCells(masking.accountId(account.uid), masking.name(actions.first { $0.kind == ActionKind.updateName.rawValue }?.value),
                             account.nameOutcome ?? "", masking.email(account.email))
            }
        }

        importSection(&out, tally, run)
        let imported = try source.importSummary(limit: listLimit)
        if let imported { importedSection(&out, imported, run) }

        let selection = tally.group("selection.")
        let waiting = run.deletionRequestsInGrace ?? 0
        if !selection.isEmpty || totals[.requestNotActedOn, default: 0] > 0 || waiting > 0 {
            section(&out, "Selection")
            if selection.isEmpty {
                out.write("No rule selected an account.\n")
            } else {
                table(&out, ["", "accounts"], selection.map { [$0.0.replacingFirst("reason.", "matched: "), "\($0.1)"] })
            }
            if waiting > 0 {
                out.write("\n**\(waiting) deletion \(waiting == 1 ? "request" : "requests") of `inputs.deletion_requests` \(waiting == 1 ? "is" : "are") within the grace period** "
                    + "(`select.deletion_grace_days`), and not acted on yet: a plan made once \(waiting == 1 ? "it is" : "they are") "
                    + "old enough acts on \(waiting == 1 ? "it" : "them").")
                // Said only when the list below has another count: the same number needs no explaining.
                if waiting != totals[.requestNotActedOn, default: 0] {
                    out.write(" The count is of the input's requests: those of processed accounts are in the list below, the others "
                        + "name no processed account (the side-input ids that match none, under Summary).")
                }
                out.write("\n")
            }
            try accountList(&out, totals, .requestNotActedOn, title: "Deletion requested, not acted on",
                            columns: ["uid", "email", "request", "why", "providers"]) { account, _ in
                escapedCells(masking.accountId(account.uid), masking.email(account.email), account.deletionRequest ?? "", account.selectionDetail ?? "",
                             account.providers)
            }
            try accountList(&out, totals, .protected, title: "Protected accounts (never deleted)", columns: ["uid", "email", "why"]) { account, _ in
                escapedCells(masking.accountId(account.uid), masking.email(account.email), account.selectionDetail ?? "")
            }
            // Counted only, a deletion request the provider filter set aside was carried out by no one and named nowhere.
            try accountList(&out, totals, .filteredByProvider, title: "Matched, but left out by select.providers (not acted on)",
                            columns: ["uid", "email", "matched", "request", "providers"]) { account, _ in
                escapedCells(masking.accountId(account.uid), masking.email(account.email), account.selectionDetail ?? "", account.deletionRequest ?? "", account.providers)
            }
        }

        let actions = tally.group("actions.")
        if !actions.isEmpty {
            section(&out, applied == nil ? "Planned actions" : "Planned actions (as reviewed)")
            var rows: [[String]] = []
            for kind in ActionKind.allCases {
                let counts = ActionState.allCases.map { tally["actions.\(kind.rawValue).\($0.rawValue)"] }
                if counts.allSatisfy({ $0 == 0 }) { continue }
                rows.append(["`\(kind.rawValue)`", kind.service] + counts.map { "\($0)" })
            }
            table(&out, ["action", "service"] + ActionState.allCases.map(\.rawValue), rows)
            let notPossible = tally.group("not-possible.")
            if !notPossible.isEmpty {
                out.write("\n### Not possible, and why\n\n")
                table(&out, ["action", "reason", "accounts"], notPossible.map { key, value in
                    let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
                    return ["`\(parts[0])`", parts.count > 1 ? parts[1] : "", "\(value)"]
                })
            }
            // The rule that lets them through, before approval: report.md said it only after apply.
            let unrevoked = tally["accounts.deletions-planned-unrevoked"]
            if unrevoked > 0 {
                out.write("\n**\(unrevoked) \(unrevoked == 1 ? "account is" : "accounts are") deleted although a login of \(unrevoked == 1 ? "its" : "theirs") "
                    + "cannot be revoked**: `stages.delete.when_not_revocable: delete` lets \(unrevoked == 1 ? "its deletion" : "their deletions") through "
                    + "(why each revocation is not possible: above; the accounts: below, each with its actions).\n")
            }
            // What becomes of each: a kept account (a login that cannot be revoked, data out of reach) looked like the others.
            try accountList(&out, totals, .selected, title: "Accounts selected for cleanup",
                            columns: ["uid", "email", "why", "request", "providers", "actions"]) { account, actions in
                escapedCells(masking.accountId(account.uid), masking.email(account.email), account.selectionDetail ?? "", account.deletionRequest ?? "",
                             account.providers) + [Self.actionsInBrief(actions)]
            }
        }

        let data = try source.dataSummary(limit: listLimit)
        if let data { dataSection(&out, data, applied: applied != nil, stoppedByGuard: run.guardVerdict != nil, uncountable: run.dataUncountable) }

        if let applied { outcomes(&out, applied) }

        let repairs = tally.group("repairs.")
        if !repairs.isEmpty {
            section(&out, "Normalization repairs")
            table(&out, ["repair", "accounts"], Repair.allCases.compactMap { repair in
                let count = tally["repairs.\(repair.key)"]
                return count == 0 ? nil : [repair.label, "\(count)"]
            })
            // Kept only in a migration: elsewhere a repair serves matching, and the accounts stay as they are.
            try accountList(&out, totals, .repaired, title: "Accounts written to the import file with repaired values",
                            columns: ["uid", "repairs", "email", "phone", "display name", "source"]) { account, _ in
                escapedCells(masking.accountId(account.uid), account.repairs.all.map(\.label).joined(separator: "; "), masking.email(account.email),
                             masking.phone(account.phone), masking.name(account.displayName), "\(account.file):\(account.line)")
            }
        }

        section(&out, "Quarantine")
        let quarantined = tally.quarantineRows
        if quarantined == 0 {
            out.write("No input row was quarantined.\n")
        } else {
            out.write("These rows were not processed; fix them at the source and run again. quarantine.csv lists every one, a line per problem.\n\n")
            var rows: [[String]] = []
            var listed = 0
            // A row with several problems has a line for each.
            try source.quarantine(limit: listLimit) { _, entry in
                listed += 1
                for issue in entry.issues {
                    rows.append([Self.escaped("\(entry.position.file):\(entry.position.line)"), Self.escaped(masking.quarantinedId(entry.localId) ?? ""),
                                 Self.code(issue.field), Self.escaped(masking.quotedValues(in: issue.reason, field: issue.field))])
                }
            }
            table(&out, ["where", "uid", "field", "reason"], rows)
            if quarantined > listed { out.write("\n… and \(quarantined - listed) more in quarantine.csv and the JSON report.\n") }
        }
        if applied != nil || data?.traffic.isEmpty == false { timing(&out, applied, importResent: imported?.resentRequests ?? 0, counting: data?.traffic ?? []) }
    }

    /// The guards beside what the plan deletes, when the pipeline has any: a reviewer saw them only when one tripped.
    private func guardsRow(_ run: RunRecord, _ tally: Tally) -> [[String]] {
        let given = [run.guardLimits, run.maxDeletions.map { "--max-deletions \($0) (kept with the run)" }].compactMap { $0 }
        guard !given.isEmpty else { return [] }
        let limits = given.joined(separator: ", ")
        let deletions = tally["accounts.deletions-planned"], accounts = tally["accounts.processed"]
        let share = accounts > 0 ? " (\(Guards.percent(deletions, of: accounts)) %)" : ""
        return [["Guards", "\(limits); this plan deletes the data or the account of \(deletions) of \(accounts) accounts\(share)"]]
    }

    /// The blast radius of the configured data paths, counted by reading them during the dry run, and (after apply)
    /// what was deleted.
    /// `uncountable`: the run's `dataUncountable`, nil in a store planned before it was kept (which cannot tell the two
    /// reasons for counts not made apart, and names both).
    private func dataSection(_ out: inout some TextOutputStream, _ data: DataSummary, applied: Bool, stoppedByGuard: Bool, uncountable: Bool?) {
        section(&out, "Data to delete")
        let uncounted = data.kinds.reduce(0) { $0 + $1.uncounted }
        // Said first: the counts below are all zero, and a resume would not count them either.
        let saidFirst = uncountable == true && uncounted > 0 && !stoppedByGuard
        if saidFirst {
            out.write("**Not counted: the pipeline has no `services.google`** to read the configured paths with (nor to delete them), so "
                + "the \(uncounted) path deletions below are not counted and apply refuses this plan. Add `services.google` to the "
                + "pipeline file and plan again into a new state store.\n\n")
        } else {
            out.write("Counted during the dry run by reading each configured path of each account whose deletion is planned (nothing was changed by counting).")
            out.write(applied ? " \"deleted\" is what apply removed; a repeat after an interruption counts only what was left.\n\n" : "\n\n")
        }
        var header = ["action", "what", "accounts", "counted", "would delete"]
        if applied { header += ["done", "deleted"] }
        table(&out, header, data.kinds.map { kind in
            // "would delete 0" of paths not counted read as nothing to delete.
            var row = ["`\(kind.kind.rawValue)`", kind.unit, "\(kind.planned)", "\(kind.counted)",
                       "\(kind.wouldDelete)" + (kind.uncounted > 0 ? " (\(kind.uncounted) not counted)" : "")]
            if applied { row += ["\(kind.done)", "\(kind.deleted)"] }
            return row
        })
        // A table of no rows (nothing counted yet) read as a report cut short.
        let perPath = data.kinds.flatMap { kind in kind.perPath.map { ["`\(kind.kind.rawValue)`", Self.code($0.template), "\($0.count) \(kind.unit)"] } }
        if !perPath.isEmpty {
            out.write("\n")
            table(&out, ["action", "path", "would delete"], perPath)
        }
        if uncounted > 0 && stoppedByGuard {
            out.write("\n**\(uncounted) path deletions are not counted**: a guard stopped the plan before counting, and it cannot be "
                + "applied (see above)" + (uncountable == true ? "; the pipeline has no `services.google` to count them with either" : "") + ".\n")
        } else if uncounted > 0 && !saidFirst {
            let why = uncountable == nil ? "the pipeline has no `services.google` to read them with, or counting was interrupted"
                : "counting was interrupted, or gave up"
            out.write("\n**\(uncounted) path deletions are not counted yet**: \(why) (`idpipe resume` finishes it). Apply refuses until "
                + "they are counted.\n")
        }
        if !data.notCounted.isEmpty {
            out.write("\n### Not counted, and why\n\n")
            out.write("Until apply starts, counts that gave up on passing faults (5xx, timeouts, throttling) are tried again by the next "
                + "`idpipe plan` or `idpipe resume` of this state; a refused one (permission denied) is not.\n\n")
            table(&out, ["reason", "actions"], data.notCounted.map { [Self.escaped($0.reason), "\($0.count)"] })
        }
        if !data.largest.isEmpty {
            out.write("\n### The accounts with the most data\n\n")
            table(&out, ["uid", "action", "would delete", "per path"], data.largest.map {
                [Self.escaped(masking.accountId($0.uid)), "`\($0.kind.rawValue)`", "\($0.count)", Self.escaped($0.detail)]
            })
        }
    }

    /// What apply did: states per action, the rule behind each deletion, and why anything did not happen.
    private func outcomes(_ out: inout some TextOutputStream, _ summary: ApplySummary) {
        section(&out, "Outcomes")
        if summary.open > 0 {
            out.write("**\(summary.open) actions are still open** (planned, or sent without a recorded answer): `idpipe resume` continues.\n\n")
        }
        // A migration that only imports: a table of no rows read as a report cut short.
        if summary.kinds.isEmpty {
            out.write("No account had an action of its own (a name to update, a token to revoke, data or an account to delete).\n")
        } else {
            table(&out, ["action", "service"] + ActionState.allCases.map(\.rawValue), summary.kinds.map { figures in
                ["`\(figures.kind.rawValue)`", figures.kind.service] + ActionState.allCases.map { "\(figures.states[$0] ?? 0)" }
            })
        }
        if !summary.policies.isEmpty {
            out.write("\n### Deletions, and the rule that let each through or held it back\n\n")
            table(&out, ["action", "state", "rule", "accounts"], summary.policies.map { ["`\($0.kind)`", $0.state, Self.escaped($0.policy), "\($0.count)"] })
        }
        if !summary.reasons.isEmpty {
            out.write("\n### Failed, not possible and blocked, and why\n\n")
            let shown = summary.reasons.prefix(listLimit)
            table(&out, ["action", "state", "reason", "accounts"], shown.map { ["`\($0.kind)`", $0.state, Self.escaped($0.reason), "\($0.count)"] })
            if summary.reasons.count > shown.count { out.write("\n… and \(summary.reasons.count - shown.count) more reasons in the JSON report.\n") }
        }
    }

    /// Durations, rates and traffic: last, because they differ from one run of the same plan to the next.
    private func timing(_ out: inout some TextOutputStream, _ applied: ApplySummary?, importResent: Int, counting: [ServiceTraffic]) {
        section(&out, "Run timing and traffic")
        if let applied { applyTiming(&out, applied, importResent: importResent) }
        if !counting.isEmpty {
            out.write(applied == nil ? "" : "\n")
            out.write("Counting the data to delete (the dry run's reads, over every plan or resume that counted):\n\n")
            traffic(&out, counting)
        }
    }

    private func applyTiming(_ out: inout some TextOutputStream, _ summary: ApplySummary, importResent: Int) {
        out.write("Applied in \(FixedPoint.text(summary.seconds, places: 1)) s over \(summary.sessions.count) session(s). ")
        out.write(summary.resent == 0 ? "No action had to be sent again" : "\(summary.resent) actions were in flight when a session stopped and were sent again (each is idempotent)")
        out.write(importResent == 0 ? ".\n\n" : "; \(importResent) import request\(importResent == 1 ? " was" : "s were") (see Import).\n\n")
        table(&out, ["session", "started", "seconds", "sent again", "outcome", "by"], summary.sessions.enumerated().map { index, session in
            ["\(index + 1) (`\(session.command)`)", Timestamp.formatRFC3339(session.startedAt),
             FixedPoint.text(Double((session.endedAt ?? session.startedAt) - session.startedAt) / 1000, places: 1), "\(session.resent)",
             Self.escaped(session.outcome ?? "did not end (killed)"), Self.escaped(session.ranBy)]
        })
        out.write("\n")
        let rates = summary.kinds.compactMap { figures in
            figures.done == 0 ? nil : ["`\(figures.kind.rawValue)`", "\(figures.done)", FixedPoint.text(figures.busySeconds, places: 1),
                                       figures.ratePerSecond.map { FixedPoint.text($0, places: 1) } ?? "–"]
        }
        // (None in an apply that only imports: a table of no rows read as a report cut short.)
        if !rates.isEmpty { table(&out, ["action", "done", "first send to last answer (s)", "done per second"], rates) }
        if !summary.traffic.isEmpty {
            out.write("\n")
            traffic(&out, summary.traffic)
        }
    }

    private func traffic(_ out: inout some TextOutputStream, _ entries: [ServiceTraffic]) {
        table(&out, ["service", "requests", "retries", "throttled", "failed"], entries.map {
            [$0.service, "\($0.requests)", "\($0.retries)", "\($0.throttled)", "\($0.failures)"]
        })
    }

    private func accountList(_ out: inout some TextOutputStream, _ totals: [AccountList: Int], _ list: AccountList, title: String, columns: [String],
                             _ row: (ReportAccount, [ReportAction]) -> [String]) throws {
        let total = totals[list] ?? 0
        guard total > 0 else { return }
        out.write("\n### \(title) (\(total))\n\n")
        var rows: [[String]] = []
        try source.accountsWithActions(list, limit: listLimit) { rows.append(row($0, $1)) }
        // With --list-limit 0, the count alone (a table of no row was its header).
        if !rows.isEmpty { table(&out, columns, rows) }
        // The ledger has lines only for accounts with actions (an account whose request waits has none).
        let elsewhere = [.requestNotActedOn, .consentReview, .repaired].contains(list) ? "the JSON report" : "the JSON report and the CSV ledger"
        if total > rows.count { out.write("\(rows.isEmpty ? "" : "\n")… \(rows.isEmpty ? "all" : "and \(total - rows.count) more"): see \(elsewhere).\n") }
    }

    /// An account's actions in step order, each with its state and reason; actions next to each other in the same state
    /// for the same reason share one entry ("`delete-data`, `delete-account` blocked (…)").
    static func actionsInBrief(_ actions: [ReportAction]) -> String {
        var entries: [String] = []
        var start = actions.startIndex
        while start < actions.endIndex {
            let first = actions[start]
            var end = start + 1
            while end < actions.endIndex && actions[end].state == first.state && actions[end].reason == first.reason { end += 1 }
            entries.append(actions[start..<end].map { "`\($0.kind)`" }.joined(separator: ", ") + " \(first.state)"
                + (first.reason.map { " (\(Self.escaped($0)))" } ?? ""))
            start = end
        }
        return entries.joined(separator: "; ")
    }

    /// What the migration's import file holds, and what in it `firebase auth:import` would refuse.
    private func importSection(_ out: inout some TextOutputStream, _ tally: Tally, _ run: RunRecord) {
        let written = tally["import.accounts"]
        guard written > 0 else { return }
        section(&out, "Import file")
        out.write("\(written) accounts are in the import file (the auth:export JSON layout, cleaned, with the names filled above).\n")
        if let digest = run.importFileSHA256 {
            out.write("\n`idpipe apply` imports it (`stages.import`) into \(run.importTarget.map(Self.escaped) ?? "the project of `services.google`") through `accounts:batchCreate`, "
                + "with the names filled above in the accounts (no name update is sent on its own). It imports the file as reviewed "
                + "(sha256 \(digest.prefix(12)), \(run.importFileSize ?? 0) bytes), and refuses it if it has changed. "
                + (run.importExistingAccounts == ImportConfig.ExistingAccounts.keep.rawValue
                    ? "An account whose uid is in the project already is kept as the project has it, not imported, and listed; so "
                        + "is one whose email (unless `output.allow_duplicate_emails`), phone number or federated sign-in another account "
                        + "of the project has, which the import would make a second account for (`stages.import.existing_accounts`: "
                        + "each request's accounts are looked up first).\n"
                    : "An account whose uid is in the project already is overwritten with the file's; nothing is looked up, so one "
                        + "whose email, phone number or federated sign-in another account of the project has is imported beside it "
                        + "(`stages.import.existing_accounts: keep` leaves it out).\n"))
            let hashes = tally["import.password-hashes"]
            if hashes > 0 {
                out.write("\n\(hashes) of them carry a password hash: the import sends them with `stages.import.password_hash`, "
                    + "and apply refuses to start without it.\n")
            }
        }
        let leftOut = tally.group("import.left-out.")
        if !leftOut.isEmpty {
            let count = leftOut.reduce(0) { $0 + $1.1 }
            out.write("\n**\(count) account\(count == 1 ? " is" : "s are") left out of it**, as each shares an email, a phone number or a "
                + "federated sign-in with an account before it in the file: Identity Toolkit's import does not check this and would "
                + "create both (or, asked to check, refuse the whole request). They are quarantined, with the field they share; "
                + "merge or correct them in the source.\n\n")
            table(&out, ["what it shares", "accounts"], leftOut.map { ["`\($0.0)`", "\($0.1)"] })
        }
        let invalid = tally["import.api-refused"]
        if invalid > 0 {
            out.write("\n**\(invalid) account\(invalid == 1 ? " is" : "s are") left out of it** for a value Identity Toolkit refuses: their import "
                + "would fail, through the CLI or the API. They are quarantined, with the field; correct them in the source.\n\n")
            table(&out, ["what the API refuses", "accounts"], tally.group("import.api-refuses.").map { ["\($0.0)", "\($0.1)"] })
        }
        let refused = tally["import.cli-refused"]
        guard refused > 0 else { return }
        // Apply imports it through the API, which takes them: the CLI's limits are only a note then.
        if run.importFileSHA256 != nil {
            out.write("\n\(refused) of them would stop `firebase auth:import` (Apple links or MFA enrolments); the API, which apply uses, "
                + "takes them.\n")
            return
        }
        out.write("\n**\(refused) of them stop `firebase auth:import`**, which refuses the whole file at the first: its JSON import takes "
            + "only " + ProviderID.importedByFirebaseCLI.map { "`\($0)`" }.joined(separator: ", ") + " links and no `mfaInfo` "
            + "(firebase-tools `accountImporter.ts`). They are kept, as leaving them out would lose the Apple links and MFA "
            + "enrolments; import such a file through the Identity Toolkit API (`accounts:batchCreate`, as the Admin SDKs' "
            + "`import_users` do), whose schema has fields for both. Its accounts take this file's fields as they are but one: "
            + "`lastSignedInAt` is `lastLoginAt` there (the API refuses the export's name). Send at most 1000 accounts a request; "
            + "accounts with a `passwordHash` need the project's password hash parameters in the request (`hashAlgorithm`, "
            + "`signerKey`, `saltSeparator`, `rounds`, `memoryCost`: the console's Authentication > Users > Password hash parameters).\n\n")
        table(&out, ["what the CLI refuses", "accounts"], tally.group("import.cli-refuses.").map { ["`\($0.0)`", "\($0.1)"] })
    }

    /// What apply's import did (`stages.import`): requests, accounts imported, and the accounts the API refused.
    private func importedSection(_ out: inout some TextOutputStream, _ summary: ImportSummary, _ run: RunRecord) {
        section(&out, "Import")
        out.write("The import file is sent to `accounts:batchCreate` in \(summary.totalRequests) request\(summary.totalRequests == 1 ? "" : "s")"
            + (run.importTarget.map { ", into \(Self.escaped($0))" } ?? "") + ".\n\n")
        table(&out, ["", "count"], [
            ["accounts imported", "\(summary.imported)"],
            ["accounts refused by the API (not imported)", "\(summary.refused)"],
        ] + (summary.keptExisting > 0 ? [["accounts kept as the project has them, their uid there already (not imported)", "\(summary.keptExisting)"]] : [])
          + (summary.clashing > 0 ? [["accounts sharing their \(summary.clashingWhat) with another account of the project (not imported)",
                                      "\(summary.clashing)"]] : []) + [
            ["accounts still to send", "\(summary.users - summary.usersInDoneRequests)"],
            ["requests done", "\(summary.requests[.done] ?? 0)"],
            ["requests sent, answer not recorded (sent again by the next apply)", "\(summary.requests[.sent] ?? 0)"],
            ["requests not sent yet", "\(summary.requests[.planned] ?? 0)"],
        ])
        if summary.resentRequests > 0 {
            out.write("\n\(summary.resentRequests) request\(summary.resentRequests == 1 ? " was" : "s were") sent again after a stop that lost the "
                + "answer; an import overwrites the accounts it made, with the same values.\n")
        }
        if summary.keptExisting > 0 {
            let count = summary.keptExisting
            out.write("\n**\(count) account\(count == 1 ? " was" : "s were") kept as the project has \(count == 1 ? "it" : "them")**, not imported: "
                + "the project holds an account of \(count == 1 ? "its uid" : "their uids") already (`stages.import.existing_accounts: keep`). "
                + "Compare \(count == 1 ? "it" : "them") with the file's; a new plan with `existing_accounts: overwrite` replaces "
                + "\(count == 1 ? "it" : "them")\(count > summary.firstKept.count ? " (the first \(summary.firstKept.count) here)" : ""):\n\n")
            table(&out, ["uid"], summary.firstKept.map { [Self.escaped(masking.accountId($0.uid))] })
        }
        if summary.clashing > 0 {
            let count = summary.clashing
            let listed = count > summary.firstClashing.count ? " (the first \(summary.firstClashing.count) here)" : ""
            out.write("\n**\(count) account\(count == 1 ? " was" : "s were") not imported** because another account of the project has "
                + "\(count == 1 ? "its" : "their") \(summary.clashingWhat): the import would have made a second account for "
                + "\(count == 1 ? "that person" : "each person"), which `accounts:batchCreate` does not check. Merge each with the "
                + "project's account, or change it in the source and import it with a new plan\(listed):\n\n")
            table(&out, ["uid", "shares", "with the project's account"], summary.firstClashing.map {
                [Self.escaped(masking.accountId($0.uid)), "`\($0.clash?.field ?? "")`", Self.escaped(masking.accountId($0.clash?.projectUid ?? ""))]
            })
        }
        guard summary.refused > 0 else { return }
        out.write("\n**\(summary.refused) account\(summary.refused == 1 ? " was" : "s were") refused by the API** and not imported; correct "
            + "\(summary.refused == 1 ? "it" : "them") in the source, and import \(summary.refused == 1 ? "it" : "them") with a new plan\(summary.refused > summary.firstRefused.count ? " (the first \(summary.firstRefused.count) here)" : ""):\n\n")
        table(&out, ["uid", "why"], summary.firstRefused.map { [Self.escaped(masking.accountId($0.uid)), Self.escaped($0.message)] })
    }

    /// The first ids of a list of `count`, as code, masked as ids that read as an address or a number; `…` for the rest.
    /// An id that may be a secret is not named (`PlanRunner.Unmatched.mayBeSecret`), which is said when none is.
    private func firstIds(_ named: [String], of count: Int) -> String {
        if named.isEmpty && count > 0 { return "(not named: each may be a secret rather than an id, as too long for a uid, shaped as a token, or a stored token)" }
        return named.map { Self.code(masking.quarantinedId($0) ?? $0) }.joined(separator: " ") + (count > named.count ? " …" : "")
    }

    private func section(_ out: inout some TextOutputStream, _ title: String) {
        out.write("\n## \(title)\n\n")
    }

    private func table(_ out: inout some TextOutputStream, _ header: [String], _ rows: [[String]]) {
        out.write("| " + header.joined(separator: " | ") + " |\n")
        out.write("|" + header.map { _ in "---" }.joined(separator: "|") + "|\n")
        for row in rows { out.write("| " + row.map(Self.cell).joined(separator: " | ") + " |\n") }
    }

    /// A table cell: `|` escaped, a line end a space (by scalar: "\r\n" is one Character).
    static func cell(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "|": result.append(contentsOf: "\\|".unicodeScalars)
            case "\n", "\r": result.append(" ")
            default: result.append(scalar)
            }
        }
        return String(result)
    }

    /// Cells of text from outside idpipe, each `escaped`.
    private func escapedCells(_ values: String...) -> [String] { values.map(Self.escaped) }
}

extension String {
    func replacingFirst(_ prefix: String, _ replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}
