import Yams

/// A problem in a pipeline file, with its line and the key path that leads to it.
public struct PipelineFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var path: String
    public var message: String
    /// How many problems `description` gives before it counts the rest.
    static let shownProblems = 100
    /// Where on its line (from 1), when known: problems on one line are given in its order.
    public var column: Int?
    /// The file's other problems, after this one in line order: every unknown key and every bad value are given at once.
    public var others: [PipelineFileError] = []

    public init(file: String, line: Int?, path: String, message: String, column: Int? = nil) {
        self.file = file
        self.line = line
        self.path = path
        self.message = message
        self.column = column
    }

    /// The problems of one file as one error: the first in the file, the others after it, in line order and on a line in
    /// column order (those without a line last, those without a column last on their line).
    static func together(_ problems: [PipelineFileError]) -> PipelineFileError {
        let sorted = problems.enumerated().sorted {
            ($0.element.line ?? .max, $0.element.column ?? .max, $0.offset) < ($1.element.line ?? .max, $1.element.column ?? .max, $1.offset)
        }.map(\.element)
        var first = sorted[0]
        first.others = Array(sorted.dropFirst())
        return first
    }

    public var description: String {
        let location = line.map { "\(file):\($0)" } ?? file
        let text = path.isEmpty ? "\(location): \(message)" : "\(location): \(path): \(message)"
        guard !others.isEmpty else { return text }
        // A list of thousands of bad items: the first problems, and how many.
        let shown = others.prefix(Self.shownProblems - 1)
        let more = others.count > shown.count ? "\n  … and \(others.count - shown.count) more" : ""
        return text + shown.map { "\n  " + $0.description }.joined() + more + "\n  (\(others.count + 1) problems)"
    }
}

/// The problems of a pipeline file that do not stop its section being read (an unknown key, a bad value), gathered as
/// it is read.
final class ConfigProblems {
    private(set) var problems: [PipelineFileError] = []
    /// How many bad values were told (`ConfigNode.value`): a section that had one is not taken (`ConfigNode.section`).
    fileprivate(set) var badValues = 0
    /// The problems told, to tell each once (a list of 10,000 bad items took `contains` 17 s).
    private var told: Set<String> = []

    func add(_ problem: PipelineFileError) {
        if told.insert(problem.description).inserted { problems.append(problem) }
    }

    fileprivate func addBadValue(_ problem: PipelineFileError) {
        add(problem)
        badValues += 1
    }
}

/// A section (or stage, or service) had a bad value, told to `ConfigProblems` already: it is not taken, as the value's
/// default in its place would have been read as given.
struct ProblemsTold: Error {}

/// A YAML node with its key path, for decoding with precise errors and refusing unknown keys.
struct ConfigNode {
    let node: Node
    let path: String
    let file: String
    /// Where an unknown key is told, the rest of its mapping read on (shared by every node of the file).
    let problems: ConfigProblems

    init(node: Node, path: String, file: String, problems: ConfigProblems) {
        self.node = node
        self.path = path
        self.file = file
        self.problems = problems
    }

    var line: Int? { node.mark.map { $0.line } }

    func error(_ message: String) -> PipelineFileError {
        PipelineFileError(file: file, line: line, path: path, message: message, column: node.mark?.column)
    }

    /// The mapping's values by key. A key not in `keys` (a misspelling, most often) is told to `problems` and left out,
    /// and the rest is read on: every unknown key of the file is given at once, with the other problems of its section.
    func mapping(allowed keys: Set<String>) throws -> [String: ConfigNode] {
        guard let mapping = node.mapping else { throw error("expected a mapping (key: value pairs)") }
        var result: [String: ConfigNode] = [:]
        for (keyNode, valueNode) in mapping {
            guard let key = keyNode.string else {
                problems.add(PipelineFileError(file: file, line: keyNode.mark?.line ?? line, path: path, message: "keys must be text",
                                               column: keyNode.mark?.column))
                continue
            }
            let childPath = path.isEmpty ? key : "\(path).\(key)"
            guard keys.contains(key) else {
                let known = keys.sorted().joined(separator: ", ")
                let near = Self.nearest(key, in: keys).map { "did you mean '\($0)'? " } ?? ""
                problems.add(PipelineFileError(file: file, line: keyNode.mark.map { $0.line }, path: childPath,
                                               message: "unknown key (\(near)expected one of: \(known))", column: keyNode.mark?.column))
                continue
            }
            result[key] = ConfigNode(node: valueNode, path: childPath, file: file, problems: problems)
        }
        return result
    }

    /// Reads one value of a section (a key's, or a list's item) with `body`. A problem it finds is told to `problems`
    /// and nil returned, so that the section's other values are read too: every bad value of the file is given at
    /// once. The section around it is then not taken (`section`).
    func value<T>(_ body: (ConfigNode) throws -> T) -> T? {
        do { return try body(self) } catch let problem as PipelineFileError {
            problems.addBadValue(problem)
            return nil
        } catch {
            problems.addBadValue(self.error("\(error)"))
            return nil
        }
    }

    /// Tells a problem of this node's value, as `value` would have, and reads on.
    func tell(_ message: String) {
        problems.addBadValue(error(message))
    }

    /// Reads a section with `body`, which reads its values with `value`: `ProblemsTold` when any had a problem.
    func section<T>(_ body: () throws -> T) throws -> T {
        let before = problems.badValues
        let result = try body()
        guard problems.badValues == before else { throw ProblemsTold() }
        return result
    }

    /// Reads a part of a section that stands on its own (a stage, a service) with `body`; a problem it finds is told to
    /// `problems` and nil returned, instead of ending the reading of the section around it, which is taken without
    /// this part: each service, and each stage, is read whatever another's problem.
    func reading<T>(_ body: () throws -> T) -> T? {
        let before = problems.badValues
        // Its bad values leave only it unset.
        defer { problems.badValues = before }
        do { return try section(body) } catch let problem as PipelineFileError {
            problems.add(problem)
        } catch is ProblemsTold {
        } catch {
            problems.add(self.error("\(error)"))
        }
        return nil
    }

    /// The allowed key a misspelt one stands for: the only one within two edits (a letter left out, added, changed, or
    /// two swapped), or `_` for `-` or a space; nil when none is, or more than one.
    static func nearest(_ key: String, in keys: Set<String>) -> String? {
        let typed = Array(key.lowercased().replacingOccurrences(of: "-", with: "_").replacingOccurrences(of: " ", with: "_").utf8)
        let near = keys.filter { editDistance(typed, Array($0.utf8), atMost: 2) }
        return near.count == 1 ? near.first : nil
    }

    /// Whether `a` becomes `b` in at most `limit` edits (insertions, deletions, substitutions, adjacent swaps).
    static func editDistance(_ a: [UInt8], _ b: [UInt8], atMost limit: Int) -> Bool {
        guard abs(a.count - b.count) <= limit else { return false }
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) <= limit }
        // Optimal string alignment distance, a row at a time: `row` for a[..<i], `above` for a[..<i-1], `twoAbove` before.
        var twoAbove = [Int](repeating: 0, count: b.count + 1)
        var above = Array(0...b.count)
        var row = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            row[0] = i
            for j in 1...b.count {
                row[j] = min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { row[j] = min(row[j], twoAbove[j - 2] + 1) }
            }
            (twoAbove, above, row) = (above, row, twoAbove)
        }
        return above[b.count] <= limit
    }

    /// The value under `key` of a mapping already checked by `mapping(allowed:)`, to point an error at it; nil when
    /// it is absent.
    func child(_ key: String) -> ConfigNode? {
        guard let value = node.mapping?[key] else { return nil }
        return ConfigNode(node: value, path: path.isEmpty ? key : "\(path).\(key)", file: file, problems: problems)
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
        return sequence.enumerated().map { ConfigNode(node: $1, path: "\(path)[\($0)]", file: file, problems: problems) }
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
