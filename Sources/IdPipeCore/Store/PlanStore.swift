/// The run a state store holds: which pipeline, which inputs, at which moment.
public struct RunRecord: Sendable, Equatable, Codable {
    public var pipelineName: String
    public var pipelinePath: String
    public var pipelineSHA256: String
    /// The moment the plan is computed for (epoch ms): inactivity and code freshness are judged at it.
    public var asOf: Int64
    public var createdAt: Int64
    public var status: RunStatus
    public var sourcePath: String
    public var sourceFormat: String
    /// The SHA-256 of the whole input, known when planning has finished.
    public var sourceSHA256: String?
    public var sourceSize: Int64
    /// SHA-256 of each side input by role, checked by resume and apply.
    public var sideInputSHA256: [String: String]
    public var guardVerdict: String?
    /// Set by `run --yes` (or an unattended pipeline): `resume` applies the plan once it is complete.
    public var applyRequested: Bool?
    /// Why the last `apply` stopped before the end (a guard, a configuration error, an interruption).
    public var applyStop: String?
    /// The last `--max-deletions` an apply of this run was given: later sessions keep to it unless given another.
    public var maxDeletions: Int?
    /// How many ids of each side input are no processed account's, by role (`deletion_requests`: 2); nil when all match.
    public var unmatchedSideInputIds: [String: Int]?
    /// The first of those ids (`PlanRunner.Unmatched.named`), in the side input's order, by role; nil in a store
    /// planned before they were kept.
    public var unmatchedSideInputIdsFirst: [String: [String]]?
    /// The folder the plan ran in: the pipeline and input paths above are as given there, and resume and apply, run
    /// from anywhere, go there to read them again (nil in a store planned before it was kept).
    public var workingDirectory: String?
    /// Where the plan wrote its reports (an absolute path): resume and apply write theirs there unless told otherwise.
    public var reportFolder: String?
    /// The pipeline's `report.list_limit`: `idpipe report` writes the plan's Markdown with it (nil in a store planned
    /// before it was kept; the default then).
    public var listLimit: Int?
    /// The pipeline's guards in words (`GuardsConfig.limits`), for the report's reviewer; nil when it has none, or in a
    /// store planned before they were kept.
    public var guardLimits: String?
    /// Whether the run's reports show personal data: the pipeline's `report.reveal_personal_data`, or
    /// `--reveal-personal-data` given to the plan or to an apply (nil in a store planned before it was kept: masked then,
    /// unless asked). Every later report of the run follows it (`showsPersonalData`).
    public var revealPersonalData: Bool?
    /// How many deletion requests are dated after `asOf`: not honoured (`Selector.select`), and the reports say so.
    public var deletionRequestsAfterAsOf: Int?
    /// The deletion requests whose id the plan quarantined a row of, and no processed account has (a bad email, say):
    /// not acted on until the row is fixed (`PlanRunner.requestsOfQuarantined`), how many and the first of them.
    public var deletionRequestsOfQuarantined: Int?
    public var deletionRequestsOfQuarantinedFirst: [String]?
    /// How many deletion requests are within the grace period `select.deletion_grace_days` at `asOf`: not acted on yet.
    public var deletionRequestsInGrace: Int?
    /// What names the run's import file while it is written (`NAME.TOKEN.partial`): its creation time and a random
    /// part, so that two plans started in one millisecond keep apart (nil in a store planned before it was kept: the
    /// creation time then).
    public var importFileToken: String?
    /// The finished import file's SHA-256 and size, when apply imports it (`stages.import`): apply refuses a file that
    /// changed since the plan (nil otherwise, or in a store planned before they were kept).
    public var importFileSHA256: String?
    public var importFileSize: Int64?
    /// The SHA-256 of the signer key the import's first session sent (a fingerprint, as for tokens): a later session
    /// with another key is refused, which would leave the accounts' hashes under two keys.
    public var importSignerKeySHA256: String?
    /// Where the import goes, in words (`project P, tenant T`), for the reviewer (nil without `stages.import`).
    public var importTarget: String?
    /// `stages.import.existing_accounts` (nil without `stages.import`, or in a store planned before it was kept).
    public var importExistingAccounts: String?
    /// What the plan took for granted about the source's values (`SourceConfig.assumptions`): a time without a zone read in
    /// one, a phone number completed with a country code; nil when nothing (or in a store planned before it was kept).
    public var sourceAssumptions: String?
    /// True when the pipeline deletes data paths and has no `services.google` to count them with: the reports say to
    /// add it rather than to resume (nil otherwise, or in a store planned before it was kept).
    public var dataUncountable: Bool?
    /// The idpipe that started the plan (`IdPipeVersion.text`; nil in a store planned before it was kept). Another
    /// version does not resume it: the batches it read would be planned by one and the rest by the other.
    public var idpipeVersion: String?

    /// The token the run's import file is staged under: `importFileToken`, or the creation time for a store made before.
    public var stagingToken: String { importFileToken ?? "\(createdAt)" }

    public init(pipelineName: String, pipelinePath: String, pipelineSHA256: String, asOf: Int64, createdAt: Int64,
                status: RunStatus, sourcePath: String, sourceFormat: String, sourceSHA256: String? = nil, sourceSize: Int64,
                sideInputSHA256: [String: String], guardVerdict: String? = nil) {
        self.pipelineName = pipelineName
        self.pipelinePath = pipelinePath
        self.pipelineSHA256 = pipelineSHA256
        self.asOf = asOf
        self.createdAt = createdAt
        self.status = status
        self.sourcePath = sourcePath
        self.sourceFormat = sourceFormat
        self.sourceSHA256 = sourceSHA256
        self.sourceSize = sourceSize
        self.sideInputSHA256 = sideInputSHA256
        self.guardVerdict = guardVerdict
        idpipeVersion = IdPipeVersion.text
    }

    /// Whether this idpipe may resume the run's plan when it is interrupted: only the version that started it does
    /// (`PlanError.interruptedByOtherVersion`).
    public var resumesHere: Bool { idpipeVersion == IdPipeVersion.text }

    /// Which idpipe planned the run, in words: `idpipe 0.4.0`.
    public var plannedBy: String {
        idpipeVersion.map { "idpipe \($0)" } ?? "an idpipe before 0.4.0 (which did not record its version)"
    }

    /// Whether a report of this run shows personal data, `asked` being `--reveal-personal-data` now: a resumed plan, an
    /// apply and `idpipe report` show what the plan's reports showed (only `report --mask-personal-data` masks a copy).
    public func showsPersonalData(asked: Bool) -> Bool { asked || revealPersonalData == true }
}

public enum RunStatus: String, Sendable, Codable {
    /// Reading the input; a checkpoint marks how far.
    case planning
    /// The plan is complete and can be reviewed.
    case planned
    /// A guard stopped the plan (too many deletions).
    case stoppedByGuard = "stopped-by-guard"
    /// `apply` has started; `resume` continues it.
    case applying
    /// Every action of the plan reached a final state.
    case applied
}

/// Where a resumed plan starts from: the input position and everything counted up to it.
public struct PlanCheckpoint: Sendable {
    public var input: InputCheckpoint
    /// SHA-256 of the input's bytes before `input.offset`, to prove the input did not change.
    public var inputPrefixSHA256: String
    public var tally: Tally
    public var nextSequence: Int64
    /// Length of the import file written so far (it is cut back to this on resume).
    public var importFileLength: Int64

    public init(input: InputCheckpoint, inputPrefixSHA256: String, tally: Tally, nextSequence: Int64, importFileLength: Int64) {
        self.input = input
        self.inputPrefixSHA256 = inputPrefixSHA256
        self.tally = tally
        self.nextSequence = nextSequence
        self.importFileLength = importFileLength
    }
}

/// An account the store keeps, as it keeps it: its row, and its actions in the order they are carried out. Made by the
/// worker that processed the account, once, for the store and the reports alike.
public struct KeptAccount: Sendable {
    public var row: ReportAccount
    public var actions: [ReportAction]
    /// Each action's step (`ActionKind.order`).
    public var steps: [Int]

    public init(_ outcome: borrowing AccountOutcome, withRepairs: Bool = false) {
        row = ReportAccount(outcome, withRepairs: withRepairs)
        let uid = row.uid
        let planned = outcome.actionsInStepOrder
        actions = planned.map { ReportAction($0, sequence: outcome.sequence, uid: uid) }
        steps = planned.map(\.kind.order)
    }

    /// What a kept account moved out of its part leaves in its place (made once).
    static let placeholder = KeptAccount(AccountOutcome.empty)

    /// Moves the account out, leaving the placeholder: the caller owns it, and reads it with no copy.
    public mutating func take() -> KeptAccount {
        var account = Self.placeholder
        swap(&account, &self)
        return account
    }

    /// Gives it its place in the input (known once its batch is merged).
    public mutating func number(_ sequence: Int64) {
        row.sequence = sequence
        for index in actions.indices { actions[index].sequence = sequence }
    }
}

/// What one batch adds to the store, written in one transaction with the new checkpoint.
public struct PlanBatch: Sendable {
    /// The accounts the store keeps, in input order.
    public var accounts: [KeptAccount] = []
    public var quarantine: [(sequence: Int64, entry: QuarantineEntry)] = []
    public var newIdHashes: [UInt64] = []
    /// The keys of the accounts the batch adds to the import file (`ImportKeys`).
    public var newImportKeyHashes: [UInt64] = []
    public var checkpoint: PlanCheckpoint
    /// The batch's accounts rendered for the reports, when a `PlanReportFollower` follows the plan (`ReportFragments`):
    /// their entries of plan.json's `accounts` array, their ledger lines, and how many accounts.
    public var reportJSON: [UInt8] = []
    public var reportLedger: [UInt8] = []
    public var reportAccounts = 0

    public init(checkpoint: PlanCheckpoint) {
        self.checkpoint = checkpoint
    }
}

/// The checkpoint store the planner writes to. Implemented on SQLite by IdPipeStore. `commit` is called from a
/// background thread, one batch at a time and in order.
public protocol PlanStore: AnyObject, Sendable {
    func loadRun() throws -> RunRecord?
    func saveRun(_ run: RunRecord) throws
    func loadCheckpoint() throws -> PlanCheckpoint?
    /// How many ids the committed batches accepted (`PlanBatch.newIdHashes`, together).
    func seenIdCount() throws -> Int
    /// Hands over the hashes of the ids the committed batches accepted, a batch's at a time, in order.
    func forEachSeenIdHashes(_ body: ([UInt64]) throws -> Void) throws
    /// Hands over the keys of the accounts the committed batches added to the import file (`PlanBatch.newImportKeyHashes`).
    func forEachImportKeyHashes(_ body: ([UInt64]) throws -> Void) throws
    /// Takes the batch over: the store may move its accounts out as it writes them.
    func commit(_ batch: consuming PlanBatch) throws
    /// The account ids of the quarantined rows, but for ids given again (`PlanRunner.repeatedIdReason`): their first row
    /// is processed.
    func quarantinedIds() throws -> Set<String>
    /// How many ids the quarantine holds as given again (`PlanRunner.repeatedIdReason`) while a deletion is planned
    /// for the account of their earlier row.
    func plannedDeletionsOfRepeatedIds() throws -> Int
}
