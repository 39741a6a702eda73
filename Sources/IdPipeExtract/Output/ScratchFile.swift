import CLinux
import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

/// A new file in a folder that no other process can open by its name: one with no name (`O_TMPFILE`) where the
/// filesystem makes those, else a named one (`NAME.XXXXXX`, made exclusively) unlinked at once. Either way it goes when
/// its descriptor is closed, however the process ends.
public enum UnnamedFile {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The descriptor, and whether the file can still be given a name (`linkat`; only an `O_TMPFILE` one can).
    /// `fallbackName`: the name the fallback file starts with, in `folder`; `mode`: an unnamed file's (a named file is
    /// made with 0600, less the umask).
    public static func make(in folder: String, fallbackName: String, mode: mode_t = 0o600) throws(Failure) -> (descriptor: Int32, nameable: Bool) {
        let descriptor = open(folder, idpipe_o_tmpfile() | O_RDWR | O_CLOEXEC, mode)
        if descriptor >= 0 { return (descriptor, true) }
        var template = Array("\(folder)/\(fallbackName).XXXXXX".utf8CString)
        let named = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard named >= 0 else { throw Failure(description: "cannot write in \(folder): \(String(cString: strerror(errno)))") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return (named, false)
    }
}

/// The duplicate check's scratch space (`ScratchSpace`): an unnamed file beside the state store, gone when the plan
/// ends. A survey writes 8 bytes for each id accepted before it and each record after it (80 MB for 10M accounts).
public final class ScratchFile: ScratchSpace {
    private let folder: String
    private let descriptor: Int32
    private var length: Int64 = 0

    public init(folder: String) throws(UnnamedFile.Failure) {
        self.folder = folder
        do {
            descriptor = try UnnamedFile.make(in: folder, fallbackName: ".idpipe-scratch").descriptor
        } catch {
            throw UnnamedFile.Failure(description: "cannot make the duplicate check's scratch file: \(error.description)")
        }
    }

    deinit { close(descriptor) }

    public func append(_ bytes: UnsafeRawBufferPointer) throws -> Int64 {
        let start = length
        errno = 0
        guard FileInfo.writeAll(descriptor, bytes, at: start) else { throw failure("write", errno == 0 ? 0 : -1) }
        length += Int64(bytes.count)
        return start
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, from offset: Int64) throws {
        var done = 0
        while done < buffer.count {
            let count = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset + Int64(done)))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw failure("read", count) }
            done += count
        }
    }

    private func failure(_ verb: String, _ count: Int) -> UnnamedFile.Failure {
        let reason = count < 0 ? String(cString: strerror(errno)) : verb == "read" ? "the file ended" : "nothing was written"
        return UnnamedFile.Failure(description: "cannot \(verb) the duplicate check's scratch file in \(folder): \(reason)")
    }
}
