import IdPipeCore

/// Exponential backoff with jitter. A `Retry-After` from the service wins when it asks for longer, and is spread too.
public struct RetryPolicy: Sendable {
    /// Attempts that fail (a 5xx, a dropped connection, a timeout), the first one included, before giving up.
    public var maxAttempts: Int
    /// Attempts the service turns away for its rate (a 429), before giving up. Many more: a quota is the normal
    /// state of a large run, not a fault, and a request turned away was not served.
    public var maxThrottledAttempts: Int
    /// Attempts that cannot connect at all, before a service that has answered nothing in this run is taken to be
    /// misconfigured (or down) and the run stops: fewer, so a wrong endpoint is said at once (a refused connection fails
    /// its attempt at once; an address that never answers spends the HTTP client's 10 s connect timeout on each).
    public var maxUnreachedAttempts: Int
    public var baseDelay: Double
    public var maxDelay: Double
    /// The longest `Retry-After` honoured; a longer one is cut to this (and logged).
    public var maxRetryAfter: Double
    /// A factor in [0.5, 1] applied to each backoff; replaced by a constant in tests.
    public var jitter: @Sendable () -> Double

    public init(maxAttempts: Int = 8, maxThrottledAttempts: Int = 24, maxUnreachedAttempts: Int = 3, baseDelay: Double = 0.5, maxDelay: Double = 30, maxRetryAfter: Double = 300,
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0.5...1) }) {
        self.maxAttempts = maxAttempts
        self.maxThrottledAttempts = maxThrottledAttempts
        self.maxUnreachedAttempts = maxUnreachedAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.jitter = jitter
    }

    /// The wait before attempt `attempt + 1`, after attempt `attempt` (1-based) failed transiently, `throttled`
    /// of the attempts so far having been turned away for the rate; nil when either budget is spent.
    public func delay(afterAttempt attempt: Int, throttled: Int = 0, retryAfter: Double?) -> Double? {
        guard attempt - throttled < maxAttempts, throttled < maxThrottledAttempts else { return nil }
        let exponential = min(maxDelay, baseDelay * Double(1 << min(attempt - 1, 30))) * jitter()
        guard let retryAfter else { return exponential }
        // Up to half as long again, at random: the requests one throttled moment turned away would otherwise all
        // come back at the same instant and be turned away together again.
        return max(exponential, min(retryAfter * (2 - jitter()), maxRetryAfter))
    }

    /// `Retry-After` as delta-seconds or an IMF-fixdate (`Wed, 21 Oct 2026 07:28:00 GMT`), relative to `unixNow`.
    public static func parseRetryAfter(_ value: String, unixNow: Int64) -> Double? {
        let text = value.trimmingSpaces
        if let seconds = Int64(text) { return seconds >= 0 ? Double(seconds) : nil }
        guard let date = IMFDate.parse(text) else { return nil }
        return Double(max(0, date - unixNow))
    }
}

/// HTTP dates in the one form servers must send (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
enum IMFDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
              let day = Int64(parts[1]), let month = months.firstIndex(of: String(parts[2])), let year = Int64(parts[3]) else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int64($0) }
        guard time.count == 3, (1...31).contains(day), time[0] < 24, time[1] < 60, time[2] < 61 else { return nil }
        let days = Int64(Timestamp.daysFromCivil(year: Int(year), month: month + 1, day: Int(day)))
        return days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2]
    }
}

