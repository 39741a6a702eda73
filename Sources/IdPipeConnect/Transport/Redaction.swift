/// Text a service sent back, made safe to keep. Error messages go to stderr, the reports, the ledger and the state
/// store; a service may quote the request in them (Facebook's "Malformed access token EAAB…", a proxy echoing the
/// request it refused), which would put a token, a client secret or a key there. So every error text taken from an
/// answer passes through `scrubbed`, and every error code through `code`.
public enum Redaction {
    public static let marker = "[redacted]"
    /// Kept texts are cut here: an answer's error is a line, not a page.
    static let maxLength = 300

    /// `text` with the secrets the caller sent (`known`: the token, the client secret, the access token of the
    /// request) and anything shaped like a credential replaced by `[redacted]`: a bearer token, a `name=value` or
    /// `"name": "value"` pair of a credential field, a JWT, a PEM block, and any run of 40 or more token characters
    /// (no id, code or word the services send is that long; tokens and keys are).
    public static func scrubbed(_ text: String, known: [String] = []) -> String {
        var result = text
        for secret in known where secret.utf8.count >= 6 { result = result.replacing(secret, with: marker) }
        result = result.replacing(pem, with: marker)
        result = result.replacing(bearer) { "\($0.output.1) \(marker)" }
        result = result.replacing(field) { "\($0.output.1)\($0.output.2)\(marker)" }
        result = result.replacing(jwt, with: marker)
        result = result.replacing(longRun, with: marker)
        if result.count > maxLength { result = String(result.prefix(maxLength)) + "…" }
        return result
    }

    /// `text` as an error code when it reads as one (letters, digits, `_ . : -`, at most 64 characters), else nil:
    /// a code is kept whole and compared, so it is never scrubbed, only refused.
    public static func code(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= 64,
              text.utf8.allSatisfy({ ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || "_.:-".utf8.contains($0) })
        else { return nil }
        return text
    }

    /// A file path from the configuration or the environment as an error message shows it: quoted, unless it looks like
    /// what the file would hold (a key's JSON or PEM text given in place of its path, a common slip with
    /// GOOGLE_APPLICATION_CREDENTIALS): then it is not shown.
    public static func path(_ value: String) -> String {
        let trimmed = value.trimmingPrefix { $0 == " " || $0 == "\t" }
        guard value.utf8.count > 1024 || value.contains("\n") || value.contains("-----BEGIN") || trimmed.hasPrefix("{") else { return "'\(value)'" }
        return "(a value that is no file path, not shown: it may be the key itself)"
    }

    private nonisolated(unsafe) static let pem = #/-----BEGIN[^-]*-----[\s\S]*?(?:-----END[^-]*-----|$)/#
    private nonisolated(unsafe) static let bearer = #/(?i)(bearer)\s+[^\s"',;)\]}]+/#
    private nonisolated(unsafe) static let field =
        #/(?i)\b(access_token|refresh_token|id_token|client_secret|app_secret|assertion|token|code|password|secret|signature|private_key|key)("?\s*[=:]\s*"?)[^\s"&,;)\]}]+/#
    private nonisolated(unsafe) static let jwt = #/eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?/#
    private nonisolated(unsafe) static let longRun = #/[A-Za-z0-9._~+=-]{40,}/#
}
