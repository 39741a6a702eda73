import IdPipeConnect
import IdPipeCore
import IdPipeStore

/// The dry run's reads of the configured data paths: for each planned path deletion, how many documents, nodes
/// or objects each path holds, written to the state store as it goes. Resumable: a count once written is kept,
/// and a later run counts only what is left.
public final class DataSurvey: Sendable {
    let store: StateStore
    let effects: any RemoteEffects
    let concurrency: Int

    public init(store: StateStore, effects: any RemoteEffects, concurrency: Int) {
        self.store = store
        self.effects = effects
        self.concurrency = max(1, concurrency)
    }

    /// How many finished counts are written to the store at a time: a run stopped midway keeps what it counted (all of
    /// a window of 500 was written at its end, and an interrupted count of 388 paths began again from none).
    static let recordEvery = 32

    /// Counts every uncounted action (`total` of them, as `uncountedPathActionCount` said); `onProgress` gets (counted
    /// so far, total). A configuration error (a refused credential) stops it; any other failure is recorded for that action.
    /// Once `shouldStop` says so, no count is started: those in flight finish and are written, and `stopped` is true if
    /// any count is left for a later run.
    public func run(total: Int, shouldStop: @escaping @Sendable () -> Bool = { false },
                    onProgress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> (counted: Int, failed: Int, stopped: Bool) {
        var after: Int64 = 0
        var counted = 0, failed = 0
        let session = try await store.beginSurveySession()
        func record(_ results: [DataSurveyResult]) async throws {
            guard !results.isEmpty else { return }
            try await store.recordSurvey(results)
            try await store.saveSurveyTraffic(session: session, effects.traffic())
            for result in results {
                if case .failure = result.counts { failed += 1 } else { counted += 1 }
            }
            onProgress?(counted + failed, total)
        }
        while !shouldStop() {
            let window = try await store.uncountedPathActions(after: after, limit: 500)
            guard let last = window.last else { break }
            after = last.id
            try await withThrowingTaskGroup(of: DataSurveyResult.self) { group in
                var finished: [DataSurveyResult] = []
                var next = window.makeIterator()
                func start() {
                    guard !shouldStop(), let action = next.next() else { return }
                    group.addTask { DataSurveyResult(id: action.id, counts: try await self.count(action)) }
                }
                for _ in 0..<concurrency { start() }
                while let result = try await group.next() {
                    finished.append(result)
                    if finished.count >= Self.recordEvery {
                        try await record(finished)
                        finished = []
                    }
                    start()
                }
                try await record(finished)
            }
        }
        // A stop asked for after the last count started stopped nothing: the plan is not to say its count was cut short.
        let left = try store.uncountedPathActionCount()
        return (counted, failed, shouldStop() && left > 0)
    }

    private func count(_ action: UncountedAction) async throws -> Result<[PathCount], SurveyFailure> {
        do {
            return .success(try await effects.countPaths(action.kind, uid: action.uid))
        } catch let error as ConnectorError where !error.stopsRun {
            var retryable = false
            if case .exhausted = error { retryable = true }
            return .failure(SurveyFailure(reason: error.description, retryable: retryable))
        }
    }
}
