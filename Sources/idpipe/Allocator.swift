#if canImport(Glibc)
import Glibc
#endif

/// jemalloc, which the binary is linked with, keeps pages freed for 10 s before handing them back to the system.
/// A plan frees batch after batch for a few seconds, so its peak memory counted pages it no longer used: 141-153 MB
/// for the 1M-account benchmark, 133-141 MB when they go back within 500 ms, with no measurable cost in time (at
/// 0 ms, the system time tripled). A decay set otherwise (`MALLOC_CONF`, `/etc/malloc.conf`, a build's own default)
/// is left to rule: only jemalloc's default of 10 s is changed. A build without jemalloc, or with prefixed names
/// (`je_mallctl`), has no `mallctl`, and this does nothing.
enum Allocator {
    static let freedPagesKeptMilliseconds = 500
    static let jemallocDefaultMilliseconds = 10_000

    static func returnFreedPagesSooner() {
        // Looked up rather than declared: see above.
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, "mallctl") else { return }
        typealias Mallctl = @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?,
                                            UnsafeMutableRawPointer?, Int) -> Int32
        let mallctl = unsafeBitCast(symbol, to: Mallctl.self)
        var configured = 0
        var length = MemoryLayout<Int>.size
        guard mallctl("opt.dirty_decay_ms", &configured, &length, nil, 0) == 0, configured == jemallocDefaultMilliseconds else { return }
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
