import IdPipeConnect
import Logging
import Synchronization

/// A transport that records every request and answers from a script, in order.
final class StubTransport: HTTPTransport {
    enum Answer: Sendable {
        case response(HTTPResponse)
        case failure(TransportError)
    }

    private let state: Mutex<(requests: [HTTPRequest], answers: [Answer])>

    init(_ answers: [Answer] = []) {
        state = Mutex(([], answers))
    }

    convenience init(json answers: (Int, String)...) {
        self.init(answers.map { .response(HTTPResponse(status: $0.0, json: $0.1)) })
    }

    func enqueue(_ answer: Answer) { state.withLock { $0.answers.append(answer) } }

    var requests: [HTTPRequest] { state.withLock { $0.requests } }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let answer = state.withLock { state -> Answer? in
            state.requests.append(request)
            return state.answers.isEmpty ? nil : state.answers.removeFirst()
        }
        switch answer {
        case .response(let response)?: return response
        case .failure(let error)?: throw error
        case nil: return HTTPResponse(status: 599, json: #"{"error":"the stub has no more answers"}"#)
        }
    }
}

func channel(_ transport: StubTransport, clock: ManualClock = ManualClock(), service: String = "identitytoolkit",
             log: CapturedLog? = nil) -> ServiceChannel {
    ServiceChannel(service: service, transport: transport, clock: clock, retry: RetryPolicy(maxAttempts: 4, jitter: { 1 }), maxInFlight: 4,
                   logger: log.map { log in Logger(label: "test.\(service)") { _ in log } })
}

/// A log handler that keeps every line logged through it, at every level.
struct CapturedLog: LogHandler, Sendable {
    private let store = Store()
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    final class Store: Sendable {
        let lines = Mutex<[String]>([])
    }

    var lines: [String] { store.lines.withLock { $0 } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.lines.withLock { $0.append("\(event.level): \(event.message)") }
    }
}

/// Parses a JSON body for comparisons that ignore key order and spacing.
func json(_ bytes: [UInt8]?) -> JSONValue? { bytes.flatMap(JSONValue.decode) }
func json(_ text: String) -> JSONValue? { JSONValue.decode(Array(text.utf8)) }
