import IdPipeCore
import IdPipeCrypto
#if canImport(Glibc)
import Glibc
#endif

/// SHA-256 of a file, advanced as the plan reads it: from the bytes a batch holds when it holds them, from the file
/// otherwise (a resumed plan proving the part it read before is unchanged).
public final class FileFingerprint: InputFingerprint {
    public let path: String
    private let hasher = SHA256Hasher()
    private var hashed: Int64 = 0
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)

    public init(path: String) {
        self.path = path
    }

    public func advance(to offset: Int64) throws -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw InputError(path: path, message: "cannot open: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        while hashed < offset {
            let want = Int(min(Int64(buffer.count), offset - hashed))
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, want, off_t(hashed)) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw InputError(path: path, message: "cannot read: \(String(cString: strerror(errno)))") }
            guard count > 0 else { throw InputError(path: path, message: "the file is shorter than before (changed while reading?)") }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            hashed += Int64(count)
        }
        return hasher.hexDigestSoFar()
    }

    public func advance(to offset: Int64, holding bytes: [UInt8], from start: Int64) throws -> String {
        guard start <= hashed, hashed < offset, offset <= start + Int64(bytes.count) else { return try advance(to: offset) }
        bytes.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[Int(hashed - start)..<Int(offset - start)])) }
        hashed = offset
        return hasher.hexDigestSoFar()
    }

    /// SHA-256 of a whole file: a side input, or the export when apply checks it.
    public static func digest(of path: String) throws -> String {
        let fingerprint = FileFingerprint(path: path)
        var info = stat()
        guard stat(path, &info) == 0 else { throw InputError(path: path, message: "cannot read: \(String(cString: strerror(errno)))") }
        return try fingerprint.advance(to: Int64(info.st_size))
    }
}
