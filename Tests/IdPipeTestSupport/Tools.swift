import Foundation

/// The repository's root, from this file's place in it.
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Runs a program (in the repository's root) to completion; returns its exit status and combined output.
/// `killAfter` sends SIGKILL after that many seconds; `signals` sends each signal after its delay (from the one
/// before); `signalWhenExists` sends a signal once a file appears (the sign that the program is past its start).
@discardableResult
public func runProgram(_ path: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil,
                       killAfter: Double? = nil, signals: [(Int32, Double)] = [], signalWhenExists: (Int32, String)? = nil) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.currentDirectoryURL = repositoryRoot
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    let stdin = Pipe()
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try? stdin.fileHandleForWriting.close()
    if let killAfter {
        usleep(UInt32(killAfter * 1_000_000))
        kill(process.processIdentifier, SIGKILL)
    }
    for (number, seconds) in signals {
        usleep(UInt32(seconds * 1_000_000))
        kill(process.processIdentifier, number)
    }
    if let (number, file) = signalWhenExists {
        for _ in 0..<3000 where !FileManager.default.fileExists(atPath: file) { usleep(10_000) }
        kill(process.processIdentifier, number)
    }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

/// Fresh key pairs made by the `openssl` command (not by idpipe's code), as PEM text.
public enum TestKeys {
    public struct Pair: Sendable {
        public let privatePEM: String
        public let publicPEM: String
    }

    public static func ecP256() throws -> Pair { try generate(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]) }
    public static func rsa2048() throws -> Pair { try generate(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]) }

    private static func generate(_ options: [String]) throws -> Pair {
        let (status, privatePEM) = try runProgram("/usr/bin/openssl", ["genpkey"] + options)
        guard status == 0 else { throw ToolError("openssl genpkey failed: \(privatePEM)") }
        let (publicStatus, publicPEM) = try runProgram("/usr/bin/openssl", ["pkey", "-pubout"], input: privatePEM)
        guard publicStatus == 0 else { throw ToolError("openssl pkey -pubout failed") }
        return Pair(privatePEM: privatePEM, publicPEM: publicPEM)
    }
}

/// The Python of the test virtual environment (`make test` creates it with firebase-admin, PyJWT, cryptography and
/// cmarkgfm).
public enum TestPython {
    public static var path: String { repositoryRoot.appendingPathComponent(".build-venv/bin/python").path }

    public static func script(_ name: String) -> String { repositoryRoot.appendingPathComponent("Tests/Python/\(name)").path }

    public static func run(_ script: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws -> (status: Int32, output: String) {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ToolError("\(path) is missing: `make test` creates the Python test environment (make venv)")
        }
        return try runProgram(path, [self.script(script)] + arguments, environment: environment, input: input)
    }

    /// The HTML that GitHub's renderer (cmark-gfm, `render_markdown.py`) makes of each Markdown document.
    public static func renderMarkdown(_ documents: [String]) throws -> [String] {
        let input = String(decoding: try JSONEncoder().encode(documents), as: UTF8.self)
        let (status, output) = try run("render_markdown.py", [], input: input)
        guard status == 0, let html = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String], html.count == documents.count else {
            throw ToolError("render_markdown.py failed: \(output)")
        }
        return html
    }
}

public struct ToolError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// SplitMix64: the same sequence on every run, so a failing case can be replayed.
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// Overwrites the first page of `table` in the SQLite database at `path` (closed), as a write lost to a power loss
/// could leave it. Python's sqlite3 says where the page is.
public func damageTable(_ table: String, inDatabase path: String) throws {
    let (code, output) = try runProgram("/usr/bin/env", ["python3", "-c", """
        import sqlite3, sys
        db = sqlite3.connect(sys.argv[1])
        print(db.execute("PRAGMA page_size").fetchone()[0], db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (sys.argv[2],)).fetchone()[0])
        """, path, table])
    let numbers = output.split(whereSeparator: \.isWhitespace).compactMap { UInt64($0) }
    guard code == 0, numbers.count == 2, let handle = FileHandle(forUpdatingAtPath: path) else {
        throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: path, NSLocalizedDescriptionKey: "cannot find the table \(table): \(output)"])
    }
    try handle.seek(toOffset: (numbers[1] - 1) * numbers[0])
    handle.write(Data(repeating: 0x5A, count: Int(numbers[0])))
    try handle.close()
}

/// This boot of the system as the kernel names it: what a marker of a plan's unsynced writes (`STATE.unsynced`) records.
public func systemBootId() throws -> String {
    try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// A marker's text as if the plan had written it in an earlier boot of the system (before a power loss, say).
public func fromAnEarlierBoot(_ marker: String) throws -> String {
    marker.replacingOccurrences(of: try systemBootId(), with: "00000000-0000-4000-8000-000000000000")
}
