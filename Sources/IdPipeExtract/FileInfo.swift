#if canImport(Glibc)
import Glibc
#endif

enum FileInfo {
    static func size(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }
}
