/// What `apply` did, as the report reads it from the store.
public struct ApplySummary: Sendable {
    public struct KindFigures: Sendable {
        public var kind: ActionKind
        public var states: [ActionState: Int]
        /// From the first send to the last answer of this kind (seconds), over every session.
        public var busySeconds: Double
        public var done: Int { states[.done] ?? 0 }
        public var ratePerSecond: Double? { busySeconds > 0 && done > 0 ? Double(done) / busySeconds : nil }

        public init(kind: ActionKind, states: [ActionState: Int], busySeconds: Double) {
            self.kind = kind
            self.states = states
            self.busySeconds = busySeconds
        }
    }

    public struct Session: Sendable {
        public var command: String
        public var startedAt: Int64
        public var endedAt: Int64?
        public var resent: Int
        public var outcome: String?
        /// The idpipe that ran it; nil for one before 0.5.0, which did not record it.
        public var idpipeVersion: String?

        public init(command: String, startedAt: Int64, endedAt: Int64?, resent: Int, outcome: String?, idpipeVersion: String? = nil) {
            self.command = command
            self.startedAt = startedAt
            self.endedAt = endedAt
            self.resent = resent
            self.outcome = outcome
            self.idpipeVersion = idpipeVersion
        }

        /// Which idpipe ran it, in words.
        public var ranBy: String { idpipeVersion.map { "idpipe \($0)" } ?? "before 0.5.0 (not recorded)" }
    }

    public var kinds: [KindFigures]
    /// (action kind, policy, accounts) for deletions that went ahead or were held back.
    public var policies: [(kind: String, policy: String, state: String, count: Int)]
    /// (action kind, final state, reason, accounts) for failed, not-possible and blocked actions.
    public var reasons: [(kind: String, state: String, reason: String, count: Int)]
    public var traffic: [ServiceTraffic]
    public var sessions: [Session]

    public init(kinds: [KindFigures], policies: [(kind: String, policy: String, state: String, count: Int)],
                reasons: [(kind: String, state: String, reason: String, count: Int)], traffic: [ServiceTraffic], sessions: [Session]) {
        self.kinds = kinds
        self.policies = policies
        self.reasons = reasons
        self.traffic = traffic
        self.sessions = sessions
    }

    public var resent: Int { sessions.reduce(0) { $0 + $1.resent } }

    /// Wall time spent applying, summed over the sessions (an interrupted session counts until its last record).
    public var seconds: Double {
        Double(sessions.reduce(Int64(0)) { $0 + max(0, ($1.endedAt ?? $1.startedAt) - $1.startedAt) }) / 1000
    }

    /// Open actions (planned, or sent without an answer): zero once the run is complete.
    public var open: Int { kinds.reduce(0) { $0 + $1.states.open } }
    public var failed: Int { kinds.reduce(0) { $0 + ($1.states[.failed] ?? 0) } }
}

/// The traffic of one service: requests sent, retried, refused for the rate, and failed after retries.
public struct ServiceTraffic: Sendable, Equatable {
    public var service: String
    public var requests: Int
    public var retries: Int
    public var throttled: Int
    public var failures: Int

    public init(service: String, requests: Int, retries: Int, throttled: Int, failures: Int) {
        self.service = service
        self.requests = requests
        self.retries = retries
        self.throttled = throttled
        self.failures = failures
    }
}
