#if canImport(Glibc)
import Glibc
#endif

/// jemalloc, which the binary is linked with, keeps pages freed for 10 s before handing them back to the system.
/// A plan frees batch after batch for a few seconds, so its peak memory counted pages it no longer used: 144-152 MB
/// for the 1M-account benchmark, 133-137 MB when they go back within 500 ms, with no measurable cost in time (at
/// 0 ms, the system time tripled). A `MALLOC_CONF` that sets the decay itself is left to rule.
enum Allocator {
    static let freedPagesKeptMilliseconds = 500

    static func returnFreedPagesSooner() {
        if let conf = getenv("MALLOC_CONF").map({ String(cString: $0) }), conf.contains("dirty_decay_ms") { return }
        // Looked up rather than declared: a build without jemalloc simply has no `mallctl`.
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, "mallctl") else { return }
        typealias Mallctl = @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?,
                                            UnsafeMutableRawPointer?, Int) -> Int32
        let mallctl = unsafeBitCast(symbol, to: Mallctl.self)
        // The default for arenas made from now on (a thread's first allocation may make one), then each one there is
        // (one that is not in use yet refuses, and takes the default when made).
        var milliseconds = freedPagesKeptMilliseconds
        _ = mallctl("arenas.dirty_decay_ms", nil, nil, &milliseconds, MemoryLayout<Int>.size)
        var arenas: UInt32 = 0
        var size = MemoryLayout<UInt32>.size
        guard mallctl("arenas.narenas", &arenas, &size, nil, 0) == 0 else { return }
        for arena in 0..<arenas {
            milliseconds = freedPagesKeptMilliseconds
            _ = mallctl("arena.\(arena).dirty_decay_ms", nil, nil, &milliseconds, MemoryLayout<Int>.size)
        }
    }
}
