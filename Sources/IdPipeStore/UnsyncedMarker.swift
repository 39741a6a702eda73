import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

/// `<state>.unsynced`: the store holds writes of a plan that may not be on the disk yet (`StateStore.deferSyncing`).
/// It names the system's boot it was written in, and the store's file (its inode). Written and synced before the first
/// such write, removed once the store is synced: at the end of the plan (`StateStore.syncDeferred`), or by apply's
/// `StateStore.makeDurable`, before it sends anything.
///
/// A process killed at any moment loses nothing that way: what SQLite wrote belongs to the system. Only a power loss or
/// a crash of the system can lose it, and the system boots again after either: a marker naming another boot means the
/// store may have lost writes, or be damaged. Nothing was applied from such a store (apply removes the marker first), so
/// a plan makes it again from the start, and every other command refuses it. A marker that names another file came
/// with a copy of the store: the copy was read whole. The plan itself syncs the store and removes the marker once it is
/// whole (`StateStore.syncDeferred`): only a plan the restart cut short is made again.
enum UnsyncedMarker {
    static func path(for statePath: String) -> String { statePath + ".unsynced" }
    /// Where the marker is written before it is renamed into place.
    static func stagedPath(for statePath: String) -> String { path(for: statePath) + ".partial" }

    /// This boot of the system (a new one after each start), nil when the kernel does not say.
    static func currentBoot() -> String? {
        guard let text = firstLine(of: "/proc/sys/kernel/random/boot_id"), !text.isEmpty else { return nil }
        return text
    }

    /// What the marker beside `statePath` says: its first line, "BOOT INODE"; nil when there is none. A marker that
    /// cannot be read says "" (no boot, no file: a restart cannot be ruled out).
    static func read(statePath: String) -> String? {
        guard access(path(for: statePath), F_OK) == 0 else { return nil }
        return firstLine(of: path(for: statePath)) ?? ""
    }

    /// What a marker written now for the store at `statePath` says; nil when the system or the file do not tell.
    static func current(statePath: String) -> String? {
        var info = stat()
        guard let boot = currentBoot(), stat(statePath, &info) == 0 else { return nil }
        return "\(boot) \(info.st_ino)"
    }

    /// True when the store's unsynced writes come from before the system last started.
    static func leftBeforeRestart(statePath: String) -> Bool {
        guard let marked = read(statePath: statePath) else { return false }
        let fields = marked.split(separator: " ")
        var info = stat()
        // No store: nothing to refuse (its marker is written again with the next plan's store).
        guard stat(statePath, &info) == 0 else { return false }
        // Another file's marker: the store is a copy.
        if fields.count == 2, let inode = UInt64(fields[1]), inode != UInt64(info.st_ino) { return false }
        guard fields.count != 2 || String(fields[0]) != currentBoot() else { return false }
        // A store apply has worked on cannot be the one marked (apply removes the marker before it sends anything):
        // another store was put in its place, on an inode used again. Its marker is stale.
        switch StateStore.recordedStatus(at: statePath) {
        case .applying, .applied: return false
        default: return true
        }
    }

    static func refuseIfLeftBeforeRestart(statePath: String) throws {
        if leftBeforeRestart(statePath: statePath) { throw StoreError.unsyncedBeforeRestart(path: statePath) }
    }

    private static func firstLine(of file: String) -> String? {
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = Glibc.read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self).trimmingSpaces
    }

    /// Writes the marker (`current`) and syncs it and its folder, so that it is on the disk before what it covers.
    /// Written beside and renamed into place: a process killed meanwhile leaves no marker, not an empty one.
    static func write(statePath: String, marking: String) throws {
        let marker = path(for: statePath)
        let staged = stagedPath(for: statePath)
        let text = "\(marking)\nidpipe: a plan wrote \(statePath) (the inode above) without syncing it to the disk, in the boot of the system named above. "
            + "`idpipe apply` syncs the store and removes this file. If the system restarts before that, the plan is made again from the start.\n"
        let descriptor = open(staged, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw StoreError.cannotOpen(path: staged, underlying: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        let written = text.withCString { Glibc.write(descriptor, $0, strlen($0)) }
        guard written == text.utf8.count else {
            throw StoreError.cannotOpen(path: staged, underlying: written < 0 ? String(cString: strerror(errno)) : "a short write")
        }
        try sync(staged, descriptor: descriptor)
        guard rename(staged, marker) == 0 else { throw StoreError.cannotOpen(path: marker, underlying: String(cString: strerror(errno))) }
        try sync(folder(of: statePath))
    }

    /// Removes the marker; the caller syncs the folder.
    static func remove(statePath: String) throws {
        let marker = path(for: statePath)
        guard unlink(marker) == 0 || errno == ENOENT else { throw StoreError.cannotOpen(path: marker, underlying: String(cString: strerror(errno))) }
    }

    /// `fsync` of a file or folder (opened here unless given).
    static func sync(_ file: String, descriptor: Int32? = nil) throws {
        let opened = descriptor ?? open(file, O_RDONLY | O_CLOEXEC)
        guard opened >= 0 else { throw StoreError.cannotOpen(path: file, underlying: String(cString: strerror(errno))) }
        defer { if descriptor == nil { close(opened) } }
        guard fsync(opened) == 0 else { throw StoreError.cannotOpen(path: file, underlying: "fsync: \(String(cString: strerror(errno)))") }
    }
}
