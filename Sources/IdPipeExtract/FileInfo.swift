import CLinux
import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

public enum FileInfo {
    /// The size in bytes; 0 when `path` cannot be read.
    public static func size(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Why `path` cannot be read as an input file ("does not exist", "is a folder, not a file"); nil when it can be
    /// opened as one (a stream included).
    public static func problem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "does not exist" }
        return info.st_mode & S_IFMT == S_IFDIR ? "is a folder, not a file" : nil
    }

    /// True for a pipe or a socket: bytes that can be read once, from the start, and whose size is not known.
    public static func isStream(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let type = info.st_mode & S_IFMT
        return type == S_IFIFO || type == S_IFSOCK
    }

    /// Makes a stream given by its descriptor (`/dev/fd/N`, `/proc/self/fd/N`, `/dev/stdin`, as `<(zcat tokens.gz)`
    /// gives one) readable as a file: its bytes are read whole, once, into an anonymous file in memory (memfd; the
    /// stream may hold decrypted tokens, which are not to be written to a disk), which then takes the stream's
    /// descriptor. Every later open of `path` (its digest, its line count, its reader) reads the same bytes, where
    /// each would otherwise have found the stream drained or given a digest of nothing.
    /// Does nothing when `path` is not a stream. Throws for a named pipe or socket, which cannot be redirected so.
    public static func captureStream(_ path: String) throws {
        guard isStream(path) else { return }
        guard let descriptor = streamDescriptor(path) else {
            throw InputError(path: path, message: "is a named pipe or a socket; give it as a file, or as <(command), which can be read more than once here")
        }
        func failure(_ what: String) -> InputError {
            InputError(path: path, message: "cannot \(what): \(String(cString: strerror(errno)))")
        }
        let copy = anonymousFile()
        guard copy >= 0 else { throw failure("make an in-memory copy") }
        defer { close(copy) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw failure("read it") }
            if count == 0 { break }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { write(copy, $0.baseAddress! + written, count - written) }
                if step < 0 && errno == EINTR { continue }
                guard step > 0 else { throw failure("copy it to memory") }
                written += step
            }
        }
        guard dup2(copy, descriptor) >= 0 else { throw failure("put the copy in the stream's place") }
        // Where opening /dev/fd/N shares the descriptor's offset (not on Linux), reading starts at the beginning.
        lseek(descriptor, 0, SEEK_SET)
    }

    private static func anonymousFile() -> Int32 {
        #if os(Linux)
        return memfd_create("idpipe-side-input", IDPIPE_MFD_CLOEXEC)
        #else
        guard let file = tmpfile() else { return -1 }
        defer { fclose(file) }
        return dup(fileno(file))
        #endif
    }

    /// The descriptor a `/dev/fd/N`, `/proc/self/fd/N` or `/dev/stdin` path names.
    static func streamDescriptor(_ path: String) -> Int32? {
        if path == "/dev/stdin" { return 0 }
        for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
            return Int32(path.dropFirst(prefix.count))
        }
        return nil
    }
}
