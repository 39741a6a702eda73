import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C and SIGTERM while a command works: the first one calls `onSignal` (the command stops at its next safe point,
/// with everything so far recorded); a second one, or one while no `Interruption` is active, ends the process at once
/// (exit code 128 + the signal's number, as for a process the signal ended).
///
/// The signals are watched once for the whole process, and each `Interruption` takes its turn: libdispatch installs
/// its signal handler once, and an `Interruption` that set the default action back as it ended removed that handler
/// for good. The next one (`run`'s apply, after its plan) then never heard a signal, and a SIGTERM went unanswered
/// until the apply's end.
final class Interruption {
    private final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    private struct Turn {
        let flag: Flag
        let onSignal: @Sendable () -> Void
    }

    /// The active interruption's flag and handler; nil between them.
    private static let current = Mutex<Turn?>(nil)

    /// The signal sources, made once (the handler's disposition is ignored first, so that it is theirs to deliver).
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []
    private static let watching: Void = {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { Interruption.deliver(number) }
            source.resume()
            sources.append(source)
        }
    }()

    private let flag = Flag()

    init(_ onSignal: @escaping @Sendable () -> Void) {
        _ = Self.watching
        let turn = Turn(flag: flag, onSignal: onSignal)
        Self.current.withLock { $0 = turn }
    }

    private static func deliver(_ number: Int32) {
        let handler: (@Sendable () -> Void)? = current.withLock { turn in
            guard let turn, !turn.flag.raised.exchange(true, ordering: .sequentiallyConsistent) else { return nil }
            return turn.onSignal
        }
        guard let handler else {
            // No command to stop, or its stop was asked already: the end of the process, at once, with the code a
            // shell gives a process the signal ended. (`raise` on this libdispatch thread, which blocks every
            // signal, left the signal pending there: lost, and the next one killed the process mid-step.)
            _exit(128 + number)
        }
        handler()
    }

    var isRaised: Bool { flag.raised.load(ordering: .sequentiallyConsistent) }

    /// `isRaised`, for a task on another thread to ask.
    var raised: @Sendable () -> Bool {
        let flag = self.flag
        return { flag.raised.load(ordering: .sequentiallyConsistent) }
    }

    /// Stops watching for this command: a signal from now on has its default effect (unless another turn begins).
    func end() {
        let flag = self.flag
        Self.current.withLock { turn in
            if turn?.flag === flag { turn = nil }
        }
    }
}
