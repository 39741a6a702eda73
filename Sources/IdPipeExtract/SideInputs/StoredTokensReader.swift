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
    /// Only the ids and tokens kept become strings; the rest is compared and parsed where it lies in the line. With a
    /// string for every key and value, and each id looked up twice (to read, then to store), this file was the last
    /// side input to finish and held up the plan's start (0.25 s for the 106k lines of the 1M benchmark).
    /// The keys a line of stored tokens may have (others are ignored, and never quoted: they may be anything).
    static let storedTokenKeys: Set<String> = ["uid", "provider", "type", "token", "captured_at", "facebook_id", "login"]

    public static func storedTokens(_ path: String) throws -> KeyedRows<StoredCredentials> {
        var result = KeyedRows<StoredCredentials>()
        result.reserveCapacity(lineCount(path))
        var fields = FlatObject()
        try forEachLineBytes(path) { line, number in
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { return }
            func fail(_ message: String) -> InputError {
                InputError(path: path, position: SourcePosition(file: path, line: number), message: message)
            }
            try parseFlatObject(line, into: &fields, fail: fail)
            // Every value of this file is a string: `"token": true` was taken for the token "true", and sent.
            // (A Facebook id written as a number, which it is, is taken as its digits.)
            for member in fields.members {
                guard case .notString(let text) = member.value else { continue }
                let key = String(decoding: member.key, as: UTF8.self)
                guard Self.storedTokenKeys.contains(key) else { continue }
                if key == "facebook_id" && text.utf8.allSatisfy(TextScan.isASCIIDigit) { continue }
                throw fail("\(key): expected a string, found a number or true/false")
            }
            // Which of two values counts is no guess to make: a second uid filed the token under another account.
            if let twice = fields.repeatedKey {
                throw fail(Self.storedTokenKeys.contains(twice) ? "\(twice): appears twice on the line" : "a key appears twice on the line")
            }
            // Trimmed, as the tables' ids are: an id with spaces matched no account, and its token passed for none.
            guard let uid = fields.text("uid")?.trimmingSpaces, !uid.isEmpty else { throw fail("uid: is missing") }
            if let problem = hiddenCharacter(in: uid) { throw fail("uid: \(problem)") }
            let provider = fields.value("provider")
            if provider?.equals(ProviderID.apple) == true {
                try result.modify(uid) { entry in
                    // The uid is not quoted: on a line with its values mixed up, a token stands there.
                    guard entry?.apple == nil else { throw fail("uid: a second apple.com token for an account an earlier line has one for") }
                    entry = StoredCredentials(apple: try appleToken(fields, fail: fail), facebook: entry?.facebook)
                }
            } else if provider?.equals(ProviderID.facebook) == true {
                try result.modify(uid) { entry in
                    guard entry?.facebook == nil else { throw fail("uid: a second facebook.com entry for an account an earlier line has one for") }
                    entry = StoredCredentials(apple: entry?.apple, facebook: try facebookLogin(fields, fail: fail))
                }
            } else {
                // Quoted only when it looks like a provider id: a token pasted in the wrong field is not printed.
                let shown = provider.map { value in
                    let text = value.text
                    return Self.looksLikeProviderId(text) ? "'\(text)'" : "another value (not shown)"
                }
                throw fail("provider: expected apple.com or facebook.com, found \(shown ?? "nothing")")
            }
        }
        return result
    }

    private static func appleToken(_ fields: FlatObject, fail: (String) -> InputError) throws -> StoredAppleToken {
        guard let kind = fields.value("type")?.named(AppleTokenKind.self) else {
            throw fail("type: expected refresh_token, access_token or authorization_code")
        }
        guard let token = fields.text("token"), !token.isEmpty else { throw fail("token: is missing") }
        try refuseCharactersNoTokenHas(token, "token", fail: fail)
        guard let captured = fields.value("captured_at")?.timestamp else {
            let flaw = fields.text("captured_at").flatMap(Timestamp.rfc3339Flaw).map { " (\($0))" } ?? ""
            throw fail("captured_at: expected an RFC 3339 time\(flaw)")
        }
        return StoredAppleToken(kind: kind, token: Secret(value: token, fingerprint: SecretFingerprint.of(token)), capturedAt: captured)
    }

    private static func facebookLogin(_ fields: FlatObject, fail: (String) -> InputError) throws -> StoredFacebookLogin {
        guard let facebookId = fields.text("facebook_id"), !facebookId.isEmpty else { throw fail("facebook_id: is missing") }
        try refuseCharactersNoTokenHas(facebookId, "facebook_id", fail: fail)
        // An app-scoped id is digits. Anything else is no id (a token put in the wrong field, say), which the plan kept in
        // the store and apply quoted in its refusal: not quoted here either.
        guard facebookId.withUTF8Bytes({ $0.allSatisfy(TextScan.isASCIIDigit) }) else { throw fail("facebook_id: an app-scoped id is digits only") }
        guard let login = fields.value("login")?.named(FacebookLoginKind.self) else {
            throw fail("login: expected classic or limited")
        }
        let text = fields.text("token") ?? ""
        try refuseCharactersNoTokenHas(text, "token", fail: fail)
        let token = text.isEmpty ? nil : Secret(value: text, fingerprint: SecretFingerprint.of(text))
        return StoredFacebookLogin(facebookId: facebookId, login: login, accessToken: token)
    }

    /// A token or id with white space (or a control character) at either end, or any character beyond printable ASCII
    /// within, is no value Apple or Facebook issued: a copy-paste slip, which apply would send as it is and see refused.
    /// Said without quoting the value.
    private static func refuseCharactersNoTokenHas(_ value: String, _ field: String, fail: (String) -> InputError) throws {
        guard let first = value.unicodeScalars.first, let last = value.unicodeScalars.last else { return }
        func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F }
        if isSpace(first) || isSpace(last) { throw fail("\(field): has white space or a control character at its start or end") }
        // Within it too: tokens and ids are printable ASCII; a NUL, a NEL, a zero-width or other space written as an
        // escape was taken and sent. Over the bytes in place: the generic scan of the UTF-8 view cost 0.2 s of CPU on
        // the 1M benchmark's tokens.
        if value.withUTF8Bytes({ $0.contains { $0 <= 0x20 || $0 >= 0x7F } }) {
            throw fail("\(field): has a character no \(field == "token" ? "token" : "id") has (a space, a control or invisible character, or one beyond ASCII)")
        }
    }

    /// The members of a one-level JSON object, in order, as they lie in the line: valid only while the line is. A
    /// handful, so they are looked up by a scan. One is kept for all the lines of a file, emptied for each.
    struct FlatObject {
        /// A member's value: the bytes of a string without escapes (or of a number, or a literal's text), else the
        /// decoded text of a string with escapes.
        enum Value {
            case bytes(UnsafeBufferPointer<UInt8>)
            case decoded(String)
            /// A number or a boolean, as written: no value of this file is one (`true` was taken for a token).
            case notString(String)

            var text: String {
                switch self {
                case .bytes(let bytes): String(decoding: bytes, as: UTF8.self)
                case .decoded(let text), .notString(let text): text
                }
            }

            func equals(_ text: String) -> Bool {
                switch self {
                case .bytes(let bytes): TextScan.sameBytes(bytes, text)
                case .decoded(let decoded), .notString(let decoded): decoded == text
                }
            }

            /// The case of `Kind` whose raw value this is, compared in place.
            func named<Kind: CaseIterable & RawRepresentable<String>>(_: Kind.Type) -> Kind? {
                Kind.allCases.first { equals($0.rawValue) }
            }

            var timestamp: Int64? {
                switch self {
                case .bytes(let bytes): Timestamp.parseRFC3339(bytes)
                case .decoded(let text): Timestamp.parseRFC3339(text)
                case .notString: nil
                }
            }
        }

        var members: [(key: UnsafeBufferPointer<UInt8>, value: Value)] = []

        func value(_ key: String) -> Value? {
            members.first(where: { TextScan.sameBytes($0.key, key) })?.value
        }

        func text(_ key: String) -> String? {
            value(key)?.text
        }

        /// A key given more than once, if any.
        var repeatedKey: String? {
            for index in members.indices.dropFirst() where members[..<index].contains(where: { TextScan.sameBytes($0.key, members[index].key) }) {
                return String(decoding: members[index].key, as: UTF8.self)
            }
            return nil
        }
    }

    /// A one-level JSON object of strings (numbers and booleans are kept as their text; a null as no member), on a
    /// line's bytes, read in place into `fields`.
    static func parseFlatObject(_ buffer: UnsafeBufferPointer<UInt8>, into fields: inout FlatObject, fail: (String) -> InputError) throws {
        var cursor = JSONCursor(bytes: buffer, start: 0, end: buffer.count)
        fields.members.removeAll(keepingCapacity: true)
        do throws(JSONCursor.SyntaxError) {
            try cursor.expect(UInt8(ascii: "{"))
            if try cursor.peek() == UInt8(ascii: "}") { return }
            while true {
                cursor.currentKey = nil
                let key = try cursor.key()
                cursor.currentKey = key
                try cursor.expect(UInt8(ascii: ":"))
                switch try cursor.peek() {
                case UInt8(ascii: "\""):
                    let start = cursor.position
                    switch try cursor.plainString() {
                    case .bytes(let bytes): fields.members.append((key, .bytes(bytes)))
                    case .null: break  // not reached: the value starts with a quote
                    case .escaped:
                        cursor.position = start
                        fields.members.append((key, .decoded(try cursor.string())))
                    }
                case UInt8(ascii: "t"), UInt8(ascii: "f"): fields.members.append((key, .notString(try cursor.bool() ? "true" : "false")))
                case UInt8(ascii: "n"): try cursor.literal("null")
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    // Another key's value may be anything (it is ignored); one of this file's is a string.
                    guard storedTokenKeys.contains(where: { TextScan.sameBytes(key, $0) }) else {
                        try cursor.skipValue()
                        break
                    }
                    throw cursor.fail("expected a string, found an object or an array")
                case let byte:
                    guard byte == UInt8(ascii: "-") || (48...57).contains(byte) else { throw cursor.fail("expected a string in double quotes") }
                    let start = cursor.position
                    try cursor.skipNumber()
                    fields.members.append((key, .notString(String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<cursor.position]), as: UTF8.self))))
                }
                if try cursor.peek() == UInt8(ascii: ",") { cursor.position += 1; continue }
                try cursor.expect(UInt8(ascii: "}"))
                break
            }
            cursor.skipWhitespace()
            guard cursor.atEnd else {
                cursor.currentKey = nil
                throw cursor.fail("text after the object")
            }
        } catch {
            // The message names the field and the problem, never the line's text (it may hold a token), nor a key
            // that is not this file's (a token may stand there too).
            guard let key = cursor.currentKey else { throw fail("not a JSON object: \(error.message)") }
            let known = storedTokenKeys.contains { TextScan.sameBytes(key, $0) }
            throw fail(known ? "\(error.field): \(error.message)" : "the value of a key idpipe does not read: \(error.message)")
        }
    }
}
