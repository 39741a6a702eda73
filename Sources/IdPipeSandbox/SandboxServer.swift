import NIOCore
import NIOHTTP1
import NIOPosix

/// The sandbox on a loopback port: HTTP/1.1 with keep-alive, one `SandboxService` behind it.
public final class SandboxServer: Sendable {
    public let service: SandboxService
    public let host: String
    public let port: Int
    private let channel: any Channel

    private init(service: SandboxService, host: String, port: Int, channel: any Channel) {
        self.service = service
        self.host = host
        self.port = port
        self.channel = channel
    }

    /// Binds `host:port` (port 0 picks a free one; see `port`).
    public static func start(service: SandboxService, host: String = "127.0.0.1", port: Int = 0) async throws -> SandboxServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(SandboxHTTPHandler(service: service))
                }
            }
            .bind(host: host, port: port).get()
        guard let bound = channel.localAddress?.port else { throw SandboxError("the sandbox could not bind \(host):\(port)") }
        return SandboxServer(service: service, host: host, port: bound, channel: channel)
    }

    /// `127.0.0.1:PORT`, the form `FIREBASE_AUTH_EMULATOR_HOST` takes.
    public var hostAndPort: String { "\(host):\(port)" }
    public var baseURL: String { "http://\(hostAndPort)" }

    public func stop() async {
        try? await channel.close()
    }

    /// Waits until the server's channel closes.
    public func wait() async throws {
        try await channel.closeFuture.get()
    }
}

final class SandboxHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let service: SandboxService
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(service: SandboxService) {
        self.service = service
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body.removeAll(keepingCapacity: true)
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head else { return }
            self.head = nil
            let request = SandboxRequest(method: head.method.rawValue, target: head.uri,
                                         headers: head.headers.map { ($0.name, $0.value) }, body: body)
            let reply = service.handle(request)
            let keepAlive = head.isKeepAlive
            let version = head.version
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            switch reply {
            case .respond(let response, let delay):
                if delay > 0 {
                    context.eventLoop.scheduleTask(in: .milliseconds(Int64(delay))) {
                        let (handler, context) = bound.value
                        handler.write(response, version: version, keepAlive: keepAlive, context: context)
                    }
                } else {
                    write(response, version: version, keepAlive: keepAlive, context: context)
                }
            case .drop(let delay):
                context.eventLoop.scheduleTask(in: .milliseconds(Int64(delay))) {
                    bound.value.1.close(promise: nil)
                }
            }
        }
    }

    private func write(_ response: SandboxResponse, version: HTTPVersion, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(response.headers)
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
        headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        let head = HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !response.body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: response.body.count)
            buffer.writeBytes(response.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
