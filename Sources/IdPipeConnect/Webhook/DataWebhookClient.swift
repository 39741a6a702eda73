import IdPipeCrypto
import Synchronization

/// The app backend's "delete this user's data" webhook: `POST {url}` with a JSON body naming the account and an
/// idempotency key, sent again with the same key after a timeout or a crash. Any 2xx means the data is deleted
/// (or deletion is durably queued by the backend); 429 and 5xx are retried; 401 and 403 (a wrong secret) stop the
/// run, and so do 404, 405 and 410 before the hook's first 2xx of the run (a wrong URL); any other status fails the
/// account. A hook answers 2xx for an account it holds nothing for: a repeat after a crash comes with the same key.
public final class DataWebhookClient: Sendable {
    public let url: String
    let secret: [UInt8]?
    let channel: ServiceChannel
    let limiter: RateLimiter
    /// Whether the hook has said yes once in this run: after that a 404 or 410 is about one account, not the URL.
    private let accepted = Atomic<Bool>(false)

    /// `secret`, when given, signs each body: `X-Idpipe-Signature: sha256=<hex HMAC-SHA256(secret, body)>`.
    public init(url: String, secret: String?, channel: ServiceChannel, rate: Double = 50) throws(ConnectorError) {
        _ = try Endpoint(url, service: channel.service)
        self.url = url
        self.secret = secret.map { Array($0.utf8) }
        self.channel = channel
        limiter = .perSecond(rate, clock: channel.clock)
    }

    /// The body for one account: stable for a given key, so a repeat is byte for byte the same request.
    public static func body(uid: String, idempotencyKey: String, run: String) -> [UInt8] {
        let object: JSONValue = .object(["event": "delete-user-data", "uid": .string(uid), "idempotency_key": .string(idempotencyKey), "run": .string(run)])
        return object.encoded()
    }

    /// Whether anything answers at the hook's address (`validate --check-services`, and apply before it starts): a HEAD
    /// request, which a hook takes for no deletion, sent past the channel's retries (a 503 or a 429 is an answer too,
    /// where the channel would try again, for minutes after a Retry-After). Its status is returned; the secret is not
    /// checked by it. A request with no answer (a dropped connection, a timeout) is sent again, up to `attempts` in all:
    /// sent once, one dropped connection stopped an apply before it began.
    public func probe(attempts: Int = 3, pause: Duration = .milliseconds(500)) async throws -> Int {
        let request = HTTPRequest(method: "HEAD", url: url, headers: [("User-Agent", IdPipeProduct.userAgent)], timeout: .seconds(10))
        var attempt = 1
        while true {
            do throws(TransportError) {
                return try await channel.transport.send(request).status
            } catch {
                guard attempt < attempts else {
                    throw ConnectorError.unavailable(service: channel.service, message: "\(ServiceChannel.origin(url)): \(error) (\(attempts) attempts)")
                }
            }
            try await Task.sleep(for: pause * attempt)
            attempt += 1
        }
    }

    public func deleteUserData(uid: String, idempotencyKey: String, run: String) async throws {
        let body = Self.body(uid: uid, idempotencyKey: idempotencyKey, run: run)
        var headers = [("Content-Type", "application/json"), ("Idempotency-Key", idempotencyKey), ("User-Agent", IdPipeProduct.userAgent)]
        if let secret {
            headers.append(("X-Idpipe-Signature", "sha256=" + Hex.encode(HMACSHA256.mac(key: secret, message: body))))
        }
        let request = HTTPRequest(method: "POST", url: url, headers: headers, body: body)
        let service = channel.service
        _ = try await channel.send(limiter: limiter, make: { request }, judge: { response in
            switch response.status {
            case 200..<300:
                self.accepted.store(true, ordering: .relaxed)
                return .success
            case 408: return .retry(reason: "HTTP 408")
            case 401, 403: return .fail(.configuration(service: service, message: "the webhook refused idpipe (HTTP \(response.status)): check the shared secret"))
            case let status where [404, 405, 410].contains(status) && !self.accepted.load(ordering: .relaxed):
                // Before any yes, the URL has no such hook: every account would fail alike, so the run stops (it
                // failed each in turn). After one, it is this account's answer.
                return .fail(.configuration(service: service, message: "the webhook answered HTTP \(response.status) (no such hook there): check stages.delete.data_webhook"))
            default:
                // The app's own words about its user (a name, an address) went into the reports in clear, on an
                // account row whose fields are masked: only the body's size is kept.
                let message = response.body.isEmpty ? "no body" : "a body of \(response.body.count) bytes, not kept: it may hold personal data"
                return .fail(.rejected(service: service, code: "HTTP \(response.status)", message: message))
            }
        })
    }
}
