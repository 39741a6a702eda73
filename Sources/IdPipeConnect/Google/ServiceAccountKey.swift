import Foundation
import IdPipeCrypto

/// A Google service-account key file (the JSON that `GOOGLE_APPLICATION_CREDENTIALS` names).
/// Its description names the account and key id, never the key.
public struct ServiceAccountKey: Sendable, CustomStringConvertible {
    public let projectId: String
    public let clientEmail: String
    public let privateKeyId: String
    public let tokenURI: String
    public let key: SigningKey

    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    public var description: String { "service account \(clientEmail) (key \(privateKeyId))" }

    /// Parses a key file's bytes; `file` names it in errors.
    public init(json bytes: [UInt8], file: String) throws(ConnectorError) {
        func fail(_ message: String) -> ConnectorError {
            .configuration(service: "google-oauth", message: "\(file): \(message)")
        }
        guard let document = JSONValue.decode(bytes)?.object else { throw fail("not a JSON object") }
        func field(_ name: String) throws(ConnectorError) -> String {
            guard let value = document[name]?.string, !value.isEmpty else { throw fail("missing string field '\(name)'") }
            return value
        }
        guard try field("type") == "service_account" else {
            // Quoted only when it reads as a word: a key pasted into the wrong field stands there.
            let type = document["type"]?.string.flatMap(Redaction.code).map { "'\($0)'" } ?? "another value (not shown)"
            throw fail("field 'type' is \(type), expected 'service_account'")
        }
        projectId = try field("project_id")
        clientEmail = try field("client_email")
        privateKeyId = try field("private_key_id")
        // Absent, Google's; present, a text (a number there was taken for absent, and Google's endpoint asked instead).
        if let uri = document["token_uri"] {
            guard let text = uri.string, !text.isEmpty else { throw fail("field 'token_uri' is not a URL (a text)") }
            tokenURI = text
        } else {
            tokenURI = ServiceAccountKey.defaultTokenURI
        }
        let pem = try field("private_key")
        do throws(CryptoError) {
            key = try SigningKey(pem: pem, algorithm: .rs256)
        } catch {
            throw fail("field 'private_key': \(error.message)")
        }
    }

    public static func load(path: String) throws(ConnectorError) -> ServiceAccountKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .configuration(service: "google-oauth", message: "cannot read the service-account key file \(Redaction.path(path))")
        }
        return try ServiceAccountKey(json: Array(data), file: path)
    }
}
