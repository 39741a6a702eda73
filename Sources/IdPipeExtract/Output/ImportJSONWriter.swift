import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

/// Writes cleaned accounts as an import file, in the `auth:export` JSON layout (`ImportJSON`): the export's keys, and
/// the links of the ten exported providers. `firebase auth:import` takes only four of those and no `mfaInfo` (the plan counts the
/// accounts it would refuse); they are written all the same, as leaving them out would lose them.
///
/// The file is written as `NAME.TOKEN.partial` (TOKEN: the run's own, `RunRecord.importFileToken`, so that two plans
/// with their own state stores in one folder never take each other's) and takes its name once the plan is recorded as
/// finished (`publish`): a plan that fails or is stopped leaves the import file of an earlier plan in the same folder
/// whole, and nothing half written passes for an import file. Resumable: the staged file is cut back to a checkpoint's length.
/// The name must be free or a regular file: a symbolic link there (to a device, the state store, a report) would be
/// replaced, and the file is not written through one.
public final class ImportJSONWriter: CleanedAccountSink {
    public let path: String
    /// Where the file is written until it is published.
    public let stagedPath: String
    private var fd: Int32 = -1
    public private(set) var length: Int64 = 0
    private var wroteAccount = false
    /// What the file starts with, before its first account; and what `finish` ends it with.
    private static let opening = "{\"users\": ["
    private static let closing = "\n]}\n"

    /// Opens nothing yet: a plan already finished, or refused before it reads, leaves the folder as it was. `token`:
    /// the run's (`RunRecord.importFileToken`).
    public init(path: String, token: String) {
        self.path = path
        stagedPath = "\(path).\(token).partial"
    }

    /// The staged import files of the same name that are not this run's: `NAME.TOKEN.partial`, TOKEN digits and a
    /// hexadecimal part (digits alone from stores made before it had one).
    public func otherStagedFiles() -> [String] {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        func isToken(_ text: Substring) -> Bool {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            return (1...2).contains(parts.count) && parts[0].allSatisfy({ $0.isASCII && $0.isWholeNumber }) && !parts[0].isEmpty
                && (parts.count == 1 || (!parts[1].isEmpty && parts[1].allSatisfy({ $0.isASCII && $0.isHexDigit })))
        }
        return FileInfo.names(in: folder(of: path)).filter { entry in
            entry.hasPrefix(name + ".") && entry.hasSuffix(".partial") && entry.count > name.count + 9
                && isToken(entry.dropFirst(name.count + 1).dropLast(8))
        }.map { folder(of: path) + "/" + $0 }.filter { $0 != stagedPath }.sorted()
    }

    deinit { if fd >= 0 { close(fd) } }

    public func truncate(to length: Int64) throws {
        if fd < 0 {
            // Said now, not once the whole input is read.
            try refuseWhatIsNoFile()
            // Readable by its owner only: it holds the accounts unmasked, and their password hashes.
            fd = open(stagedPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw InputError(path: stagedPath, message: "cannot write: \(String(cString: strerror(errno)))") }
        }
        // What the interrupted run wrote must still be there: cut back, a shorter file would grow with zero bytes
        // (a removed one came back as 0 bytes of NUL then the rest) and pass for a finished import file.
        if length > 0 {
            var info = stat()
            let head = Array(Self.opening.utf8)
            var first = [UInt8](repeating: 0, count: head.count)
            let size = fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
            if size < length || pread(fd, &first, first.count, 0) != first.count || first != head {
                throw InputError(path: stagedPath, message: "holds \(size) bytes, not the \(length) the interrupted run wrote (or another start): it "
                    + "was changed or removed since; put it back, or plan afresh with a new state store")
            }
        }
        guard ftruncate(fd, off_t(length)) == 0 else { throw InputError(path: stagedPath, message: "cannot truncate: \(String(cString: strerror(errno)))") }
        self.length = length
        wroteAccount = length > Int64(Self.opening.utf8.count)
        if length == 0 { try append(Self.opening) }
    }

    public func write(objects: [UInt8]) throws {
        var bytes = Array((wroteAccount ? ",\n" : "\n").utf8)
        bytes.append(contentsOf: objects)
        wroteAccount = true
        try append(bytes)
    }

    /// Closes the list and syncs the file; it keeps its staged name until `publish`.
    public func finish() throws {
        try append(Self.closing)
        guard fsync(fd) == 0 else { throw InputError(path: stagedPath, message: "cannot sync: \(String(cString: strerror(errno)))") }
    }

    public func digest() throws -> String {
        try FileFingerprint.digest(of: stagedPath)
    }

    /// Gives the finished file its name, and syncs the folder so that the name survives a crash. `recordedLength` is
    /// the length of the accounts the plan recorded (its last checkpoint's): a staged file finished from them is
    /// exactly that and the closing long. When there is no such file, `required` says whether that is an error (the
    /// plan that just finished it) or not (published already, or a `.partial` of another plan, left as it is).
    public func publish(recordedLength: Int64, required: Bool) throws {
        var info = stat()
        let expected = recordedLength + Int64(Self.closing.utf8.count)
        let size: Int64? = stat(stagedPath, &info) == 0 ? Int64(info.st_size) : nil
        guard size == expected else {
            guard required else { return }
            throw InputError(path: stagedPath, message: size.map { "holds \($0) bytes, not the \(expected) the plan wrote: it was changed" }
                ?? "was removed before the plan could give it its name")
        }
        try refuseWhatIsNoFile()
        guard rename(stagedPath, path) == 0 else {
            throw InputError(path: path, message: "cannot rename \(stagedPath) to it: \(String(cString: strerror(errno)))")
        }
        let folderFd = open(folder(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderFd >= 0 {
            fsync(folderFd)
            close(folderFd)
        }
    }

    /// The import file replaces what has its name: only a regular file may.
    private func refuseWhatIsNoFile() throws {
        var info = stat()
        if lstat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG {
            throw InputError(path: path, message: "is not a regular file (a folder, a symbolic link, a device): the import file would replace "
                + "it; give the file another name, or --out another folder")
        }
    }

    private func append(_ text: String) throws {
        try append(Array(text.utf8))
    }

    private func append(_ bytes: [UInt8]) throws {
        guard bytes.withUnsafeBytes({ FileInfo.writeAll(fd, $0, at: length) }) else {
            throw InputError(path: stagedPath, message: "write failed: \(String(cString: strerror(errno)))")
        }
        length += Int64(bytes.count)
    }
}
