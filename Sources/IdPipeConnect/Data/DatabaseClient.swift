/// Firebase Realtime Database REST: `GET {url}{path}.json` to see what a path holds and `DELETE` to remove it
/// (a path that holds nothing deletes as success). With an endpoint override (a sandbox or the emulator), the
/// instance goes in `?ns=` as the emulator expects.
public final class DatabaseClient: Sendable {
    let origin: String
    /// `?ns=<instance>` after an endpoint override, else empty.
    let namespace: String
    let call: GoogleCall
    let limiter: RateLimiter

    /// `url` is the database's own (`https://<instance>.firebaseio.com` or `…firebasedatabase.app`).
    public init(url: String, instance: String, override: Endpoint?, tokens: any AccessTokenSource, channel: ServiceChannel, rate: Double) throws(ConnectorError) {
        if let override {
            origin = override.base
            namespace = "ns=\(FormBody.escape(instance))"
        } else {
            origin = try Endpoint(url, service: channel.service).base
            namespace = ""
        }
        call = GoogleCall(channel: channel, tokens: tokens)
        limiter = .perSecond(rate, clock: channel.clock)
    }

    private func url(_ path: String, _ query: String = "") -> String {
        let parameters = [namespace, query].filter { !$0.isEmpty }.joined(separator: "&")
        return origin + PathSegment.escapePath(path) + ".json" + (parameters.isEmpty ? "" : "?" + parameters)
    }

    /// How many nodes the path holds: the node itself and every node under it (0 when it holds nothing).
    public func nodeCount(_ path: String) async throws -> Int {
        let response = try await call.send("GET", url(path), json: nil, limiter: limiter, operation: "GET \(Self.describe(path))")
        guard let value = JSONValue.decode(response.body) else {
            throw ConnectorError.badResponse(service: call.channel.service, message: "GET: the body is not JSON")
        }
        return Self.nodes(in: value)
    }

    /// `DELETE {path}.json?print=silent`: removes the path and everything under it.
    public func delete(_ path: String) async throws {
        _ = try await call.send("DELETE", url(path, "print=silent"), json: nil, limiter: limiter, operation: "DELETE \(Self.describe(path))")
    }

    static func nodes(in value: JSONValue) -> Int {
        switch value {
        case .null: 0
        case .object(let members): 1 + members.values.reduce(0) { $0 + nodes(in: $1) }
        case .array(let items): 1 + items.reduce(0) { $0 + nodes(in: $1) }
        default: 1
        }
    }

    /// A path for an error message: its depth, not its keys (they hold uids).
    static func describe(_ path: String) -> String {
        "a path \(path.split(separator: "/").count) levels deep"
    }
}
