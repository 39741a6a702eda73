import AsyncHTTPClient
import Dispatch
import IdPipeConnect
import NIOCore
import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// The production transport: async-http-client with a pool sized to the workers. Call `shutdown()` before exit.
public final class AsyncHTTPTransport: HTTPTransport {
    private let client: HTTPClient
    /// Responses larger than this are refused (no endpoint used here answers with more than a page of users).
    let maxBodyBytes: Int

    public init(connectionsPerHost: Int = 16, maxBodyBytes: Int = 64 << 20) {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost)
        // A refused connection fails its requests at once, for the channel's retry policy to judge: the pool's own retries
        // of the connection spent its 10 s connect timeout on each attempt, and a service that went down mid-run took
        // about 2 minutes (8 attempts) to stop the run (114 s in a measured import; the policy's back-off alone is ~45 s).
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .enabled(limit: .ratio(50))
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.maxBodyBytes = maxBodyBytes
    }

    public func shutdown() async {
        try? await client.shutdown()
    }

    deinit {
        // A transport dropped without `shutdown()` still closes its connections (the client stays alive until then).
        // After an awaited shutdown this only reports "already shut down", which is ignored.
        client.shutdown(queue: .global()) { _ in }
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body {
            outgoing.body = .bytes(ByteBuffer(bytes: body))
        }
        let seconds = request.timeout.components.seconds
        let timeout = TimeAmount.milliseconds(seconds * 1000 + request.timeout.components.attoseconds / 1_000_000_000_000_000)
        do {
            let response = try await client.execute(outgoing, timeout: timeout)
            let body = try await response.body.collect(upTo: maxBodyBytes)
            return HTTPResponse(status: Int(response.status.code),
                                headers: response.headers.map { ($0.name, $0.value) },
                                body: Array(buffer: body))
        } catch let error as HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout:
                throw .timedOut
            case .remoteConnectionClosed:
                throw .connectionClosed
            default:
                throw .connectionFailed(String(describing: error))
            }
        } catch let error as IOError {
            // Its description read "connection reset (error set): Connection refused (errno: 111)" for a refused connection.
            throw .connectionFailed("\(String(cString: strerror(error.errnoCode))) (errno \(error.errnoCode))")
        } catch {
            throw .connectionFailed(String(describing: error))
        }
    }
}
