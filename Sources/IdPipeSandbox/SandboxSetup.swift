import Foundation

/// The sandbox's folder: its keys, the matching client credentials, and `sandbox.json`.
///
/// `init` writes a Google service-account key file whose `token_uri` points at the sandbox, an Apple `.p8` key,
/// a Facebook app secret, and the public halves the sandbox verifies with. Point idpipe at the client files
/// and the sandbox at the folder.
public enum SandboxSetup {
    public static let configFile = "sandbox.json"
    public static let serviceAccountFile = "service-account.json"
    public static let facebookSecretFile = "facebook-app-secret.txt"
    public static let appleClientId = "com.example.idpipe"
    public static let facebookAppId = "1234567890123456"

    public struct Written: Sendable {
        public var appleKeyFile: String
        public var appleKeyId: String
        public var appleTeamId: String
    }

    /// Creates the folder's files for a sandbox on `port`; refuses to overwrite an existing `sandbox.json`.
    @discardableResult
    public static func initialize(directory: String, port: Int, projectId: String) throws -> Written {
        let files = FileManager.default
        try files.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let configPath = directory + "/" + configFile
        guard !files.fileExists(atPath: configPath) else { throw SandboxError("\(configPath) exists; remove the folder to start over") }
        guard let google = SandboxCrypto.generateKeyPair(ec: false), let apple = SandboxCrypto.generateKeyPair(ec: true) else {
            throw SandboxError("OpenSSL could not generate the sandbox keys")
        }
        let keyId = randomAlphanumeric(10)
        let teamId = randomAlphanumeric(10)
        let appleKeyFile = Self.appleKeyFile(keyId: keyId)
        let clientEmail = "idpipe-sandbox@\(projectId).iam.gserviceaccount.com"
        let serviceAccount = SJSON.object([
            ("type", .string("service_account")), ("project_id", .string(projectId)),
            ("private_key_id", .string(SandboxCrypto.sha256Hex(google.publicPEM).prefix(40).description)),
            ("private_key", .string(google.privatePEM)), ("client_email", .string(clientEmail)),
            ("client_id", .string("100000000000000000001")), ("token_uri", .string("http://127.0.0.1:\(port)/token")),
        ])
        let config = SJSON.object([
            ("project_id", .string(projectId)), ("port", .number(String(port))),
            ("google", .object([("client_email", .string(clientEmail)), ("public_key", .string("google-public.pem"))])),
            ("apple", .object([
                ("team_id", .string(teamId)), ("key_id", .string(keyId)), ("client_ids", .array([.string(appleClientId)])),
                ("public_key", .string("apple-public.pem")), ("private_key", .string(appleKeyFile)),
            ])),
            ("facebook", .object([("app_id", .string(facebookAppId)), ("app_secret_file", .string(facebookSecretFile))])),
        ])
        try write(serviceAccount.text, to: directory + "/" + serviceAccountFile, secret: true)
        try write(google.publicPEM, to: directory + "/google-public.pem", secret: false)
        try write(apple.privatePEM, to: directory + "/" + appleKeyFile, secret: true)
        try write(apple.publicPEM, to: directory + "/apple-public.pem", secret: false)
        try write(SandboxCrypto.randomHex(bytes: 16) + "\n", to: directory + "/" + facebookSecretFile, secret: true)
        try write(config.text + "\n", to: configPath, secret: false)
        let (loaded, _) = try load(directory: directory)
        try pointClients(directory: directory, config: loaded, port: port)
        return Written(appleKeyFile: appleKeyFile, appleKeyId: keyId, appleTeamId: teamId)
    }

    public static let clientServicesFile = "idpipe-services.yaml"

    /// Points the client files at the sandbox's actual port: the service account's `token_uri`, and
    /// `idpipe-services.yaml`, a `services:` section for idpipe pipeline files (absolute paths, so it can be
    /// appended to a pipeline anywhere). `serve` calls it again once it knows its port.
    public static func pointClients(directory: String, config: SandboxConfig, port: Int) throws {
        let folder = directory.hasPrefix("/") ? directory : FileManager.default.currentDirectoryPath + "/" + directory
        let accountPath = folder + "/" + serviceAccountFile
        guard let data = FileManager.default.contents(atPath: accountPath), var account = try? SJSON.parse([UInt8](data)) else {
            throw SandboxError("cannot read \(accountPath)")
        }
        account.set("token_uri", .string("http://127.0.0.1:\(port)/token"))
        try write(account.text, to: accountPath, secret: true)
        var lines = ["services:", "  google:", "    project_id: \(config.projectId)", "    credentials: \(accountPath)",
                     "    endpoint: http://127.0.0.1:\(port)/v1"]
        if let apple = config.apple {
            lines += ["  apple:", "    team_id: \(apple.teamId)", "    key_id: \(apple.keyId)", "    client_id: \(apple.clientIds.first ?? appleClientId)",
                      "    private_key: \(folder)/\(appleKeyFile(keyId: apple.keyId))", "    endpoint: http://127.0.0.1:\(port)"]
        }
        if let facebook = config.facebook {
            lines += ["  facebook:", "    app_id: \"\(facebook.appId)\"", "    app_secret_file: \(folder)/\(facebookSecretFile)",
                      "    endpoint: http://127.0.0.1:\(port)"]
        }
        lines += ["  firestore:", "    endpoint: http://127.0.0.1:\(port)/v1", "  realtime_database:", "    endpoint: http://127.0.0.1:\(port)",
                  "  storage:", "    endpoint: http://127.0.0.1:\(port)/storage/v1"]
        lines.append("# stages.delete.data_webhook: http://127.0.0.1:\(port)/hooks/delete-user-data")
        try write(lines.joined(separator: "\n") + "\n", to: folder + "/" + clientServicesFile, secret: false)
    }

    /// Apple's name for a downloaded key: `AuthKey_<Key ID>.p8`.
    public static func appleKeyFile(keyId: String) -> String { "AuthKey_\(keyId).p8" }

    /// Reads `sandbox.json` and the public keys it names.
    public static func load(directory: String) throws -> (SandboxConfig, port: Int) {
        let path = directory + "/" + configFile
        guard let data = FileManager.default.contents(atPath: path) else { throw SandboxError("cannot read \(path); run `idpipe-sandbox init` first") }
        let document: SJSON
        do { document = try SJSON.parse([UInt8](data)) } catch { throw SandboxError("\(path): \(error)") }
        func text(_ value: SJSON?, _ name: String) throws -> String {
            guard let string = value?.string, !string.isEmpty else { throw SandboxError("\(path): missing \(name)") }
            return string
        }
        func file(_ name: String) throws -> String {
            guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { throw SandboxError("cannot read \(directory)/\(name)") }
            return String(decoding: data, as: UTF8.self)
        }
        var config = SandboxConfig(projectId: try text(document["project_id"], "project_id"))
        if let google = document["google"] {
            config.google = .init(clientEmail: try text(google["client_email"], "google.client_email"),
                                  publicKeyPEM: try file(try text(google["public_key"], "google.public_key")))
        }
        if let apple = document["apple"] {
            config.apple = .init(teamId: try text(apple["team_id"], "apple.team_id"), keyId: try text(apple["key_id"], "apple.key_id"),
                                 clientIds: apple["client_ids"]?.array?.compactMap(\.string) ?? [],
                                 publicKeyPEM: try file(try text(apple["public_key"], "apple.public_key")))
        }
        if let facebook = document["facebook"] {
            let secret = try file(try text(facebook["app_secret_file"], "facebook.app_secret_file")).trimmingCharacters(in: .whitespacesAndNewlines)
            config.facebook = .init(appId: try text(facebook["app_id"], "facebook.app_id"), appSecret: secret)
        }
        return (config, Int(document["port"]?.int ?? 8790))
    }

    private static func write(_ text: String, to path: String, secret: Bool) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: secret ? 0o600 : 0o644]) else {
            throw SandboxError("cannot write \(path)")
        }
    }

    private static func randomAlphanumeric(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }
}
