/// The parts of the reports that grow with the plan, the `accounts` array of `plan.json` and the lines of
/// `ledger.csv`, rendered as the plan goes. Reading a million-account plan's rows back from the store to render them
/// took about as long as planning them, after the plan, on its own. Here each worker renders the accounts it keeps
/// (`ReportFragments`), the merge puts a batch's together in input order (`append`), and the committer writes them
/// out (`PlanReportFollower`). They are rendered with the reports' own functions from the very rows the store keeps
/// (`KeptAccount`), so the reports put together from them equal those rendered from the store.
public struct ReportFragments: Sendable {
    public let masking: Masking
    /// Each rendered account's line of the `accounts` array ends at its `jsonEnds` entry. The writers are the part's
    /// own: the worker writes them, then the merge reads them. A copy of the fragments shares them: only the first
    /// is added to (`add` on a copy would write past the other's ends).
    private let json = ByteWriter(capacity: 4096)
    private var jsonEnds: [Int] = []
    /// Its ledger lines, without their first field (the sequence number, known only once the batch is merged), end
    /// at `ledgerEnds[lineStarts[account]..<lineStarts[account + 1]]`.
    private let ledger = ByteWriter(capacity: 1024)
    private var ledgerEnds: [Int] = []
    private var lineStarts: [Int] = [0]
    private var scratch: [UInt8] = []

    public init(masking: Masking) {
        self.masking = masking
    }

    /// Renders an account the store keeps, as the worker processes it.
    public mutating func add(_ kept: KeptAccount) {
        var json = json, ledger = ledger
        JSONReport.appendAccount(kept.row, kept.actions, masking: masking, to: &json, scratch: &scratch)
        jsonEnds.append(json.count)
        for action in kept.actions {
            CSVLedger.appendFields(afterSequenceOf: action, masking: masking, masked: &scratch, to: &ledger)
            ledgerEnds.append(ledger.count)
        }
        lineStarts.append(ledgerEnds.count)
    }

    /// Appends rendered account `index` to a batch's text: entry `entry` of the whole `accounts` array (what separates it
    /// from the one before comes with it), and its ledger lines, numbered `sequence`.
    public func append(_ index: Int, entry: Int, sequence: Int64, to batch: inout PlanBatch) {
        batch.reportJSON.put(entry == 0 ? "\n    " : ",\n    ")
        json.withBytes((index == 0 ? 0 : jsonEnds[index - 1])..<jsonEnds[index]) { batch.reportJSON.append(contentsOf: $0) }
        let number = String(sequence)
        for line in lineStarts[index]..<lineStarts[index + 1] {
            batch.reportLedger.put(number)
            batch.reportLedger.append(UInt8(ascii: ","))
            ledger.withBytes((line == 0 ? 0 : ledgerEnds[line - 1])..<ledgerEnds[line]) { batch.reportLedger.append(contentsOf: $0) }
        }
        batch.reportAccounts += 1
    }
}

/// Gets each batch of a plan just before the store commits it, in order, on the committer's thread, with its accounts
/// rendered for the reports (`PlanBatch.reportJSON`, `reportLedger`), and before that each kept account, on the merging
/// thread (`gather`). Used only by a plan that starts from the beginning of its input; `PlanResult.reportBodiesComplete`
/// says whether it saw every batch. A plan that fails midway leaves what it gathered unused.
public protocol PlanReportFollower: AnyObject, Sendable {
    /// How the reports mask personal data.
    var masking: Masking { get }
    func add(_ batch: PlanBatch) throws
    /// Gets each kept account, in input order, on the thread that merges the batches (the plan's own), where the account
    /// is a value of its own: read from the batch on the committer's thread, each was copied (a retain and a release of
    /// every string in it).
    func gather(_ account: borrowing KeptAccount)
}
