/// Runs the offline stages on one account: normalize → detect relay → plan names → select → plan actions.
/// Pure and `Sendable`: workers call it concurrently.
public struct AccountProcessor: Sendable {
    public let pipeline: PipelineDefinition
    public let sideInputs: SideInputs
    public let selector: Selector
    public let planner: Planner
    /// What the fast path (`plain`) needs from the pipeline.
    let rules: PlainRules
    /// How the normalize stage reads the source (`AccountNormalizer.Options(source:)`).
    let normalizing: AccountNormalizer.Options

    public init(pipeline: PipelineDefinition, sideInputs: SideInputs, asOf: Int64) {
        self.pipeline = pipeline
        self.sideInputs = sideInputs
        self.selector = Selector(config: pipeline.selection, asOf: asOf, extraProtectedIds: sideInputs.protectedIds)
        self.planner = Planner(stages: pipeline.stages, asOf: asOf)
        self.rules = PlainRules(pipeline)
        normalizing = AccountNormalizer.Options(source: pipeline.source)
    }

    /// Takes the account over (`consuming`): it is normalized in place, not copied.
    public func process(_ raw: consuming Account, position: SourcePosition, sequence: Int64) -> RecordOutcome {
        var idHash: UInt64 = 0
        return process(raw, position: position, sequence: sequence, idHash: &idHash)
    }

    /// The same, and sets `idHash` to the normalized id's `IdHash`: computed once for the side-input lookups, the plan
    /// checks duplicates with it too. `normalized`: the fast path found every value already as the normalize stage
    /// leaves it (`FastPathVerdict.normalized`), so the stage is skipped (debug builds check that it would change nothing).
    func process(_ raw: consuming Account, position: SourcePosition, sequence: Int64, idHash: inout UInt64, normalized: Bool = false) -> RecordOutcome {
        let rawId = raw.localId
        var account = raw
        var repairs = RepairSet()
        if pipeline.stages.normalize {
            if normalized {
                assert(Self.normalizes(to: account, normalizing.secondsMayPassForMilliseconds), "the fast path took \(account.localId) as normalized; the normalizer changes or rejects it")
            } else if let issue = AccountNormalizer.normalize(&account, repairs: &repairs, secondsMayPassForMilliseconds: normalizing.secondsMayPassForMilliseconds,
                                                                      phones: normalizing.phones) {
                return .quarantined(QuarantineEntry(position: position, localId: rawId.isEmpty ? nil : rawId, issue: issue))
            }
        } else if rawId.isEmpty {
            return .quarantined(QuarantineEntry(position: position, localId: nil, field: "localId", reason: "is missing or empty"))
        }
        let uid = account.localId
        idHash = IdHash.of(uid)
        let legacy = sideInputs.legacyNames[uid, hash: idHash]
        let relay = pipeline.stages.detectRelay ? RelayDetection.classify(account, consentRecorded: legacy?.consent ?? false) : nil
        let isRelay = relay?.relayClass == .relayAddress || (relay == nil && RelayDetection.hasRelayAddress(account))
        let deletionRequest = sideInputs.deletionRequests[uid, hash: idHash]
        let selection = selector.select(account, deletionRequest: deletionRequest)

        var actions: [PlannedAction] = []
        var name: NameOutcome?
        if selection.isSelected {
            actions = planner.cleanup(for: account, credentials: sideInputs.credentials[uid, hash: idHash])
        }
        // Names are filled only for accounts that stay: those not selected, and those selected for less than deletion
        // (a pipeline that only revokes, or a deletion blocked: kept as its revocation is not possible).
        if let sources = pipeline.stages.backfillNames, !actions.contains(where: { $0.kind == .deleteAccount && $0.state == .planned }) {
            var outcome = NameBackfill.plan(account, isRelay: isRelay, legacy: legacy, sources: sources)
            // Its owner asked for its deletion (the request later than the plan's time, or the deletion blocked): no
            // name of theirs is written into it.
            if case .fill = outcome, deletionRequest != nil { outcome = .noSource(Self.deletionRequestedNoName) }
            name = outcome
            if case .fill(let update) = outcome {
                actions.append(PlannedAction(kind: .updateName, state: .planned, detail: "name from \(update.source)", value: update.name))
            }
        }
        let oddTimes = OddTimes(createdAt: account.createdAt, lastSignedInAt: account.lastSignedInAt, asOf: selector.asOf)
        return .account(AccountOutcome(
            sequence: sequence, position: position, account: consume account, repairs: repairs, relay: relay, name: name,
            selection: selection, deletionRequest: deletionRequest, actions: actions, oddTimes: oddTimes))
    }

    /// Why an account whose owner asked for its deletion gets no name.
    public static let deletionRequestedNoName = "its owner asked for its deletion"

    /// Whether the normalize stage leaves `account` as it is, byte for byte, with no repair and no issue. (`==` on the
    /// accounts would take another spelling of the same characters, é as one scalar or two, for the same.)
    static func normalizes(to account: Account, _ guessesUnit: Bool = true) -> Bool {
        var copy = account
        var repairs = RepairSet()
        return AccountNormalizer.normalize(&copy, repairs: &repairs, secondsMayPassForMilliseconds: guessesUnit) == nil && repairs.isEmpty
            && Array(String(reflecting: copy).utf8) == Array(String(reflecting: account).utf8)
    }
}
