import CacheModel

/// Keeps unloads apart from the operations that load directories and rely on them in later
/// holds (``Names/keepingLoaded(_:)``): an unload starts only when none runs, and one that
/// starts meanwhile waits for the unloads under way to end. It also lets a loader tell "a
/// directory left memory because it was unloaded" from "its entry was removed"
/// (``mark``, ``unloadedSince(_:)``).
///
/// A leaf lock, held only to count: a keeper waits on it before taking any other lock, and an
/// unload counts itself here before its load claim.
struct UnloadGate: Sendable {
    private struct State {
        var keepers = 0
        var unloading = 0
        var unloaded = 0
    }

    private let state = ConditionLock(State())

    func keepingLoaded<T>(_ body: () throws -> T) rethrows -> T {
        state.withLock(waitingUntil: { $0.unloading == 0 }) { $0.keepers += 1 }
        defer { state.withLock { $0.keepers -= 1 } }
        return try body()
    }

    /// Runs `body` as an unload if no keeper runs; returns whether it ran.
    func unloadingIfNoKeepers(_ body: () -> Void) -> Bool {
        let started = state.withLock { state -> Bool in
            guard state.keepers == 0 else { return false }
            state.unloading += 1
            return true
        }
        guard started else { return false }
        body()
        state.withLock { state in
            state.unloading -= 1
            state.unloaded += 1
        }
        state.broadcast()
        return true
    }

    /// Where the unloads stand now, for ``unloadedSince(_:)``.
    var mark: Int { state.withLock { $0.unloaded } }

    /// Whether an unload ran at some time since `mark` was read (or runs now).
    func unloadedSince(_ mark: Int) -> Bool {
        state.withLock { $0.unloading > 0 || $0.unloaded != mark }
    }
}
