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

    public static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// True for a pipe or a socket: bytes that can be read once, from the start, and whose size is not known.
    public static func isStream(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let type = info.st_mode & S_IFMT
        return type == S_IFIFO || type == S_IFSOCK
    }

    /// Makes a stream given by its descriptor (`/dev/fd/N`, `/proc/self/fd/N`, `/dev/stdin`, as `<(zcat tokens.gz)`
    /// gives one) readable as a file: its bytes are read whole, once, into an unlinked temporary file, which then
    /// takes the stream's descriptor. Every later open of `path` (its digest, its line count, its reader) reads the
    /// same bytes, where each would otherwise have found the stream drained or given a digest of nothing.
    /// Does nothing when `path` is not a stream. Throws for a named pipe, which cannot be redirected so.
    public static func captureStream(_ path: String) throws {
        guard isStream(path) else { return }
        guard let descriptor = streamDescriptor(path) else {
            throw InputError(path: path, message: "is a named pipe; give it as a file, or as <(command), which can be read more than once here")
        }
        guard let copy = tmpfile() else { throw InputError(path: path, message: "cannot make a temporary copy: \(String(cString: strerror(errno)))") }
        defer { fclose(copy) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw InputError(path: path, message: "cannot read: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            guard buffer.withUnsafeBytes({ fwrite($0.baseAddress, 1, count, copy) }) == count else {
                throw InputError(path: path, message: "cannot copy it to a temporary file: \(String(cString: strerror(errno)))")
            }
        }
        guard fflush(copy) == 0, dup2(fileno(copy), descriptor) >= 0 else {
            throw InputError(path: path, message: "cannot copy it to a temporary file: \(String(cString: strerror(errno)))")
        }
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
