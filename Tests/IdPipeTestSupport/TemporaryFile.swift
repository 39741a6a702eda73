import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Files and folders the tests write, all in one folder of this test process (under `$TMPDIR`, else `/tmp`), which
/// is removed when the process exits: a `make test` leaves nothing behind. A test process that failed left its
/// folder (its exit did not run the cleanup): the next one removes the folders whose owner is gone. Each process
/// holds a lock on its folder's `.lock` while it runs; a folder whose lock can be taken has no owner any more (a
/// lock, unlike a process id, means the same in every container that shares the folder).
public enum TemporaryFile {
    public static let root: String = {
        removeFoldersOfEndedProcesses()
        let dir = folder(forProcess: getpid())
        mkdir(dir, 0o755)
        // Held until the process ends (the descriptor is never closed).
        let lock = open(dir + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if lock >= 0 { _ = flock(lock, LOCK_EX) }
        atexit { try? FileManager.default.removeItem(atPath: TemporaryFile.folder(forProcess: getpid())) }
        return dir
    }()

    private static var base: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    private static func folder(forProcess pid: pid_t) -> String {
        "\(base)/idpipe-tests-\(pid)"
    }

    /// `idpipe-tests-PID` folders whose lock nobody holds. A folder without a lock file (one being made, or made before
    /// the lock) is kept.
    private static func removeFoldersOfEndedProcesses() {
        let prefix = "idpipe-tests-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            let lock = open("\(base)/\(name)/.lock", O_RDWR | O_CLOEXEC)
            guard lock >= 0 else { continue }
            defer { close(lock) }
            guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { continue }
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
