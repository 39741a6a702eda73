import IdPipeCore

/// Text a service sent back, made safe to keep. Error messages go to stderr, the reports, the ledger and the state
/// store; a service may quote the request in them (Facebook's "Malformed access token EAAB…", a proxy echoing the
/// request it refused), which would put a token, a client secret or a key there. So every error text taken from an
/// answer passes through `scrubbed`, and every error code through `code`.
public enum Redaction {
    public static let marker = "[redacted]"
    /// Kept texts are cut here: an answer's error is a line, not a page.
    static let maxLength = 300
    /// What is scanned of a text: enough past `maxLength` that a secret cut there is still recognised, and short
    /// enough that the patterns' cost (the JWT one backtracks) stays small for a body of megabytes.
    static let scanLength = 1024

    /// `text` with the secrets the caller sent (`known`: the token, the client secret, the access token of the
    /// request) and anything shaped like a credential replaced by `[redacted]`: a bearer token, the value of a
    /// credential field (`name=value` or `"name": "value"`; for the ambiguous names `token`, `code`, `key`, `secret` and
    /// `signature`, only a value with a digit), a JWT, a PEM block, and any run of 40 or more token characters without a dot (no id, code or word the services send is that long, and host names and
    /// addresses have dots; tokens and keys are that long, and Apple's, which have dots, never reach here).
    public static func scrubbed(_ text: String, known: [String] = []) -> String {
        var result = scrubbedKnown(String(text.prefix(scanLength)), known)
        result = result.replacing(pem, with: marker)
        result = result.replacing(bearer) { "\($0.output.1) \(marker)" }
        result = result.replacing(secretField) { "\($0.output.1)\($0.output.2)\(marker)" }
        result = result.replacing(field) { "\($0.output.1)\($0.output.2)\(marker)" }
        result = result.replacing(jwt, with: marker)
        result = result.replacing(longRun, with: marker)
        // Stored, reported and printed: a control character in it would reach the terminal of whoever reads it there.
        // (Cut first, so that no code is cut in two.)
        result = result.count > maxLength ? VisibleText.shown(String(result.prefix(maxLength))) + "…" : VisibleText.shown(result)
        return result
    }

    /// A fragment of a known secret this long or longer is scrubbed too (a service that quotes a token's first 20
    /// characters); a shorter secret, only whole.
    static let fragmentLength = 12

    /// `text` with each known secret of 6 characters or more replaced: as sent, percent-encoded (the `%7C` of a query's
    /// `appid|secret`, in either case of hex), and any fragment of them of `fragmentLength` characters or more. A secret
    /// with a character beyond ASCII is matched whole only, so that nothing is cut inside a character.
    static func scrubbedKnown(_ text: String, _ known: [String]) -> String {
        let bytes = Array(text.utf8)
        var covered = [Bool](repeating: false, count: bytes.count)
        for secret in known where secret.utf8.count >= 6 {
            for form in Set([secret, FormBody.escape(secret), percentEncodedLowerHex(secret)]) {
                let pattern = Array(form.utf8)
                let least = pattern.allSatisfy({ $0 < 0x80 }) ? min(fragmentLength, pattern.count) : pattern.count
                for start in bytes.indices {
                    for offset in pattern.indices where pattern[offset] == bytes[start] {
                        var length = 0
                        while start + length < bytes.count, offset + length < pattern.count, bytes[start + length] == pattern[offset + length] { length += 1 }
                        if length >= least { for index in start..<(start + length) { covered[index] = true } }
                    }
                }
            }
        }
        guard covered.contains(true) else { return text }
        var out: [UInt8] = []
        for (index, byte) in bytes.enumerated() {
            if !covered[index] {
                out.append(byte)
            } else if index == 0 || !covered[index - 1] {
                out.append(contentsOf: marker.utf8)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `FormBody.escape` with lower-case hex digits (`%7c`), as some servers write a quoted request.
    private static func percentEncodedLowerHex(_ text: String) -> String {
        var out = ""
        var rest = Substring(FormBody.escape(text))
        while let percent = rest.firstIndex(of: "%"), rest.distance(from: percent, to: rest.endIndex) >= 3 {
            out += rest[..<percent] + "%" + rest[rest.index(after: percent)...rest.index(percent, offsetBy: 2)].lowercased()
            rest = rest[rest.index(percent, offsetBy: 3)...]
        }
        return out + rest
    }

    /// `text` as an error code when it reads as one (letters, digits, `_ . : -`, fewer than the 40 characters of a
    /// token run), else nil: a code is kept whole and compared, so it is never scrubbed, only refused.
    public static func code(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count < 40,
              text.utf8.allSatisfy({ TextScan.isASCIILetterOrDigit($0) || "_.:-".utf8.contains($0) })
        else { return nil }
        return text
    }

    /// A file path from the configuration or the environment as an error message shows it (`shown`, resolved): quoted,
    /// unless what was given (`given`, as written) looks like what the file would hold. A key's JSON or PEM text given
    /// in place of its path (a common slip with GOOGLE_APPLICATION_CREDENTIALS, `SecretText.isKeyText`), or a one-line
    /// secret: a part between `/` (which base64 has) of 16 or more token characters with no `.`, and at least 3 digits
    /// with both cases of letters or 32 characters, or 20 characters with a digit and both cases (random text, such as
    /// a base64url secret with few digits; a name's words have an extension, few digits, one case). Then it is not shown.
    public static func path(_ shown: String, given: String? = nil) -> String {
        let value = given ?? shown
        let oneLineSecret = value.split(separator: "/").contains { part in
            let bytes = Array(part.utf8)
            let isToken = bytes.allSatisfy { TextScan.isASCIILetterOrDigit($0) || "_~+=-".utf8.contains($0) }
            let digits = bytes.filter(TextScan.isASCIIDigit).count
            let bothCases = bytes.contains { $0 >= 0x41 && $0 <= 0x5A } && bytes.contains { $0 >= 0x61 && $0 <= 0x7A }
            return bytes.count >= 16 && isToken
                && (digits >= 3 && (bothCases || bytes.count >= 32) || digits >= 1 && bothCases && bytes.count >= 20)
        }
        // A base64 key, whose '/' cut it into parts too short to look like a token.
        guard SecretText.isKeyText(value) || oneLineSecret || SecretText.isBase64Key(value) else { return "'\(shown)'" }
        return "(a value that may be the key or secret itself, not a path: not shown)"
    }

    private nonisolated(unsafe) static let pem = #/-----BEGIN[^-]*-----[\s\S]*?(?:-----END[^-]*-----|$)/#
    // A value never starts with `[`: the marker a known secret left is not matched again (`[redacted]]`).
    private nonisolated(unsafe) static let bearer = #/(?i)(bearer)\s+[^\s"'\[\](){},;]+/#
    // A credential field's value with a digit in it: "access token: Session has expired" names no token.
    // The quotes may come escaped (a JSON text inside a JSON string).
    private nonisolated(unsafe) static let secretField =
        #/(?i)\b(access_token|refresh_token|id_token|client_secret|app_secret|assertion|password|private_key)(\\?"?\s*[=:]\s*\\?"?)[^\s"\\&\[\](){},;]+/#
    private nonisolated(unsafe) static let field =
        #/(?i)\b(token|code|secret|signature|key)(\\?"?\s*[=:]\s*\\?"?)(?=[^\s"\\&\[\](){},;]*[0-9])[^\s"\\&\[\](){},;]+/#
    private nonisolated(unsafe) static let jwt = #/eyJ[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]{4,}+(?:\.[A-Za-z0-9_-]*+)?/#
    private nonisolated(unsafe) static let longRun = #/[A-Za-z0-9_~+=-]{40,}/#
}
