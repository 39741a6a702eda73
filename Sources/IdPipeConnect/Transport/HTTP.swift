/// One HTTP exchange, independent of the library that carries it. Printing one shows the method and path
/// only: headers, bodies and query strings carry tokens and secrets.
public struct HTTPRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: [UInt8]?
    /// The whole exchange must finish within this, or it fails as a timeout (and may be retried).
    public var timeout: Duration
    /// What logs call this request where its path names an account (a uid, which may be an email or a phone number, or
    /// an app-scoped id): the operation, without the id. Nil shows the method and the path.
    public var shown: String?
    /// Whether it only reads (GET, HEAD, or a POST that looks up): an apply's step is not started by it (`SendWatch`).
    public var readOnly: Bool

    public init(method: String, url: String, headers: [(String, String)] = [], body: [UInt8]? = nil, timeout: Duration = .seconds(30),
                shown: String? = nil, readOnly: Bool = false) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.shown = shown
        self.readOnly = readOnly || method == "GET" || method == "HEAD"
    }

    /// The request as logs name it: `shown`, or the method and the path (never the query, which may hold a token).
    public var target: String { shown ?? "\(method) \(url.prefix { $0 != "?" })" }

    public func header(_ name: String) -> String? { headerValue(headers, name) }

    public var bodyText: String { body.map { String(decoding: $0, as: UTF8.self) } ?? "" }

    public var description: String { "\(target) (headers and body not shown)" }
    public var debugDescription: String { description }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, json: String) {
        self.init(status: status, headers: [("Content-Type", "application/json")], body: Array(json.utf8))
    }

    public func header(_ name: String) -> String? { headerValue(headers, name) }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// The first value of a header, by case-insensitive name.
private func headerValue(_ headers: [(String, String)], _ name: String) -> String? {
    let wanted = name.lowercased()
    return headers.first { $0.0.lowercased() == wanted }?.1
}

/// Why an exchange produced no response. All of these may be retried.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    case connectionFailed(String)
    case connectionClosed
    case timedOut

    public var description: String {
        switch self {
        case .connectionFailed(let reason): "connection failed: \(reason)"
        case .connectionClosed: "the connection closed before a response"
        case .timedOut: "timed out"
        }
    }
}

/// The replaceable HTTP layer: async-http-client in production, a stub in unit tests.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse
}

/// Where a service is reached. Anything but loopback must be HTTPS: tokens and keys travel in these requests.
public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
    public let base: String

    public init(_ text: String, service: String, allowPlainHTTP: Bool = false) throws(ConnectorError) {
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        guard let host = Endpoint.host(of: base) else {
            throw ConnectorError.configuration(service: service, message: "'\(text)' is not an http(s) URL")
        }
        if base.hasPrefix("http://"), !allowPlainHTTP, !Endpoint.isLoopback(host) {
            throw ConnectorError.configuration(service: service, message: "'\(text)' must be https:// (plain http is allowed only on loopback)")
        }
        self.base = base
    }

    public var description: String { base }

    public func url(_ path: String) -> String { base + path }

    static func host(of url: String) -> String? {
        let rest: Substring
        if url.hasPrefix("https://") {
            rest = url.dropFirst(8)
        } else if url.hasPrefix("http://") {
            rest = url.dropFirst(7)
        } else {
            return nil
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        if authority.hasPrefix("[") {
            return authority.firstIndex(of: "]").map { String(authority[authority.startIndex...$0]) }
        }
        return String(authority.prefix { $0 != ":" })
    }

    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.allSatisfy { UInt8($0) != nil } && octets[0] == "127"
    }
}
