import Yams

/// A problem in a pipeline file, with its line and the key path that leads to it.
public struct PipelineFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var path: String
    public var message: String
    /// The file's other problems, after this one in line order: each section's first is given at once.
    public var others: [PipelineFileError] = []

    public init(file: String, line: Int?, path: String, message: String) {
        self.file = file
        self.line = line
        self.path = path
        self.message = message
    }

    /// The problems of one file as one error: the first in the file, the others after it, in line order (those
    /// without a line last).
    static func together(_ problems: [PipelineFileError]) -> PipelineFileError {
        let sorted = problems.enumerated().sorted { ($0.element.line ?? .max, $0.offset) < ($1.element.line ?? .max, $1.offset) }.map(\.element)
        var first = sorted[0]
        first.others = Array(sorted.dropFirst())
        return first
    }

    public var description: String {
        let location = line.map { "\(file):\($0)" } ?? file
        let text = path.isEmpty ? "\(location): \(message)" : "\(location): \(path): \(message)"
        guard !others.isEmpty else { return text }
        return text + others.map { "\n  " + $0.description }.joined() + "\n  (\(others.count + 1) problems)"
    }
}

/// A YAML node with its key path, for decoding with precise errors and refusing unknown keys.
struct ConfigNode {
    let node: Node
    let path: String
    let file: String

    var line: Int? { node.mark.map { $0.line } }

    func error(_ message: String) -> PipelineFileError {
        PipelineFileError(file: file, line: line, path: path, message: message)
    }

    func mapping(allowed keys: Set<String>) throws -> [String: ConfigNode] {
        guard let mapping = node.mapping else { throw error("expected a mapping (key: value pairs)") }
        var result: [String: ConfigNode] = [:]
        for (keyNode, valueNode) in mapping {
            guard let key = keyNode.string else {
                throw PipelineFileError(file: file, line: keyNode.mark?.line ?? line, path: path, message: "keys must be text")
            }
            let childPath = path.isEmpty ? key : "\(path).\(key)"
            guard keys.contains(key) else {
                let known = keys.sorted().joined(separator: ", ")
                throw PipelineFileError(file: file, line: keyNode.mark.map { $0.line }, path: childPath, message: "unknown key (expected one of: \(known))")
            }
            result[key] = ConfigNode(node: valueNode, path: childPath, file: file)
        }
        return result
    }

    /// The value under `key` of a mapping already checked by `mapping(allowed:)`, to point an error at it; nil when
    /// it is absent.
    func child(_ key: String) -> ConfigNode? {
        guard let value = node.mapping?[key] else { return nil }
        return ConfigNode(node: value, path: path.isEmpty ? key : "\(path).\(key)", file: file)
    }

    func string() throws -> String {
        guard case .scalar(let scalar) = node else { throw error("expected a text value") }
        return scalar.string
    }

    /// The path of a file that holds a key or a secret. The key itself written there (its PEM or JSON text) was taken
    /// for a path, and printed whole by the error that it could not be read: refused here, and not quoted. (A one-line
    /// secret could be a file's name: it is only kept out of messages, `Redaction.path`.)
    func secretFilePath() throws -> String {
        let text = try string()
        if SecretText.isKeyText(text) {
            throw error("holds the key itself, not the path of its file (not shown): put it in a file only you can read, and give that file's path")
        }
        return text
    }

    /// The name of an environment variable that holds a secret: letters, digits and `_`, not from a digit. Anything
    /// else is not quoted: it may be the secret itself, written where its variable's name goes.
    func environmentVariableName() throws -> String {
        let name = try string()
        let bytes = Array(name.utf8)
        guard let first = bytes.first, !TextScan.isASCIIDigit(first),
              bytes.allSatisfy({ TextScan.isASCIILetterOrDigit($0) || $0 == UInt8(ascii: "_") }) else {
            throw error("is not an environment variable's name (letters, digits and _, not from a digit); not shown, as it may be the "
                + "secret itself: put that in the variable, and its name here")
        }
        return name
    }

    func bool() throws -> Bool {
        guard case .scalar(let scalar) = node else { throw error("expected true or false") }
        switch scalar.string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw error("expected true or false, found '\(scalar.string)'")
        }
    }

    func int(minimum: Int = 0, maximum: Int = .max, why: String = "") throws -> Int {
        guard case .scalar(let scalar) = node else { throw error("expected a whole number") }
        guard let value = Int(scalar.string) else {
            // Digits beyond what a number holds are a whole number out of range, not "no whole number".
            let text = scalar.string
            let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : Substring(text)
            if !digits.isEmpty && digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
                // With no bound of its own, the bound a number can hold is no bound to tell the user of.
                if text.hasPrefix("-") { throw error(minimum == .min ? "is too small" : "must be at least \(minimum)") }
                throw error(maximum == .max ? "is too large" : "must be at most \(maximum)\(why)")
            }
            throw error("expected a whole number, found '\(text)'")
        }
        guard value >= minimum else { throw error("must be at least \(minimum)") }
        guard value <= maximum else { throw error("must be at most \(maximum)\(why)") }
        return value
    }

    func double() throws -> Double {
        guard case .scalar(let scalar) = node, let value = Double(scalar.string) else { throw error("expected a number") }
        return value
    }

    func list() throws -> [ConfigNode] {
        guard let sequence = node.sequence else { throw error("expected a list") }
        return sequence.enumerated().map { ConfigNode(node: $1, path: "\(path)[\($0)]", file: file) }
    }

    func stringList() throws -> [String] {
        try list().map { try $0.string() }
    }

    func oneOf<T: RawRepresentable & CaseIterable>(_ type: T.Type) throws -> T where T.RawValue == String {
        let text = try string()
        guard let value = T(rawValue: text) else {
            throw error("'\(text)' is not one of: \(T.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    /// `false` or absent: nil; `true`: the defaults; a mapping: decoded by `body`.
    func stage<T>(defaults: T, allowed: Set<String>, _ body: (inout T, [String: ConfigNode]) throws -> Void) throws -> T? {
        if case .scalar = node { return try bool() ? defaults : nil }
        var value = defaults
        try body(&value, try mapping(allowed: allowed))
        return value
    }
}

/// What tells a key's text from the path of its file.
public enum SecretText {
    /// Whether `value` is a key's text rather than a path: a PEM block, a JSON object, more than one line, or longer
    /// than any path.
    public static func isKeyText(_ value: String) -> Bool {
        value.utf8.count > 1024 || value.contains("\n") || value.contains("-----BEGIN")
            || value.trimmingPrefix(while: { $0 == " " || $0 == "\t" }).hasPrefix("{")
    }

    /// Whether `value` reads as a base64 key (16 characters or more): its '/' would let it pass for a path.
    public static func isBase64Key(_ value: String) -> Bool {
        value.utf8.count >= 16 && TextScan.isBase64(value)
    }
}
