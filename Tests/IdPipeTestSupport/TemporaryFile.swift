import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Files and folders the tests write, all in one folder of this test process (under `$TMPDIR`, else `/tmp`), which
/// is removed when the process exits: a `make test` leaves nothing behind. A test process that failed left its
/// folder (its exit did not run the cleanup): the next one removes the folders of processes that are gone.
public enum TemporaryFile {
    public static let root: String = {
        removeFoldersOfEndedProcesses()
        let dir = folder(forProcess: getpid())
        mkdir(dir, 0o755)
        atexit { try? FileManager.default.removeItem(atPath: TemporaryFile.folder(forProcess: getpid())) }
        return dir
    }()

    private static var base: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    private static func folder(forProcess pid: pid_t) -> String {
        "\(base)/idpipe-tests-\(pid)"
    }

    /// `idpipe-tests-PID` folders whose process no longer runs (a process that runs, whatever it is, keeps its own).
    private static func removeFoldersOfEndedProcesses() {
        let prefix = "idpipe-tests-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid > 0, pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: "\(base)/\(name)")
        }
    }

    public static func write(_ bytes: [UInt8], name: String) -> String {
        let path = "\(root)/\(UInt64.random(in: 0...UInt64.max))-\(name)"
        let file = fopen(path, "w")!
        fwrite(bytes, 1, bytes.count, file)
        fclose(file)
        return path
    }

    public static func write(_ text: String, name: String) -> String {
        write(Array(text.utf8), name: name)
    }

    /// A new empty folder, named after `purpose`.
    public static func directory(_ purpose: String) -> String {
        var template = Array("\(root)/\(purpose)-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in String(cString: mkdtemp(buffer.baseAddress!)!) }
    }
}
