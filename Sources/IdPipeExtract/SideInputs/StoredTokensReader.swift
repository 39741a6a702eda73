import IdPipeCore
import IdPipeCrypto

extension SideInputReader {
    /// A domain-shaped id (`apple.com`, `oidc.example-idp`): up to 32 characters of dot-separated lower-case labels,
    /// each starting with a letter. A token (hex, base64url) has no such shape.
    static func looksLikeProviderId(_ value: String) -> Bool {
        let labels = value.split(separator: ".", omittingEmptySubsequences: false)
        return value.utf8.count <= 32 && labels.count >= 2 && labels.allSatisfy { label in
            guard let first = label.utf8.first, (97...122).contains(first) else { return false }
            return label.utf8.allSatisfy { $0 == 45 || (48...57).contains($0) || (97...122).contains($0) }
        }
    }

    /// JSON Lines, one credential a line:
    /// `{"uid","provider":"apple.com","type":"refresh_token|access_token|authorization_code","token","captured_at"}` or
    /// `{"uid","provider":"facebook.com","facebook_id","login":"classic|limited","type"?:"access_token","token"?}`.
    /// Token values are kept in memory only, as `Secret`s; errors never quote them.
    public static func storedTokens(_ path: String) throws -> KeyedRows<StoredCredentials> {
        var result = KeyedRows<StoredCredentials>()
        result.reserveCapacity(lineCount(path))
        try forEachLineBytes(path) { line, number in
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { return }
            func fail(_ message: String) -> InputError {
                InputError(path: path, position: SourcePosition(file: path, line: number), message: message)
            }
            let fields = try parseFlatObject(line, fail: fail)
            // Which of two values counts is no guess to make: a second uid filed the token under another account.
            if let twice = fields.repeatedKey {
                let known = ["uid", "provider", "type", "token", "captured_at", "facebook_id", "login"]
                throw fail(known.contains(twice) ? "\(twice): appears twice on the line" : "a key appears twice on the line")
            }
            // Trimmed, as the tables' ids are: an id with spaces matched no account, and its token passed for none.
            guard let uid = fields["uid"]?.trimmingSpaces, !uid.isEmpty else { throw fail("uid: is missing") }
            var stored = result[uid] ?? StoredCredentials()
            switch fields["provider"] {
            case ProviderID.apple?:
                guard stored.apple == nil else { throw fail("uid '\(uid)' has a second apple.com token") }
                guard let typeText = fields["type"], let kind = AppleTokenKind(rawValue: typeText) else {
                    throw fail("type: expected refresh_token, access_token or authorization_code")
                }
                guard let token = fields["token"], !token.isEmpty else { throw fail("token: is missing") }
                guard let capturedText = fields["captured_at"], let captured = Timestamp.parseRFC3339(capturedText) else {
                    throw fail("captured_at: expected an RFC 3339 time")
                }
                stored.apple = StoredAppleToken(kind: kind, token: Secret(value: token, fingerprint: SecretFingerprint.of(token)), capturedAt: captured)
            case ProviderID.facebook?:
                guard stored.facebook == nil else { throw fail("uid '\(uid)' has a second facebook.com entry") }
                guard let facebookId = fields["facebook_id"], !facebookId.isEmpty else { throw fail("facebook_id: is missing") }
                guard let loginText = fields["login"], let login = FacebookLoginKind(rawValue: loginText) else {
                    throw fail("login: expected classic or limited")
                }
                let token = fields["token"].flatMap { $0.isEmpty ? nil : Secret(value: $0, fingerprint: SecretFingerprint.of($0)) }
                stored.facebook = StoredFacebookLogin(facebookId: facebookId, login: login, accessToken: token)
            case let other:
                // Quoted only when it looks like a provider id: a token pasted in the wrong field is not printed.
                let shown = other.map { value in Self.looksLikeProviderId(value) ? "'\(value)'" : "another value (not shown)" }
                throw fail("provider: expected apple.com or facebook.com, found \(shown ?? "nothing")")
            }
            result[uid] = stored
        }
        return result
    }

    /// The members of a one-level JSON object, in order; a handful, so they are looked up by a scan.
    struct FlatObject {
        var members: [(key: String, value: String)] = []

        subscript(_ key: String) -> String? {
            members.first(where: { $0.key == key })?.value
        }

        /// A key given more than once, if any.
        var repeatedKey: String? {
            for index in members.indices.dropFirst() where members[..<index].contains(where: { $0.key == members[index].key }) {
                return members[index].key
            }
            return nil
        }

        mutating func set(_ key: String, _ value: String) { members.append((key, value)) }
    }

    /// A one-level JSON object of strings (numbers and booleans become their text), on a line's bytes, read in place.
    static func parseFlatObject(_ buffer: UnsafeBufferPointer<UInt8>, fail: (String) -> InputError) throws -> FlatObject {
        var cursor = JSONCursor(bytes: buffer, start: 0, end: buffer.count)
        var fields = FlatObject()
        fields.members.reserveCapacity(8)
        do throws(JSONCursor.SyntaxError) {
            try cursor.expect(UInt8(ascii: "{"))
            if try cursor.peek() == UInt8(ascii: "}") { return fields }
            while true {
                let rawKey = try cursor.key()
                cursor.currentKey = rawKey
                let key = String(decoding: rawKey, as: UTF8.self)
                try cursor.expect(UInt8(ascii: ":"))
                switch try cursor.peek() {
                case UInt8(ascii: "\""): fields.set(key, try cursor.string())
                case UInt8(ascii: "t"), UInt8(ascii: "f"): fields.set(key, try cursor.bool() ? "true" : "false")
                case UInt8(ascii: "n"): try cursor.literal("null")
                default: fields.set(key, try cursor.numberText())
                }
                if try cursor.peek() == UInt8(ascii: ",") { cursor.position += 1; continue }
                try cursor.expect(UInt8(ascii: "}"))
                break
            }
            cursor.skipWhitespace()
            guard cursor.atEnd else { throw cursor.fail("text after the object") }
        } catch {
            // The message names the field and the problem, never the line's text (it may hold a token).
            throw fail("not a JSON object: \(error.field): \(error.message)")
        }
        return fields
    }
}
