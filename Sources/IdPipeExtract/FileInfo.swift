import CLinux
import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

public enum FileInfo {
    /// What an input path names, from one `stat`.
    public enum Kind: Equatable {
        case missing
        case folder
        /// A pipe or a socket: bytes that can be read once, from the start, and whose size is not known.
        case stream
        /// A regular file.
        case file(size: Int64)
        /// Anything else that can be opened and read (`/dev/null`, a terminal): its size is not known either.
        case device
        /// `/dev/fd/N` (or `/dev/stdin`) where the caller did not open N.
        case notGiven(descriptor: Int32)

        init(_ info: stat) {
            switch info.st_mode & S_IFMT {
            case S_IFDIR: self = .folder
            case S_IFIFO, S_IFSOCK: self = .stream
            case S_IFREG: self = .file(size: Int64(info.st_size))
            default: self = .device
            }
        }

        /// Why the path cannot be read as an input file ("does not exist", "is a folder, not a file"); nil when it
        /// can be opened as one (a stream included).
        public var problem: String? {
            switch self {
            case .missing: "does not exist"
            case .folder: "is a folder, not a file"
            case .notGiven(let n): "names descriptor \(n), which was not open when idpipe started: open it in the shell (\(n)< file, or \(n)< <(command))"
            case .stream, .file, .device: nil
            }
        }
    }

    /// Which file a path names (device and inode), to tell two paths of the same file apart from two files.
    public struct Identity: Equatable {
        let device: UInt64
        let inode: UInt64
    }

    /// The names of the entries of a folder (none when it cannot be read), `.` and `..` left out.
    public static func names(in folder: String) -> [String] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// nil when nothing is there.
    public static func identity(_ path: String) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    public static func kind(_ path: String) -> Kind {
        if let descriptor = notGivenDescriptor(path) { return .notGiven(descriptor: descriptor) }
        var info = stat()
        return stat(path, &info) == 0 ? Kind(info) : .missing
    }

    /// Whether `path` itself (not what a symlink there points to) is a regular file, or nothing is there: a file that
    /// may be replaced by another of the same name. `/dev/stdout`, `/dev/fd/N` and other links are not.
    public static func isPlainFileOrMissing(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return errno == ENOENT }
        return info.st_mode & S_IFMT == S_IFREG
    }

    /// The size in bytes; 0 when `path` is not a regular file (whose size `stat` gives).
    public static func size(_ path: String) -> Int64 {
        if case .file(let size) = kind(path) { size } else { 0 }
    }

    /// Makes a stream given by its descriptor (`/dev/fd/N`, `/proc/self/fd/N`, `/dev/stdin`, as `<(zcat tokens.gz)`
    /// gives one) readable as a file: its bytes are read whole, once, into an anonymous file in memory (memfd; the
    /// stream may hold decrypted tokens, which are not to be written to a disk), which then takes the stream's
    /// descriptor. Every later open of `path` (its digest, its line count, its reader) reads the same bytes, where
    /// each would otherwise have found the stream drained or given a digest of nothing.
    /// Call it for a `.stream` or `.device` path: a terminal on stdin is read up to its end of input (Ctrl-D) the
    /// same way (a prompt on stderr says so). `/dev/null` is left as it is. Throws for a named pipe, socket or other
    /// device, which cannot be redirected so. A `secret` typed on a terminal (stored tokens) is not echoed.
    public static func captureStream(_ path: String, kind: Kind, secret: Bool = false) throws {
        // Empty, and read as empty by every later open: nothing to put in its place.
        if path == "/dev/null" { return }
        if let problem = streamProblem(path, kind: kind) { throw InputError(path: path, message: problem) }
        guard let descriptor = streamDescriptor(path) else { return }
        func failure(_ what: String) -> InputError {
            InputError(path: path, message: "cannot \(what): \(String(cString: strerror(errno)))")
        }
        let copy = anonymousFile()
        guard copy >= 0 else { throw failure("make an in-memory copy") }
        defer { close(copy) }
        var echoing: termios?
        defer { if var modes = echoing { tcsetattr(descriptor, TCSANOW, &modes) } }
        if isatty(descriptor) == 1 {
            var modes = termios()
            if secret && tcgetattr(descriptor, &modes) == 0 && modes.c_lflag & tcflag_t(ECHO) != 0 {
                echoing = modes
                modes.c_lflag &= ~tcflag_t(ECHO)
                tcsetattr(descriptor, TCSANOW, &modes)
            }
            let shows = echoing == nil ? "what is typed shows" : "what is typed does not show"
            let prompt = "idpipe: reading \(path) from the terminal (\(shows)); end it with Ctrl-D on a line of its own\n"
            _ = prompt.utf8CString.withUnsafeBytes { write(2, $0.baseAddress, $0.count - 1) }
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            // A descriptor inherited in non-blocking mode: wait for its next bytes rather than take "none yet" for an error.
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&waiting, 1, -1) >= 0 || errno == EINTR else { throw failure("wait for it") }
                continue
            }
            guard count >= 0 else { throw failure("read it") }
            if count == 0 { break }
            guard buffer.withUnsafeBytes({ writeAll(copy, UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) else { throw failure("copy it to memory") }
        }
        guard dup2(copy, descriptor) >= 0 else { throw failure("put the copy in the stream's place") }
        // Where opening /dev/fd/N shares the descriptor's offset (not on Linux), reading starts at the beginning.
        lseek(descriptor, 0, SEEK_SET)
    }

    /// A memfd; -1 where there is none (then the stream is refused rather than copied to a disk).
    private static func anonymousFile() -> Int32 {
        #if os(Linux)
        return memfd_create("idpipe-side-input", IDPIPE_MFD_CLOEXEC)
        #else
        errno = ENOSYS
        return -1
        #endif
    }

    /// Writes all of `bytes` to `descriptor`, at `offset` or else at its position, through short writes and EINTR;
    /// false on an error, with `errno` set.
    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil) -> Bool {
        var written = 0
        while written < bytes.count {
            let rest = bytes.count - written
            let step = offset.map { pwrite(descriptor, bytes.baseAddress! + written, rest, off_t($0) + off_t(written)) }
                ?? write(descriptor, bytes.baseAddress! + written, rest)
            if step < 0 && errno == EINTR { continue }
            guard step > 0 else { return false }
            written += step
        }
        return true
    }

    /// The descriptors open when the process started: the ones its caller gave it.
    nonisolated(unsafe) private static var inherited: Set<Int32>?

    /// Notes which descriptors the caller gave (call it first thing in `main`). Afterwards a `/dev/fd/N` path whose N
    /// was not among them is refused: N is then a descriptor of idpipe's own (an eventfd, a signalfd), and reading it
    /// blocked forever, where the caller had only forgotten to open it (`5< <(zcat tokens.gz)`).
    public static func noteInheritedDescriptors() {
        // The listing of /proc/self/fd, less the listing's own descriptor; without /proc, the first 1024 are asked.
        guard let listing = opendir("/proc/self/fd") else {
            inherited = Set((0..<1024).filter { fcntl($0, F_GETFD) != -1 })
            return
        }
        defer { closedir(listing) }
        var found: Set<Int32> = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let descriptor = Int32(name), descriptor != dirfd(listing) { found.insert(descriptor) }
        }
        inherited = found
    }

    /// A descriptor path (`/dev/fd/N`, `/dev/stdin`) whose descriptor the caller did not give; nil for any other path,
    /// and when the descriptors were not noted.
    public static func notGivenDescriptor(_ path: String) -> Int32? {
        guard let inherited, let descriptor = streamDescriptor(path), !inherited.contains(descriptor) else { return nil }
        return descriptor
    }

    /// The descriptor a `/dev/fd/N`, `/proc/self/fd/N` or `/dev/stdin` path names.
    /// Why a stream or device at `path` cannot be read as a side input (`captureStream`), nil when it can: `validate`
    /// says the same as `plan` (it called a named pipe valid, and plan refused it).
    public static func streamProblem(_ path: String, kind: Kind) -> String? {
        guard kind == .stream || kind == .device, path != "/dev/null", streamDescriptor(path) == nil else { return nil }
        let what = kind == .device ? "is a device, not a file; give a file" : "is a named pipe or a socket; give it as a file"
        return "\(what), or as <(command), which can be read more than once here"
    }

    static func streamDescriptor(_ path: String) -> Int32? {
        if path == "/dev/stdin" { return 0 }
        for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
            return Int32(path.dropFirst(prefix.count))
        }
        return nil
    }
}

extension InputError {
    /// An export read by position that ends before the size it had when the run started.
    static func shrank(_ path: String, line: Int, at offset: Int64, size: Int64) -> InputError {
        InputError(path: path, position: SourcePosition(file: path, line: line, byteOffset: offset),
                   message: "the file ends at byte \(offset), before its size when the run started (\(size)); it changed while being read")
    }
}
