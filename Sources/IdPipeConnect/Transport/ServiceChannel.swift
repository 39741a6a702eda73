import Foundation
import Logging
import Synchronization

/// What a client makes of one response.
public enum ResponseVerdict: Sendable {
    case success
    /// Transient: try again after the backoff (or the response's `Retry-After`). `throttled` says the service
    /// pushed back on the request rate (429, QUOTA_EXCEEDED, Graph rate limits), which the stats count apart.
    case retry(reason: String, throttled: Bool = false)
    case fail(ConnectorError)
}

/// Counters of one service's traffic, for the report (rates, retries).
public struct ChannelStats: Sendable, Equatable {
    public var requests = 0
    public var retries = 0
    public var throttled = 0
    public var failures = 0
}

/// One remote service as the clients see it: a transport, a bound on requests in flight, a retry policy,
/// and a log that never sees headers, bodies or query strings (they carry tokens).
public final class ServiceChannel: Sendable {
    public let service: String
    let transport: any HTTPTransport
    let clock: any ServiceClock
    let retry: RetryPolicy
    let inFlight: ConcurrencyLimit
    let logger: Logger
    /// Whether its requests carry out an apply's steps (`SendWatch`); not a token endpoint's, which only sign them.
    let gated: Bool
    private let counters = Mutex(ChannelStats())
    /// Whether the service has answered any request of this process (with any status).
    private let answered = Atomic<Bool>(false)
    /// Whether a request found the service gone (`unavailable`), which stops the run: the others in flight stop at
    /// their next failed attempt, where each spent its whole budget first (65 of them, 10 minutes before the exit).
    private let wentDown = Atomic<Bool>(false)

    public init(service: String, transport: any HTTPTransport, clock: any ServiceClock = SystemServiceClock(),
                retry: RetryPolicy = RetryPolicy(), maxInFlight: Int = 8, logger: Logger? = nil, gated: Bool = true) {
        self.service = service
        self.gated = gated
        self.transport = transport
        self.clock = clock
        self.retry = retry
        self.inFlight = ConcurrencyLimit(maxInFlight)
        self.logger = logger ?? Logger(label: "idpipe.\(service)")
    }

    public var stats: ChannelStats { counters.withLock { $0 } }

    /// Sends `request` (rebuilt by `make` for every attempt, so a refreshed access token is used), pacing each
    /// attempt through `limiter` (after `make`), until `judge` calls the response a success or a failure, or retries run out.
    /// A `singleUse` request (an authorization code) is not sent again once it may have arrived: a connection lost
    /// or timed out before its answer fails it, where a second send would be refused for the first, and read as never
    /// done. One that could not connect is tried again (and counts towards "cannot connect").
    nonisolated(nonsending) public func send(limiter: RateLimiter?, singleUse: Bool = false, make: () async throws -> HTTPRequest,
                     judge: (HTTPResponse) -> ResponseVerdict) async throws -> HTTPResponse {
        var attempt = 0, throttledAttempts = 0, unreached = 0
        while true {
            attempt += 1
            // The request is built (which may first fetch an access token) before its turn is taken, so the turns the
            // limiter spaces are the moments requests leave, and the service sees them spaced too. After a wait of
            // more than a second (a queue, a Retry-After pause) it is built again, with a token fresh for now.
            var request = try await make()
            if let waited = try await limiter?.acquire(for: gated ? SendWatch.current : nil), waited > 1 { request = try await make() }
            let outcome: Result<HTTPResponse, TransportError> = try await inFlight.withSlot {
                // The step this request is part of is recorded as sent now, and not started at all after a stop.
                if gated, let watch = SendWatch.current { try await watch.willSend(readOnly: request.readOnly) }
                counters.withLock { $0.requests += 1 }
                do throws(TransportError) {
                    let response = try await transport.send(request)
                    return .success(response)
                } catch {
                    return .failure(error)
                }
            }
            let reason: String
            var retryAfter: Double?
            switch outcome {
            case .failure(let error):
                reason = error.description
                if case .connectionFailed = error { unreached += 1 }
                if singleUse, error == .connectionClosed || error == .timedOut {
                    counters.withLock { $0.failures += 1 }
                    throw ConnectorError.answerLost(service: service, last: reason)
                }
            case .success(let response):
                answered.store(true, ordering: .relaxed)
                switch ServiceChannel.transient(response) ?? judge(response) {
                case .success:
                    return response
                case .fail(let error):
                    counters.withLock { $0.failures += 1 }
                    throw error
                case .retry(let why, let throttled):
                    reason = why
                    if let header = response.header("Retry-After") {
                        retryAfter = RetryPolicy.parseRetryAfter(header, unixNow: clock.unixTime())
                    }
                    if throttled {
                        throttledAttempts += 1
                        counters.withLock { $0.throttled += 1 }
                    }
                }
            }
            // Never reached, and no request of this run ever was: a wrong endpoint or a service that is down. Going on
            // would spend the whole budget again on every action (hours with no output), so it stops the run.
            let wait = retry.delay(afterAttempt: attempt, throttled: throttledAttempts, retryAfter: retryAfter)
            if unreached == attempt && (attempt >= retry.maxUnreachedAttempts || wait == nil) && !answered.load(ordering: .relaxed) {
                counters.withLock { $0.failures += 1 }
                throw ConnectorError.configuration(service: service, message: "cannot connect to \(ServiceChannel.origin(request.url)) "
                    + "(\(attempt) attempts; last: \(reason)), and it has answered no request of this run; check its endpoint")
            }
            // Reached before, and now not once on any attempt of a whole budget (a minute or so): the service went down.
            // Each action would spend that minute and fail in turn (hours, with the service back long before the end),
            // so the run stops, and the action stays sent for `resume` to send again.
            if unreached == attempt && (wait == nil || wentDown.load(ordering: .relaxed)) {
                counters.withLock { $0.failures += 1 }
                wentDown.store(true, ordering: .relaxed)
                throw ConnectorError.unavailable(service: service, message: "cannot connect to \(ServiceChannel.origin(request.url)) "
                    + "(\(attempt) attempt\(attempt == 1 ? "" : "s"); last: \(reason)), though it answered earlier in this run")
            }
            guard let wait else {
                counters.withLock { $0.failures += 1 }
                logger.warning("\(service) \(request.target): giving up after \(attempt) attempts: \(reason)")
                throw ConnectorError.exhausted(service: service, attempts: attempt, last: reason)
            }
            if let retryAfter {
                // The service asked everyone to wait: hold back the whole quota class, not only this worker.
                limiter?.pause(seconds: min(retryAfter, retry.maxRetryAfter))
            }
            counters.withLock { $0.retries += 1 }
            logger.info("\(service) \(request.target): \(reason); retry \(attempt + 1) in \(String(format: "%.2f", wait)) s")
            try await clock.sleep(seconds: wait)
        }
    }

    /// 429 and 5xx are transient for every service here; everything else is the client's to judge.
    static func transient(_ response: HTTPResponse) -> ResponseVerdict? {
        switch response.status {
        case 429: .retry(reason: "HTTP 429", throttled: true)
        case 500, 502, 503, 504: .retry(reason: "HTTP \(response.status)")
        default: nil
        }
    }

    /// `https://host:port` of a URL, for messages (the path can name the project; the query can hold a token).
    static func origin(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return String(url.prefix { $0 != "?" }) }
        return String(url[..<(url[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex)])
    }
}
