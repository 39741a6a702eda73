/// Cloud Storage JSON API v1: list the objects under a prefix (every page) and delete them one by one. An
/// object that is already gone (404) deletes as success.
public final class StorageClient: Sendable {
    public static let productionBase = "https://storage.googleapis.com/storage/v1"
    static let pageSize = 1000

    let base: Endpoint
    let call: GoogleCall
    let limiter: RateLimiter

    public init(base: Endpoint, tokens: any AccessTokenSource, channel: ServiceChannel, rate: Double) {
        self.base = base
        call = GoogleCall(channel: channel, tokens: tokens)
        limiter = .perSecond(rate, clock: channel.clock)
    }

    /// `GET /b/{bucket}/o?prefix=…`, every page: the names of the objects under the prefix.
    public func objects(bucket: String, prefix: String) async throws -> [String] {
        var names: [String] = []
        var token: String?
        repeat {
            var url = base.url("/b/\(PathSegment.escape(bucket))/o?prefix=\(FormBody.escape(prefix))&maxResults=\(Self.pageSize)")
            url += "&fields=items(name),nextPageToken"
            if let token { url += "&pageToken=\(FormBody.escape(token))" }
            let body = try await call.object("GET", url, json: nil, limiter: limiter, operation: "objects.list")
            for item in body["items"]?.array ?? [] {
                guard let name = item["name"]?.string, name.hasPrefix(prefix) else {
                    throw ConnectorError.badResponse(service: call.channel.service, message: "objects.list: an item without a name under the prefix")
                }
                names.append(name)
            }
            token = GoogleCall.nextPageToken(body)
        } while token != nil
        return names
    }

    /// `DELETE /b/{bucket}/o/{object}` (the whole name is one escaped segment: `/` becomes `%2F`).
    public func delete(bucket: String, object: String) async throws {
        _ = try await call.send("DELETE", base.url("/b/\(PathSegment.escape(bucket))/o/\(PathSegment.escape(object))"), json: nil,
                                limiter: limiter, accept: [404], operation: "objects.delete")
    }
}
