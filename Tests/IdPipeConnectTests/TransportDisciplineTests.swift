@testable import IdPipeConnect
import Synchronization
import Testing

@Suite struct TokenBucketTests {
    @Test func oneRequestPerSecondQueuesWaitersInOrder() {
        var bucket = TokenBucket(rate: 1)
        #expect(bucket.reserve(now: 0) == 0)
        #expect(bucket.reserve(now: 0) == 1)
        #expect(bucket.reserve(now: 0) == 2)
        // At t=0.5 the fourth caller waits behind the two already queued.
        #expect(abs(bucket.reserve(now: 0.5) - 2.5) < 1e-9)
        // Long idle: the bucket refills to its burst only, not beyond.
        #expect(bucket.reserve(now: 100) == 0)
        #expect(bucket.reserve(now: 100) == 1)
    }

    @Test func tenPerSecondSpacesRequestsByATenth() {
        var bucket = TokenBucket(rate: 10)
        let waits = (0..<5).map { _ in bucket.reserve(now: 0) }
        for (index, wait) in waits.enumerated() { #expect(abs(wait - Double(index) / 10) < 1e-9) }
    }

    @Test func burstAllowsThatManyAtOnce() {
        var bucket = TokenBucket(rate: 2, burst: 3)
        #expect((0..<3).map { _ in bucket.reserve(now: 0) } == [0, 0, 0])
        #expect(bucket.reserve(now: 0) == 0.5)
    }

    @Test func pauseHoldsEveryoneUntilItEnds() {
        var bucket = TokenBucket(rate: 1)
        bucket.pause(until: 7)
        #expect(bucket.reserve(now: 2) == 5)
        #expect(bucket.reserve(now: 2) == 6)
    }

    @Test func limiterSleepsOnTheClockNotTheWall() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: 2, clock: clock)
        for _ in 0..<5 { try await limiter.acquire() }
        #expect(clock.sleeps == [0, 0.5, 0.5, 0.5, 0.5])
        #expect(clock.now() == 2)
    }
}

@Suite struct RetryPolicyTests {
    @Test func backoffDoublesUpToTheCapThenGivesUp() {
        let policy = RetryPolicy(maxAttempts: 8, baseDelay: 0.5, maxDelay: 10, jitter: { 1 })
        let delays = (1...8).map { policy.delay(afterAttempt: $0, retryAfter: nil) }
        #expect(delays == [0.5, 1, 2, 4, 8, 10, 10, nil])
    }

    @Test func throttlingHasItsOwnLargerBudget() {
        let policy = RetryPolicy(maxAttempts: 3, maxThrottledAttempts: 5, jitter: { 1 })
        #expect(policy.delay(afterAttempt: 3, throttled: 0, retryAfter: nil) == nil, "three failures spend the budget")
        #expect(policy.delay(afterAttempt: 4, throttled: 2, retryAfter: nil) != nil, "two failures and two 429s do not")
        #expect(policy.delay(afterAttempt: 4, throttled: 4, retryAfter: nil) != nil)
        #expect(policy.delay(afterAttempt: 5, throttled: 5, retryAfter: nil) == nil, "five 429s spend the throttling budget")
    }

    @Test func jitterScalesEachDelay() {
        let policy = RetryPolicy(baseDelay: 1, jitter: { 0.5 })
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil) == 2)
    }

    @Test func retryAfterWinsWhenLongerAndIsCapped() {
        let policy = RetryPolicy(baseDelay: 0.5, maxRetryAfter: 60, jitter: { 1 })
        #expect(policy.delay(afterAttempt: 1, retryAfter: 7) == 7)
        #expect(policy.delay(afterAttempt: 5, retryAfter: 1) == 8)
        #expect(policy.delay(afterAttempt: 1, retryAfter: 3600) == 60)
    }

    @Test func retryAfterIsSpreadSoAThrottledCrowdDoesNotReturnAtOnce() {
        let policy = RetryPolicy(baseDelay: 0.5, maxRetryAfter: 60, jitter: { 0.5 })
        #expect(policy.delay(afterAttempt: 1, retryAfter: 2) == 3)
        #expect(policy.delay(afterAttempt: 1, retryAfter: 50) == 60)
    }

    @Test(arguments: [
        ("120", 120.0), (" 3 ", 3.0), ("Sat, 21 Nov 2026 00:00:10 GMT", 10.0), ("Sat, 21 Nov 2026 00:00:00 GMT", 0.0),
        ("Fri, 20 Nov 2026 23:00:00 GMT", 0.0),
    ])
    func retryAfterParses(text: String, seconds: Double) {
        // 2026-11-21T00:00:00Z
        #expect(RetryPolicy.parseRetryAfter(text, unixNow: 1_795_219_200) == seconds)
    }

    @Test(arguments: ["-1", "soon", "Sat, 21 Nov 2026 00:00:10 UTC", ""])
    func retryAfterRefusesNonsense(text: String) {
        #expect(RetryPolicy.parseRetryAfter(text, unixNow: 0) == nil)
    }
}

@Suite struct ServiceChannelTests {
    let request = HTTPRequest(method: "POST", url: "https://example.test/x?access_token=SECRET")

    @Test func transientFailuresAreRetriedWithBackoff() async throws {
        let clock = ManualClock()
        let stub = StubTransport([
            .response(HTTPResponse(status: 503)), .failure(.connectionClosed), .response(HTTPResponse(status: 500)),
            .response(HTTPResponse(status: 200, json: "{}")),
        ])
        let channel = channel(stub, clock: clock)
        let response = try await channel.send(limiter: nil, make: { request }, judge: { _ in .success })
        #expect(response.status == 200)
        #expect(stub.requests.count == 4)
        #expect(clock.sleeps == [0.5, 1, 2])
        #expect(channel.stats.retries == 3)
    }

    @Test func retryAfterPausesTheWholeQuotaClass() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: 10, clock: clock)
        let stub = StubTransport([
            .response(HTTPResponse(status: 429, headers: [("Retry-After", "7")])), .response(HTTPResponse(status: 200)),
        ])
        _ = try await channel(stub, clock: clock).send(limiter: limiter, make: { request }, judge: { _ in .success })
        // First acquire 0, then the 7 s Retry-After, then the next acquire waits out the rest of the pause (0).
        #expect(clock.sleeps.filter { $0 > 0 } == [7])
        // Another worker arriving now is held by the pause too.
        try await limiter.acquire()
        #expect(stub.requests.count == 2)
    }

    @Test func givesUpAfterTheBudgetWithTheLastReason() async throws {
        let stub = StubTransport(Array(repeating: .response(HTTPResponse(status: 503)), count: 10))
        await #expect(throws: ConnectorError.exhausted(service: "identitytoolkit", attempts: 4, last: "HTTP 503")) {
            _ = try await channel(stub).send(limiter: nil, make: { request }, judge: { _ in .success })
        }
        #expect(stub.requests.count == 4)
    }

    @Test func aLongThrottleOutlastsTheFailureBudget() async throws {
        // Ten 429s and two 503s: more than the 4 attempts a fault may take, fewer than the 24 for throttling.
        let throttled = Array(repeating: StubTransport.Answer.response(HTTPResponse(status: 429)), count: 5)
        let stub = StubTransport(throttled + [.response(HTTPResponse(status: 503))] + throttled
                                 + [.response(HTTPResponse(status: 503)), .response(HTTPResponse(status: 200))])
        let channel = channel(stub)
        let response = try await channel.send(limiter: nil, make: { request }, judge: { _ in .success })
        #expect(response.status == 200)
        #expect(stub.requests.count == 13)
        #expect(channel.stats.throttled == 10)
    }

    /// The turn is taken after the request is built (the first build may fetch a token), and a request that then
    /// waited more than a second is built again, so the token it carries is fresh when it leaves.
    @Test func aRequestIsBuiltBeforeItsTurnAndAgainAfterALongWait() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: 0.5, clock: clock)
        let stub = StubTransport([.response(HTTPResponse(status: 200)), .response(HTTPResponse(status: 200))])
        let channel = channel(stub, clock: clock)
        let builds = Mutex<[Double]>([])
        let make = { () async throws -> HTTPRequest in
            builds.withLock { $0.append(clock.now()) }
            return request
        }
        _ = try await channel.send(limiter: limiter, make: make, judge: { _ in .success })
        #expect(builds.withLock { $0 } == [0], "no wait: built once")
        _ = try await channel.send(limiter: limiter, make: make, judge: { _ in .success })
        #expect(builds.withLock { $0 } == [0, 0, 2], "the second waited 2 s for its turn and was built again after it")
    }

    /// A service that refuses every connection and never answered stops the run (a wrong endpoint, or down): going on
    /// would spend the whole budget on every action. One that answered before, then refuses every attempt of a request,
    /// is down: that stops the run too (resumable), where each action used to spend its budget and fail in turn (a
    /// sandbox stopped midway left an apply of 1,600 actions running for hours). A request that reaches it once is only
    /// retried or failed, as before.
    @Test func anEndpointThatNeverAnsweredIsAConfigurationError() async throws {
        let refused = Array(repeating: StubTransport.Answer.failure(.connectionFailed("connection refused")), count: 8)
        let stub = StubTransport(refused)
        let expected = ConnectorError.configuration(service: "identitytoolkit", message: "cannot connect to https://example.test "
            + "(3 attempts; last: connection failed: connection refused), and it has answered no request of this run; check its endpoint")
        await #expect(throws: expected) {
            _ = try await channel(stub).send(limiter: nil, make: { request }, judge: { _ in .success })
        }
        let answeredOnce = StubTransport([.response(HTTPResponse(status: 200))] + refused)
        let reached = channel(answeredOnce)
        _ = try await reached.send(limiter: nil, make: { request }, judge: { _ in .success })
        await #expect(throws: ConnectorError.unavailable(service: "identitytoolkit", message: "cannot connect to https://example.test "
            + "(4 attempts; last: connection failed: connection refused), though it answered earlier in this run")) {
            _ = try await reached.send(limiter: nil, make: { request }, judge: { _ in .success })
        }
        #expect(ConnectorError.unavailable(service: "apple", message: "").stopsRun)
        // Once one request found it gone, the others stop at their next failed attempt (each spent its budget first:
        // 65 in flight kept the run from stopping for 10 minutes).
        await #expect(throws: ConnectorError.unavailable(service: "identitytoolkit", message: "cannot connect to https://example.test "
            + "(1 attempt; last: connection failed: connection refused), though it answered earlier in this run")) {
            _ = try await reached.send(limiter: nil, make: { request }, judge: { _ in .success })
        }
        let flaky = StubTransport([.response(HTTPResponse(status: 200))] + Array(refused.prefix(3)) + [.response(HTTPResponse(status: 503))])
        let sometimes = channel(flaky)
        _ = try await sometimes.send(limiter: nil, make: { request }, judge: { _ in .success })
        await #expect(throws: ConnectorError.exhausted(service: "identitytoolkit", attempts: 4, last: "HTTP 503")) {
            _ = try await sometimes.send(limiter: nil, make: { request }, judge: { _ in .success })
        }
        // With the production budget of 8, an unreachable service is given up on after 3 attempts (half a minute, not hours).
        let patient = StubTransport(refused)
        let production = ServiceChannel(service: "apple", transport: patient, clock: ManualClock(), retry: RetryPolicy(jitter: { 1 }))
        await #expect(throws: ConnectorError.configuration(service: "apple", message: "cannot connect to https://example.test "
            + "(3 attempts; last: connection failed: connection refused), and it has answered no request of this run; check its endpoint")) {
            _ = try await production.send(limiter: nil, make: { request }, judge: { _ in .success })
        }
        #expect(patient.requests.count == 3)
    }

    @Test(arguments: [
        ("https://example.test/v1/projects/p/accounts:lookup?key=SECRET", "https://example.test"),
        ("http://127.0.0.1:8790/identitytoolkit", "http://127.0.0.1:8790"), ("https://host.test?x=1", "https://host.test"),
    ])
    func originLeavesOutPathAndQuery(url: String, origin: String) {
        #expect(ServiceChannel.origin(url) == origin)
    }

    @Test func aRefusalIsNotRetried() async throws {
        let stub = StubTransport(json: (400, "{}"), (200, "{}"))
        await #expect(throws: ConnectorError.rejected(service: "identitytoolkit", code: "NOPE", message: "")) {
            _ = try await channel(stub).send(limiter: nil, make: { request }, judge: { _ in .fail(.rejected(service: "identitytoolkit", code: "NOPE", message: "")) })
        }
        #expect(stub.requests.count == 1)
    }

    @Test(arguments: [
        ("https://identitytoolkit.googleapis.com/v1", true), ("http://127.0.0.1:9099/x", true), ("http://localhost:1", true),
        ("http://[::1]:80", true), ("http://identitytoolkit.googleapis.com/v1", false), ("ftp://x", false), ("https://", false),
        ("http://127.0.0.1.evil.example/", false), ("https://user@host/", false),
    ])
    func endpointsMustBeHTTPSUnlessLoopback(url: String, accepted: Bool) {
        #expect(((try? Endpoint(url, service: "t")) != nil) == accepted)
    }
}

/// The account a request is about may stand in its path (Facebook's app-scoped id, a data store's uid, which a legacy
/// import may have made an email or a phone number). The retry and give-up lines of `--verbose` name the operation.
@Suite struct RequestLogTests {
    @Test func retryLinesNameTheOperationNotTheAccountInThePath() async throws {
        let log = CapturedLog()
        let stub = StubTransport(json: (200, #"{"access_token":"1234567890|abc"}"#), (503, "{}"), (200, #"{"success":true}"#))
        let facebook = FacebookClient(credentials: try FacebookCredentials(appId: "1234567890", appSecret: "s3cret"),
                                      endpoint: try Endpoint(FacebookClient.productionBase, service: "facebook"),
                                      channel: channel(stub, service: "facebook", log: log))
        try await facebook.revokeLogin(appScopedId: "10150000000000001")
        #expect(stub.requests.count == 3)
        #expect(log.lines == ["info: facebook DELETE /v21.0/{app-scoped id}/permissions: HTTP 503; retry 2 in 0.50 s"])

        let googleLog = CapturedLog()
        let google = StubTransport(json: (503, "{}"), (503, "{}"), (503, "{}"), (503, "{}"))
        let call = GoogleCall(channel: channel(google, service: "firestore", log: googleLog), tokens: FixedToken())
        await #expect(throws: ConnectorError.self) {
            _ = try await call.send("GET", "https://firestore.googleapis.com/v1/projects/p/databases/(default)/documents/users/+15551234567",
                                    json: nil, limiter: .perSecond(100, clock: ManualClock()), operation: "documents.get")
        }
        #expect(googleLog.lines.count == 4)
        #expect(googleLog.lines.allSatisfy { $0.contains(": firestore documents.get: ") && $0.contains("HTTP 503") && !$0.contains("5551234567") }, "\(googleLog.lines)")
        #expect(googleLog.lines.last?.hasPrefix("warning: firestore documents.get: giving up after 4 attempts") == true)
    }
}

/// An apply's step is recorded as sent just before its first request that changes something leaves, and is not started
/// once the run is stopping: not while it waits its turn, nor at a read before its change.
@Suite struct SendWatchTests {
    final class Steps: Sendable {
        let recorded = Mutex(0)
        let asked = Mutex(0)
        let stopAfter: Int
        init(stopAfter: Int) { self.stopAfter = stopAfter }
        /// A watch whose run stops after `mayStart` has been asked `stopAfter` times.
        func watch() -> SendWatch {
            SendWatch(mayStart: { self.asked.withLock { $0 += 1; return $0 <= self.stopAfter } },
                      beforeFirst: { self.recorded.withLock { $0 += 1 } })
        }
    }

    @Test func readsStartNothingAndTheFirstChangeIsRecordedOnce() async throws {
        let steps = Steps(stopAfter: 3)
        let watch = steps.watch()
        try await watch.willSend(readOnly: true)
        #expect(steps.recorded.withLock { $0 } == 0)
        try await watch.willSend()
        try await watch.willSend()
        #expect(steps.recorded.withLock { $0 } == 1)
        // Stopping now: the step has begun, so its retries and its next requests still go.
        try await watch.willSend()
        try await watch.willSend(readOnly: true)
        #expect(steps.recorded.withLock { $0 } == 1 && steps.asked.withLock { $0 } == 2)
        let late = Steps(stopAfter: 1).watch()
        try await late.willSend(readOnly: true)
        await #expect(throws: SendWatch.NotStarted.self) { try await late.willSend() }
    }

    /// Through a channel: a step not begun sends nothing once the run stops; a token endpoint's channel is not gated
    /// (the token signs the step's requests, and changes nothing), and starts no step.
    @Test func aGatedChannelSendsNothingOfAStepNotBegunAfterAStop() async throws {
        let stub = StubTransport(json: (200, "{}"), (200, "{}"))
        let post = { HTTPRequest(method: "POST", url: "https://identitytoolkit.googleapis.com/v1/projects/p/accounts:update") }
        let stopped = Steps(stopAfter: 0)
        await #expect(throws: SendWatch.NotStarted.self) {
            try await SendWatch.$current.withValue(stopped.watch()) { _ = try await channel(stub).send(limiter: nil, make: post, judge: { _ in .success }) }
        }
        #expect(stub.requests.isEmpty)
        let tokens = ServiceChannel(service: "google-oauth", transport: stub, clock: ManualClock(), gated: false)
        let running = Steps(stopAfter: 10)
        _ = try await SendWatch.$current.withValue(running.watch()) { try await tokens.send(limiter: nil, make: post, judge: { _ in .success }) }
        #expect(stub.requests.count == 1 && running.recorded.withLock { $0 } == 0)
        _ = try await SendWatch.$current.withValue(running.watch()) { try await channel(stub).send(limiter: nil, make: post, judge: { _ in .success }) }
        #expect(stub.requests.count == 2 && running.recorded.withLock { $0 } == 1)
    }

    @Test func aStepWaitingItsTurnStopsWaitingOnceTheRunStops() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: 1, clock: clock)
        try await limiter.acquire()
        try await limiter.acquire()
        // The next turn is 2 s away; the run stops after the first quarter second of the wait.
        let steps = Steps(stopAfter: 1)
        await #expect(throws: SendWatch.NotStarted.self) {
            try await limiter.acquire(for: steps.watch())
        }
        #expect(clock.sleeps == [0, 1, 0.25])
        // A step that has sent its change waits its turn whole, stopping or not.
        let begun = Steps(stopAfter: 1).watch()
        try await begun.willSend()
        try await limiter.acquire(for: begun)
        #expect(clock.sleeps == [0, 1, 0.25, 1.75], "one wait, not slices")
    }
}

@Suite struct SharedFetchTests {
    /// A waiter cancelled (a stopped apply's grace ran out) does not wait out a fetch that hangs: the fetch is cancelled.
    @Test func aCancelledWaiterCancelsAFetchThatHangs() async throws {
        let shared = SharedFetch<String>()
        let fetchCancelled = Mutex(false)
        let waiter = Task {
            try await shared.get {
                do { try await Task.sleep(for: .seconds(600)) } catch {
                    fetchCancelled.withLock { $0 = true }
                    throw error
                }
                return "token"
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        waiter.cancel()
        // Without the cancel reaching the fetch, the waiter had the token after the whole sleep, not an error.
        await #expect(throws: CancellationError.self) { _ = try await waiter.value }
        let cancelled = fetchCancelled.withLock { $0 }
        #expect(cancelled)
        // The next caller fetches afresh.
        #expect(try await shared.get { "fresh" } == "fresh")
    }
}
