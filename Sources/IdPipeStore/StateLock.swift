import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

/// One process at a time on a state store: an exclusive `flock` on `<state>.lock`, held until the process ends
/// (the kernel releases it even after `kill -9`). The file says who holds it, for the refusal message.
public final class StateLock {
    private let fd: Int32
    public let path: String

    public init(statePath: String, command: String) throws {
        // A file that is there and is no SQLite database (an export given as --state) gets no lock file made beside it.
        try StateStore.refuseIfNotADatabase(statePath)
        path = Self.path(for: statePath)
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StoreError.cannotOpen(path: path, underlying: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.note(fd)
            close(fd)
            throw StoreError.locked(path: statePath, holder: holder)
        }
        let note = "idpipe \(command) (pid \(getpid()))"
        _ = ftruncate(fd, 0)
        _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    static func path(for statePath: String) -> String { statePath + ".lock" }

    /// Who holds the lock of the store at `statePath` now ("idpipe plan (pid 42)"), or nil when nobody does: a run is
    /// going on, or the store was left by one that stopped. Asked with a shared lock, given back at once; the file is not
    /// made when it is missing.
    public static func holder(statePath: String) -> String? {
        let fd = open(path(for: statePath), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        return note(fd)
    }

    /// What the holder wrote in the lock file ("idpipe plan (pid 42)").
    private static func note(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = pread(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingSpaces : "another process"
    }

    deinit {
        _ = ftruncate(fd, 0)
        flock(fd, LOCK_UN)
        close(fd)
    }
}

/// One apply at a time of a pipeline file, whatever its state store: an exclusive `flock` on the pipeline file itself,
/// opened read-only (a folder of pipelines may be read-only), held until the process ends. Two nights' runs that
/// overlapped (a slow night, a retried job) each deleted the same accounts' data, with webhook keys of their own.
public final class PipelineApplyLock {
    private let fd: Int32

    /// Nil when the file cannot be opened (apply reads it next, and says so); throws when another process holds it.
    public init?(pipelinePath: String) throws(PipelineLocked) {
        fd = open(pipelinePath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw PipelineLocked(pipelinePath: pipelinePath)
        }
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}

public struct PipelineLocked: Error, CustomStringConvertible {
    public let pipelinePath: String
    public var description: String {
        "another idpipe process is applying the pipeline \(pipelinePath) (from another state store): two at once would each act on the "
            + "same accounts; wait for it to finish"
    }
}
