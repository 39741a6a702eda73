import Foundation
import Synchronization

public struct SandboxRequest: Sendable {
    public var method: String
    /// The path without the query string, percent-decoded.
    public var path: String
    public var query: [(String, String)]
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(method: String, target: String, headers: [(String, String)], body: [UInt8]) {
        self.method = method
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        // In a path '+' is a plus (only a form or query string reads it as a space).
        path = parts[0].removingPercentEncoding ?? String(parts[0])
        query = parts.count > 1 ? SandboxForm.decode(String(parts[1])) : []
        self.headers = headers
        self.body = body
    }

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

public struct SandboxResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    static func json(_ status: Int, _ value: SJSON, headers: [(String, String)] = []) -> SandboxResponse {
        SandboxResponse(status: status, headers: [("Content-Type", "application/json; charset=UTF-8")] + headers, body: Array(value.text.utf8))
    }

    static func empty(_ status: Int) -> SandboxResponse {
        SandboxResponse(status: status, headers: [], body: [])
    }
}

/// What the server does with a request: answer (after a delay), or close the connection without an answer.
public enum SandboxReply: Sendable {
    case respond(SandboxResponse, delayMilliseconds: Int)
    case drop(delayMilliseconds: Int)
}

/// Form and query decoding, the sandbox's own.
enum SandboxForm {
    static func decode(_ text: String) -> [(String, String)] {
        text.split(separator: "&").map { pair in
            let halves = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (unescape(halves[0]), halves.count > 1 ? unescape(halves[1]) : "")
        }
    }

    static func unescape(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}

/// SplitMix64: a seeded generator, so a fault pattern can be replayed.
struct SeededRandom {
    var state: UInt64
    mutating func next() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}

/// A per-second quota, enforced the way a server does: a bucket of one second's worth of requests.
struct QuotaBucket {
    let rate: Double
    var tokens: Double
    var last: Double

    init(rate: Double, now: Double) {
        self.rate = rate
        tokens = max(1, rate)
        last = now
    }

    /// A request up to 50 ms or a quarter of its interval early, whichever is more (at most half a token), is let
    /// through: a client pacing itself at exactly the quota sees jitter between its clock and ours (a new connection,
    /// a busy machine), and should not be punished for it. One that keeps going faster is still turned away.
    mutating func take(now: Double) -> Bool {
        tokens = min(max(1, rate), tokens + (now - last) * rate)
        last = now
        guard tokens >= 1 - min(0.5, max(0.25, rate * 0.05)) else { return false }
        tokens -= 1
        return true
    }
}

/// A scripted fault for the next matching request (tests use these to be exact).
public enum ScriptedFault: Sendable, Equatable {
    case status(Int, retryAfter: Int?)
    case drop
    case quotaExceeded
}

/// Everything the sandbox holds, behind one lock. Handlers are synchronous and fast.
public final class SandboxService: Sendable {
    struct State {
        var config: SandboxConfig
        var accounts = SandboxAccounts()
        var sortedIds: [String]? = nil
        var ledger: [LedgerEntry] = []
        var random: SeededRandom
        var quotas: [SandboxConfig.QuotaClass: QuotaBucket] = [:]
        var scripted: [ScriptedFault] = []
        /// Google access tokens issued → expiry (Unix seconds), and the scopes each was granted.
        var googleTokens: [String: Int64] = [:]
        var googleScopes: [String: Set<String>] = [:]
        /// The data stores: Firestore databases, Realtime Database instances, Storage buckets.
        var firestore: [String: FirestoreDocument] = [:]
        var database: [String: DatabaseNode] = [:]
        var storage: [String: StorageBucket] = [:]
        /// Apple tokens: value → (kind, client id, revoked).
        var appleTokens: [String: AppleToken] = [:]
        var appleCodes: [String: AppleCode] = [:]
        var facebookAppTokens: Set<String> = []
        var facebookIds: Set<String> = []
        var facebookRevoked: Set<String> = []
        /// Data-deletion webhook: idempotency key → uid.
        var webhookKeys: [String: String] = [:]
        var requestCounts: [String: Int] = [:]
        var faultCounts: [String: Int] = [:]
        /// Requests left in the current burst of 429s.
        var burstRemaining = 0
        var ledgerFile: FileHandle?
    }

    struct AppleToken {
        var kind: String
        var clientId: String
        var revoked = false
    }

    struct AppleCode {
        var clientId: String
        var issuedAt: Int64
        var used = false
    }

    let state: Mutex<State>
    let schema = SchemaValidator()
    let started = ContinuousClock.now

    public init(config: SandboxConfig, ledgerPath: String? = nil) throws {
        var state = State(config: config, random: SeededRandom(state: config.faults.seed))
        if let ledgerPath {
            guard FileManager.default.createFile(atPath: ledgerPath, contents: nil), let handle = FileHandle(forWritingAtPath: ledgerPath) else {
                throw SandboxError("cannot write the ledger file \(ledgerPath)")
            }
            state.ledgerFile = handle
        }
        self.state = Mutex(state)
    }

    // MARK: - Loading

    /// Loads accounts from a `firebase auth:export` JSON file; returns how many were loaded and how many
    /// were skipped (no `localId`: such a record cannot exist in a real project).
    @discardableResult
    public func loadAccounts(exportJSON bytes: [UInt8], file: String) throws -> (loaded: Int, skipped: Int) {
        let document: SJSON
        do { document = try SJSON.parse(bytes) } catch { throw SandboxError("\(file): not JSON: \(error)") }
        guard let users = document["users"]?.array else { throw SandboxError("\(file): no \"users\" list") }
        return state.withLock { state in
            var skipped = 0
            for user in users {
                guard let members = user.members, let uid = user["localId"]?.string, !uid.isEmpty else {
                    skipped += 1
                    continue
                }
                // The exporter renames the API's lastLoginAt to lastSignedInAt; the API speaks lastLoginAt.
                var record = SJSON.object(members.map { $0.0 == "lastSignedInAt" ? ("lastLoginAt", $0.1) : $0 })
                record.set("kind", nil)
                state.accounts[uid] = record
                for provider in user["providerUserInfo"]?.array ?? [] where provider["providerId"]?.string == "facebook.com" {
                    if let rawId = provider["rawId"]?.string { state.facebookIds.insert(rawId) }
                }
            }
            state.sortedIds = nil
            return (users.count - skipped, skipped)
        }
    }

    /// Learns the Apple tokens and codes, and the Facebook ids, an app stored (idpipe's stored-tokens JSON Lines),
    /// as if Apple had issued them to the first configured client id.
    @discardableResult
    public func loadStoredTokens(jsonLines text: String, file: String) throws -> Int {
        try state.withLock { state in
            let clientId = state.config.apple?.clientIds.first ?? ""
            var count = 0
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                guard let entry = try? SJSON.parse(String(line)) else { throw SandboxError("\(file):\(number + 1): not a JSON object") }
                switch entry["provider"]?.string {
                case "apple.com":
                    guard let token = entry["token"]?.string, let kind = entry["type"]?.string else { continue }
                    if kind == "authorization_code" {
                        let captured = entry["captured_at"]?.string.flatMap(SandboxTime.parseRFC3339) ?? 0
                        state.appleCodes[token] = AppleCode(clientId: clientId, issuedAt: captured)
                    } else {
                        state.appleTokens[token] = AppleToken(kind: kind, clientId: clientId)
                    }
                    count += 1
                case "facebook.com":
                    if let id = entry["facebook_id"]?.string { state.facebookIds.insert(id) }
                    count += 1
                default:
                    continue
                }
            }
            return count
        }
    }

    /// Registers an Apple token or code as issued (tests).
    public func issueAppleToken(_ token: String, kind: String, clientId: String, issuedAt: Int64? = nil) {
        state.withLock { state in
            if kind == "authorization_code" {
                state.appleCodes[token] = AppleCode(clientId: clientId, issuedAt: issuedAt ?? SandboxTime.unixNow())
            } else {
                state.appleTokens[token] = AppleToken(kind: kind, clientId: clientId)
            }
        }
    }

    // MARK: - Control

    public func setFaults(_ faults: SandboxConfig.Faults) {
        state.withLock { state in
            state.config.faults = faults
            state.random = SeededRandom(state: faults.seed)
        }
    }

    public func script(_ faults: [ScriptedFault]) {
        state.withLock { $0.scripted.append(contentsOf: faults) }
    }

    public var ledger: [LedgerEntry] { state.withLock { $0.ledger } }

    public var accountIds: [String] { state.withLock { $0.accounts.uids.sorted() } }

    public func account(_ uid: String) -> String? { state.withLock { $0.accounts[uid]?.text } }

    public func requestCount(_ operation: String) -> Int { state.withLock { $0.requestCounts[operation] ?? 0 } }
    /// Requests of a quota class turned away with 429 for going over its rate.
    public func quotaRefusals(_ quotaClass: SandboxConfig.QuotaClass) -> Int {
        state.withLock { $0.faultCounts["quota:" + quotaClass.rawValue] ?? 0 }
    }

    func now() -> Double {
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func record(_ state: inout State, service: String, action: String, target: String, changed: Bool, detail: String = "") {
        let entry = LedgerEntry(seq: state.ledger.count + 1, unixMillis: SandboxTime.unixMillisNow(), service: service,
                                action: action, target: target, changed: changed, detail: detail)
        state.ledger.append(entry)
        if let file = state.ledgerFile {
            file.write(Data((entry.json.text + "\n").utf8))
        }
    }

    // MARK: - Dispatch

    public func handle(_ request: SandboxRequest) -> SandboxReply {
        if request.path.hasPrefix("/__sandbox/") {
            return .respond(control(request), delayMilliseconds: 0)
        }
        let route = Route(request)
        return state.withLock { state -> SandboxReply in
            state.requestCounts[route.name, default: 0] += 1
            let latency = state.config.faults.latencyMilliseconds
            if let fault = injectedFault(&state, route: route) {
                state.faultCounts[route.name, default: 0] += 1
                switch fault {
                case .status(let status, let retryAfter):
                    return .respond(faultResponse(route: route, status: status, retryAfter: retryAfter), delayMilliseconds: latency)
                case .quotaExceeded:
                    return .respond(quotaResponse(route: route, retryAfter: nil), delayMilliseconds: latency)
                case .drop:
                    // The effect happens, the answer is lost: the client must find out by retrying.
                    _ = serve(&state, route: route, request: request)
                    return .drop(delayMilliseconds: latency)
                }
            }
            if let quotaClass = route.quotaClass, case let rate = state.config.quotas[keyPath: quotaClass.rate], rate > 0 {
                let now = self.now()
                var bucket = state.quotas[quotaClass] ?? QuotaBucket(rate: rate, now: now)
                let allowed = bucket.take(now: now)
                state.quotas[quotaClass] = bucket
                if !allowed {
                    state.faultCounts["quota:" + quotaClass.rawValue, default: 0] += 1
                    return .respond(quotaResponse(route: route, retryAfter: nil), delayMilliseconds: latency)
                }
            }
            return .respond(serve(&state, route: route, request: request), delayMilliseconds: latency)
        }
    }

    private func injectedFault(_ state: inout State, route: Route) -> ScriptedFault? {
        guard route.isService else { return nil }
        if !state.scripted.isEmpty { return state.scripted.removeFirst() }
        let faults = state.config.faults
        if state.burstRemaining > 0 {
            state.burstRemaining -= 1
            return .status(429, retryAfter: faults.retryAfterSeconds)
        }
        if faults.burst429 > 0, state.random.next() < faults.burst429 {
            state.burstRemaining = max(0, faults.burstLength - 1)
            return .status(429, retryAfter: faults.retryAfterSeconds)
        }
        let draw = state.random.next()
        var threshold = faults.status503
        if draw < threshold { return .status(503, retryAfter: nil) }
        threshold += faults.status500
        if draw < threshold { return .status(500, retryAfter: nil) }
        threshold += faults.status429
        if draw < threshold { return .status(429, retryAfter: faults.retryAfterSeconds) }
        threshold += faults.drop
        if draw < threshold { return .drop }
        return nil
    }

    private func faultResponse(route: Route, status: Int, retryAfter: Int?) -> SandboxResponse {
        let headers = retryAfter.map { [("Retry-After", String($0))] } ?? []
        switch route.service {
        case "identitytoolkit", "google-oauth", "firestore", "storage":
            let reason = status == 429 ? "RESOURCE_EXHAUSTED" : status == 503 ? "UNAVAILABLE" : "INTERNAL"
            return .json(status, .object([("error", .object([("code", .number(String(status))), ("message", .string(reason)), ("status", .string(reason))]))]), headers: headers)
        default:
            return SandboxResponse(status: status, headers: headers, body: [])
        }
    }

    private func quotaResponse(route: Route, retryAfter: Int?) -> SandboxResponse {
        switch route.service {
        case "facebook":
            return .json(400, .object([("error", .object([
                ("message", .string("(#4) Application request limit reached")), ("type", .string("OAuthException")), ("code", .number("4")),
            ]))]))
        case "apple":
            return .empty(429)
        default:
            return .json(429, .object([("error", .object([
                ("code", .number("429")), ("message", .string("QUOTA_EXCEEDED : Exceeded quota for \(route.name).")),
                ("status", .string("RESOURCE_EXHAUSTED")),
            ]))]))
        }
    }

    private func serve(_ state: inout State, route: Route, request: SandboxRequest) -> SandboxResponse {
        switch route.service {
        case "identitytoolkit": return identityToolkit(&state, route: route, request: request)
        case "google-oauth": return googleToken(&state, request: request)
        case "apple": return apple(&state, route: route, request: request)
        case "facebook": return facebook(&state, route: route, request: request)
        case "webhook": return dataWebhook(&state, request: request)
        case "firestore": return firestore(&state, route: route, request: request)
        case "database": return realtimeDatabase(&state, route: route, request: request)
        case "storage": return storage(&state, route: route, request: request)
        default: return .json(404, .object([("error", .object([("code", .number("404")), ("message", .string("NOT_FOUND : \(request.path)"))]))]))
        }
    }

    // MARK: - The app backend's data-deletion webhook

    /// `POST /hooks/...` with `{"uid", "idempotency_key", ...}` and the same key in `Idempotency-Key`. A key seen
    /// before is answered 200 again without a second deletion, as an idempotent backend does.
    private func dataWebhook(_ state: inout State, request: SandboxRequest) -> SandboxResponse {
        guard request.method == "POST" else { return .json(405, .object([("error", .string("POST only"))])) }
        guard let body = try? SJSON.parse(request.body), let uid = body["uid"]?.string, !uid.isEmpty,
              let key = body["idempotency_key"]?.string, !key.isEmpty else {
            return .json(400, .object([("error", .string("the body needs uid and idempotency_key"))]))
        }
        guard request.header("Idempotency-Key") == key else {
            return .json(400, .object([("error", .string("the Idempotency-Key header must repeat the body's idempotency_key"))]))
        }
        let changed = state.webhookKeys[key] == nil
        state.webhookKeys[key] = uid
        Self.record(&state, service: "webhook", action: "delete-data", target: uid, changed: changed, detail: String(key.prefix(12)))
        return .json(200, .object([("status", .string(changed ? "deleted" : "already deleted"))]))
    }

    // MARK: - Control endpoints

    private func control(_ request: SandboxRequest) -> SandboxResponse {
        switch (request.method, request.path) {
        case ("GET", "/__sandbox/health"):
            return .json(200, .object([("ok", .bool(true))]))
        case ("GET", "/__sandbox/data"):
            return .json(200, dataDump())
        case ("GET", "/__sandbox/ledger"):
            return .json(200, .object([("entries", .array(ledger.map(\.json)))]))
        case ("GET", "/__sandbox/stats"):
            return state.withLock { state in
                .json(200, .object([
                    ("accounts", .number(String(state.accounts.count))),
                    ("requests", .object(state.requestCounts.sorted { $0.key < $1.key }.map { ($0.key, .number(String($0.value))) })),
                    ("faults", .object(state.faultCounts.sorted { $0.key < $1.key }.map { ($0.key, .number(String($0.value))) })),
                    ("ledger", .number(String(state.ledger.count))),
                ]))
            }
        case ("POST", "/__sandbox/faults"):
            guard let body = try? SJSON.parse(request.body), let members = body.members else {
                return .json(400, .object([("error", .string("not a JSON object"))]))
            }
            // A misspelt key set no fault, and the answer said ok: a test then measured a run without faults.
            let known = ["status503", "status500", "status429", "drop", "burst429", "burst_length", "retry_after", "latency_ms", "seed"]
            if let unknown = members.first(where: { !known.contains($0.0) }) {
                return .json(400, .object([("error", .string("unknown fault '\(unknown.0)'; the faults are: \(known.joined(separator: ", "))"))]))
            }
            let probabilities = ["status503", "status500", "status429", "drop", "burst429"]
            for (key, value) in members {
                if probabilities.contains(key) {
                    guard let chance = Double(value.scalarText ?? ""), (0...1).contains(chance) else {
                        return .json(400, .object([("error", .string("\(key) is a probability, from 0 to 1"))]))
                    }
                } else {
                    // A burst of 0 was one; a latency without bound hung every request.
                    let bounds: ClosedRange<Int64> = switch key {
                    case "burst_length": 1...10_000
                    case "latency_ms": 0...60_000
                    case "retry_after": 0...3_600
                    default: 0...Int64.max
                    }
                    guard let number = value.int, bounds.contains(number) else {
                        return .json(400, .object([("error", .string("\(key) is a whole number from \(bounds.lowerBound) to \(bounds.upperBound)"))]))
                    }
                }
            }
            var faults = SandboxConfig.Faults()
            faults.status503 = Double(body["status503"]?.scalarText ?? "") ?? 0
            faults.status500 = Double(body["status500"]?.scalarText ?? "") ?? 0
            faults.status429 = Double(body["status429"]?.scalarText ?? "") ?? 0
            faults.drop = Double(body["drop"]?.scalarText ?? "") ?? 0
            faults.burst429 = Double(body["burst429"]?.scalarText ?? "") ?? 0
            faults.burstLength = Int(body["burst_length"]?.int ?? 20)
            faults.retryAfterSeconds = Int(body["retry_after"]?.int ?? 1)
            faults.latencyMilliseconds = Int(body["latency_ms"]?.int ?? 0)
            faults.seed = UInt64(body["seed"]?.int ?? 1)
            setFaults(faults)
            return .json(200, .object([("ok", .bool(true))]))
        default:
            return .json(404, .object([("error", .string("unknown sandbox endpoint \(request.path)"))]))
        }
    }
}

public struct SandboxError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Which service and operation a request is for.
struct Route {
    let service: String
    /// e.g. `accounts:batchDelete`, `apple:/auth/revoke`.
    let name: String
    let quotaClass: SandboxConfig.QuotaClass?
    /// For Identity Toolkit: the project in the path.
    let project: String?
    /// For Facebook: the user id in `/vX.Y/{id}/permissions`; Firestore: the database id; Storage: the bucket.
    let subject: String?
    /// Firestore: what follows `…/documents`; Realtime Database: the path without `.json`; Storage: the object name.
    var remainder = ""

    var isService: Bool { service != "unknown" }

    init(_ request: SandboxRequest) {
        var path = request.path
        if path.hasPrefix("/identitytoolkit.googleapis.com") { path.removeFirst("/identitytoolkit.googleapis.com".count) }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if segments.count >= 7, segments[1] == "v1", segments[2] == "projects", segments[4] == "databases", segments[6].hasPrefix("documents") {
            (service, project, subject, quotaClass) = ("firestore", segments[3], segments[5], nil)
            remainder = String(path.dropFirst(["", "v1", "projects", segments[3], "databases", segments[5], "documents"].joined(separator: "/").count))
            let method = segments.last!.split(separator: ":").dropFirst().last.map { ":" + $0 } ?? ""
            name = "firestore:" + (method.isEmpty ? (segments.count % 2 == 0 ? "list" : "document") : method)
        } else if segments.count >= 6, segments[1] == "storage", segments[2] == "v1", segments[3] == "b", segments[5] == "o" {
            (service, project, subject, quotaClass) = ("storage", nil, segments[4], nil)
            remainder = segments.count > 6 ? segments[6...].joined(separator: "/") : ""
            name = "storage:" + (remainder.isEmpty ? "objects.list" : "objects.\(request.method.lowercased())")
        } else if path.hasSuffix(".json") {
            (service, project, subject, quotaClass) = ("database", nil, nil, nil)
            remainder = String(path.dropLast(5))
            name = "database:" + request.method
        } else if segments.count == 5, segments[1] == "v1", segments[2] == "projects", segments[4].hasPrefix("accounts:") {
            let operation = segments[4]
            service = "identitytoolkit"
            name = operation
            project = segments[3]
            subject = nil
            switch operation {
            case "accounts:update": quotaClass = .update
            case "accounts:batchDelete": quotaClass = .batchDelete
            case "accounts:batchCreate": quotaClass = .batchCreate
            default: quotaClass = .read
            }
        } else if path == "/token" {
            (service, name, quotaClass, project, subject) = ("google-oauth", "oauth:/token", nil, nil, nil)
        } else if path == "/auth/token" || path == "/auth/revoke" {
            (service, name, quotaClass, project, subject) = ("apple", "apple:" + path, .apple, nil, nil)
        } else if path == "/oauth/access_token" {
            (service, name, quotaClass, project, subject) = ("facebook", "facebook:/oauth/access_token", nil, nil, nil)
        } else if path.hasPrefix("/hooks/") {
            (service, name, quotaClass, project, subject) = ("webhook", "webhook:" + path, .webhook, nil, nil)
        } else if segments.count == 4, segments[1].hasPrefix("v"), segments[3] == "permissions" {
            (service, name, quotaClass, project, subject) = ("facebook", "facebook:permissions", .facebook, nil, segments[2])
        } else {
            (service, name, quotaClass, project, subject) = ("unknown", path, nil, nil, nil)
        }
    }
}

enum SandboxTime {
    static func unixNow() -> Int64 { Int64(Date().timeIntervalSince1970) }
    static func unixMillisNow() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    static func formatRFC3339(_ millis: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }

    static func parseRFC3339(_ text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970) }
    }
}

extension SJSON {
    /// The value's text for numbers and strings (used by the control endpoints).
    var scalarText: String? {
        switch self {
        case .number(let text), .string(let text): text
        default: nil
        }
    }
}
