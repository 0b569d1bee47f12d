import CacheModel
import Synchronization

/// Where an ``EncryptingDisk`` reports stored bytes that failed authentication. The disk is
/// made before the event log exists, so the engine starts listening once it does. Each
/// damaged block (or header) is reported once per mount: the kernel retries failed reads.
final class TamperAlarm: Sendable {
    typealias Listener = @Sendable (_ owner: EntryID, _ what: String) -> Void

    private struct State {
        var listener: Listener?
        var reported: Set<String> = []
    }

    private let state = Mutex(State())

    func listen(_ listener: @escaping Listener) {
        state.withLock { $0.listener = listener }
    }

    /// Reports become `tampered` events (and their log lines), named by entry id only.
    func record(in events: EventLog, clock: any WallClock) {
        listen { owner, what in
            events.record([CacheEvent(time: clock.now(), event: .tampered, pool: "", path: "entry \(owner)", size: 0,
                                      reason: what)])
        }
    }

    /// `what` names the damage without naming the file: the log of an encrypted store must not
    /// reveal names, so the entry id stands for it.
    func report(owner: EntryID, _ what: String) {
        let listener = state.withLock { state -> Listener? in
            state.reported.insert("\(owner) \(what)").inserted ? state.listener : nil
        }
        listener?(owner, what)
    }
}
