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
        path = Self.path(for: statePath)
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StoreError.cannotOpen(path: path, underlying: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = pread(fd, &buffer, buffer.count, 0)
            let holder = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingSpaces : "another process"
            close(fd)
            throw StoreError.locked(path: statePath, holder: holder)
        }
        let note = "idpipe \(command) (pid \(getpid()))"
        _ = ftruncate(fd, 0)
        _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    static func path(for statePath: String) -> String { statePath + ".lock" }

    deinit {
        _ = ftruncate(fd, 0)
        flock(fd, LOCK_UN)
        close(fd)
    }
}
