#if canImport(Glibc)
import Glibc
#endif

/// Files the tests write to read back, each under a fresh name in a folder of this test process.
public enum TemporaryFile {
    public static func write(_ bytes: [UInt8], name: String) -> String {
        let dir = "/tmp/idpipe-tests-\(getpid())"
        mkdir(dir, 0o755)
        let path = "\(dir)/\(UInt64.random(in: 0...UInt64.max))-\(name)"
        let file = fopen(path, "w")!
        fwrite(bytes, 1, bytes.count, file)
        fclose(file)
        return path
    }

    public static func write(_ text: String, name: String) -> String {
        write(Array(text.utf8), name: name)
    }

    /// A new empty folder, named after `purpose`.
    public static func directory(_ purpose: String) -> String {
        var template = Array("/tmp/idpipe-\(purpose)-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in String(cString: mkdtemp(buffer.baseAddress!)!) }
    }
}
