import CLinux
import IdPipeCore
import IdPipeExtract
#if canImport(Glibc)
import Glibc
#endif

/// Standard output and error, and the progress line (only on a terminal).
enum Console {
    /// A path as a shell command takes it, for the commands idpipe suggests: quoted when it holds a space or another
    /// character the shell reads (a suggestion to paste broke on `out dir/state.sqlite`).
    static func shellWord(_ text: String) -> String {
        let plain = !text.isEmpty && text.utf8.allSatisfy { TextScan.isASCIILetterOrDigit($0) || "/._-+=:@%,".utf8.contains($0) }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The command that goes on with the run in `state`, as the messages suggest it: `` `idpipe resume --state S` ``
    /// (`verb` and `extra` for the others: `apply`, `--max-deletions N`).
    static func command(_ verb: String = "resume", state: String, _ extra: String = "") -> String {
        "`idpipe \(verb) --state \(shellWord(state))\(extra)`"
    }

    /// Writes a line of text. Its messages quote services, ids and file contents: a character that acts rather than
    /// shows (an ESC, a BS, a bidi mark) is written as its code (`VisibleText`), its line ends and tabs kept.
    static func out(_ text: String) {
        writeAll(1, VisibleText.shown(text, keeping: lineBreaks) + "\n")
    }

    /// The same on stderr; `clearingProgressLine`: the progress line on the terminal is cleared first (in the same write).
    static func error(_ text: String, clearingProgressLine: Bool = false) {
        writeAll(2, (clearingProgressLine && stderrIsTerminal ? "\r\u{1B}[K" : "") + VisibleText.shown(text, keeping: lineBreaks) + "\n")
    }

    private static let lineBreaks: Set<Unicode.Scalar> = ["\n", "\t"]

    /// Writes straight to a file descriptor (no shared C stream, so no shared mutable state).
    static func writeAll(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if count <= 0 { return }
            done += count
        }
        bytes.removeAll()
    }

    static let stderrIsTerminal = isatty(2) == 1

    /// Rewrites one line on stderr; does nothing when stderr is not a terminal.
    static func progress(_ text: String) {
        guard stderrIsTerminal else { return }
        writeAll(2, "\r\u{1B}[K" + text)
    }

    static func endProgress() {
        guard stderrIsTerminal else { return }
        writeAll(2, "\r\u{1B}[K")
    }

    /// The accounts of an import left out for the project's own, in the words `status` and apply's line share: those
    /// whose uid it has, and those whose email, phone number or sign-in another of its accounts has.
    static func leftOutOfImport(_ summary: ImportSummary) -> [String] {
        [summary.keptExisting > 0 ? "\(summary.keptExisting) kept as the project has them (their uid is there already)" : nil,
         summary.clashing > 0 ? "\(summary.clashing) left out (another account of the project has their \(summary.clashingWhat))" : nil]
            .compactMap { $0 }
    }

    /// "1 account", "2 accounts": a count with its noun, for the summary lines.
    static func count(_ number: Int, _ noun: String) -> String {
        "\(number) " + (number == 1 ? noun : noun + "s")
    }

    /// What `resume` does at the end of what it finishes, for a run `run --yes` made: it applies the plan (a suggestion
    /// that said "reads only" deleted accounts when pasted). Empty for any other run.
    static func thenApplies(_ run: RunRecord?, _ what: String = "the plan") -> String {
        run?.applyRequested == true ? ", then applies \(what), as `run --yes` asked" : ""
    }

    /// "1 input row was quarantined", "3 input rows were quarantined".
    static func quarantinedRows(_ number: Int) -> String {
        count(number, "input row") + (number == 1 ? " was" : " were") + " quarantined"
    }
}

/// A buffered file for reports. A failed write (a full disk) is remembered and reported by `close`, so a truncated
/// report never passes for a whole one.
final class FileOutput: TextOutputStream, ByteSink {
    private let file: UnsafeMutablePointer<FILE>
    let path: String
    private var failure: Int32 = 0
    /// A staged file's own lock (`StagedReportLock`), held after `close` until the file is renamed or removed.
    private(set) var lock: StagedReportLock?

    /// Tests: a disk that holds only this many bytes of each file (writes past them fail with ENOSPC).
    private var room = ProcessEnvironment.value("IDPIPE_TEST_DISK_BYTES").flatMap(Int.init) ?? .max

    init(path: String) throws {
        guard let file = fopen(path, "w") else { throw CommandError("cannot write \(path): \(String(cString: strerror(errno)))") }
        self.file = file
        self.path = path
    }

    /// A new file beside `target`, `NAME.idpipe-partial.XXXXXX`, created exclusively (a name no other process uses, and no
    /// link followed), with the mode `target` has or a new file would get (`stagedMode`).
    init(stagedBeside target: String, privately: Bool) throws {
        var template = Array((target + LeftoverReports.infix + "XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw CommandError("cannot write \(target): \(String(cString: strerror(errno)))") }
        let staged = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        lock = StagedReportLock(descriptor)
        fchmod(descriptor, Self.stagedMode(for: target, privately: privately))
        guard let file = fdopen(descriptor, "w") else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            unlink(staged)
            throw CommandError("cannot write \(target): \(reason)")
        }
        self.file = file
        self.path = staged
    }

    /// Appends to a staged file, through a descriptor of its own, holding its lock (`StagedReportLock`).
    convenience init(appendingTo descriptor: Int32, path: String, lock: StagedReportLock) throws {
        try self.init(appendingTo: descriptor, path: path)
        self.lock = lock
    }

    /// Appends to an open file, through a descriptor of its own (`path` names it in messages).
    init(appendingTo descriptor: Int32, path: String) throws {
        let own = dup(descriptor)
        guard own >= 0, let file = fdopen(own, "a") else {
            let reason = String(cString: strerror(errno))
            if own >= 0 { Glibc.close(own) }
            throw CommandError("cannot write \(path): \(reason)")
        }
        self.file = file
        self.path = path
    }

    /// The mode of a report staged to replace `target`: the one `target` has, or the one a new file would get; with
    /// personal data shown (`privately`), for its owner only, as the state store is.
    static func stagedMode(for target: String, privately: Bool) -> mode_t {
        var existing = stat()
        let mode = stat(target, &existing) == 0 ? existing.st_mode & 0o7777 : 0o666 & ~creationMask
        return privately ? mode & 0o700 | 0o600 : mode
    }

    /// The process's umask, read where reading it changes nothing (`umask()` sets it, for every thread).
    private static let creationMask: mode_t = {
        guard let status = fopen("/proc/self/status", "r") else { return 0o022 }
        defer { fclose(status) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), status) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("Umask:"), let mask = mode_t(text.dropFirst(6).filter { $0.isNumber }, radix: 8) { return mask }
        }
        return 0o022
    }()

    func write(_ string: String) {
        var string = string
        string.withUTF8 { write(bytes: UnsafeRawBufferPointer($0)) }
    }

    func write(bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= room else {
            if failure == 0 { failure = ENOSPC }
            return
        }
        if room != .max { room -= bytes.count }
        if fwrite(bytes.baseAddress, 1, bytes.count, file) < bytes.count && failure == 0 { failure = errno }
    }

    /// Appends `length` bytes of another file, read from its start: in the kernel when it can (`copy_file_range`),
    /// else through a buffer (a target that is not a regular file, or the tests' limited disk).
    func append(from source: Int32, length: Int64) throws {
        guard failure == 0 else { return }
        if fflush(file) != 0 {
            failure = errno
            return
        }
        var offset: Int64 = 0
        if room == .max {
            var position = __off64_t(0)
            while Int64(position) < length {
                let count = copy_file_range(source, &position, fileno(file), nil, Int(length - Int64(position)), 0)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
            }
            offset = Int64(position)
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while offset < length && failure == 0 {
            let count = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress!, min($0.count, Int(length - offset)), off_t(offset)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                failure = count < 0 ? errno : EIO
                return
            }
            buffer.withUnsafeBytes { write(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            offset += Int64(count)
        }
    }

    private var closed = false

    /// Closes the file; throws when a write or the final flush failed. Closing again does nothing more.
    func close() throws {
        if closed { return }
        closed = true
        if fclose(file) != 0 && failure == 0 { failure = errno }
        if failure != 0 { throw CommandError("cannot write \(path): \(String(cString: strerror(failure)))") }
    }
}

struct CommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func wallClockSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func epochMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

func makeDirectory(_ path: String) throws {
    var built = path.hasPrefix("/") ? "" : "."
    for part in path.split(separator: "/") {
        built += "/" + part
        if mkdir(built, 0o755) != 0 && errno != EEXIST {
            throw CommandError("cannot create the folder \(built): \(String(cString: strerror(errno)))")
        }
    }
}

/// Makes the folder `path` (as `makeDirectory`) and checks that a file can be made in it, before a command does anything
/// it could not report: an apply into a folder it could not write deleted the accounts, then failed on its first report.
/// `purpose` says what goes there, in the error.
func makeWritableFolder(_ path: String, purpose: String) throws {
    try makeDirectory(path)
    // A name of its own each time: one left by a kill between the two calls stops no later run.
    var template = Array("\(path)/.idpipe-write-check-XXXXXX".utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard descriptor >= 0 else {
        throw CommandError("cannot write in the folder \(path) (\(String(cString: strerror(errno)))): \(purpose)")
    }
    close(descriptor)
    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
}

func fileExists(_ path: String) -> Bool {
    access(path, F_OK) == 0
}

/// The process's current folder; nil when it cannot be told (it was removed).
func currentDirectory() -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard getcwd(&buffer, buffer.count) != nil else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// `path` from the current folder, when it is relative.
func absolutePath(_ path: String) -> String {
    SideInputReader.resolve(path, currentDirectory() ?? "")
}
