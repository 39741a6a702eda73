/// How a remote call ended when it did not succeed. The split decides what the run does next:
/// a configuration error stops the whole run (every account would fail the same way), a rejection fails
/// one account, and `exhausted` means retries ran out on a transient condition.
public enum ConnectorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Credentials, keys or endpoints are wrong (`invalid_client`, 401/403, a bad key file).
    case configuration(service: String, message: String)
    /// The service refused this one request (`USER_NOT_FOUND`, `invalid_grant`, ...). Not retried.
    case rejected(service: String, code: String, message: String)
    /// Transient failures (429, 5xx, dropped connections, timeouts) went on past the retry budget. Apply stops the run at
    /// it (the service keeps failing), leaving the action for resume.
    case exhausted(service: String, attempts: Int, last: String)
    /// A single-use request (an authorization code) whose answer was lost: not sent again, as the first may have been
    /// carried out. Fails its one action, for good.
    case answerLost(service: String, last: String)
    /// The response could not be understood.
    case badResponse(service: String, message: String)
    /// A service that answered earlier in the run could not be reached on any attempt of a request: it is down (or
    /// the network to it is). Stops the run, resumable, rather than fail every account in turn.
    case unavailable(service: String, message: String)

    public var service: String {
        switch self {
        case .configuration(let service, _), .rejected(let service, _, _), .exhausted(let service, _, _), .badResponse(let service, _),
             .unavailable(let service, _), .answerLost(let service, _):
            service
        }
    }

    public var stopsRun: Bool {
        switch self {
        case .configuration, .unavailable: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .configuration(let service, let message): "\(service): configuration error: \(message)"
        case .rejected(let service, let code, let message): message.isEmpty ? "\(service): \(code)" : "\(service): \(code): \(message)"
        case .exhausted(let service, let attempts, let last): "\(service): gave up after \(attempts) attempts; last: \(last)"
        case .badResponse(let service, let message): "\(service): unexpected response: \(message)"
        case .unavailable(let service, let message): "\(service): unavailable: \(message)"
        case .answerLost(let service, let last): "\(service): the answer was lost (\(last)); not sent again, as the first may have been carried out"
        }
    }
}
