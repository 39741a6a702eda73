import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C and SIGTERM while a command works: the first one calls `onSignal` (the command stops at its next safe point,
/// with everything so far recorded); the handlers then go back to the default, so a second one ends the process at once.
final class Interruption {
    private final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    private let flag = Flag()
    private var sources: [DispatchSourceSignal] = []

    init(_ onSignal: @escaping @Sendable () -> Void) {
        let flag = self.flag
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                guard !flag.raised.exchange(true, ordering: .sequentiallyConsistent) else { return }
                onSignal()
                signal(SIGINT, SIG_DFL)
                signal(SIGTERM, SIG_DFL)
            }
            source.resume()
            sources.append(source)
        }
    }

    var isRaised: Bool { flag.raised.load(ordering: .sequentiallyConsistent) }

    /// Stops watching; the signals have their default effect again.
    func end() {
        for source in sources { source.cancel() }
        sources = []
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
