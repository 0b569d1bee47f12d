import CacheModel

/// The directories being read and installed, or unloaded, now. A directory has one loader at a time: its
/// install takes several holds (``NamespaceState/install(_:from:)``), and a second loader
/// would read the index again for nothing, so it waits for the first to end instead.
///
/// Its lock is a leaf and is never held while waiting for anything but a claim; a loader
/// holds a claim across its index read and install, never while holding the namespace lock.
struct LoadsInFlight: Sendable {
    private let claimed = ConditionLock<Set<EntryID>>([])

    /// Runs `body` as the one loader of `directory`, after any loader of it has ended.
    func whileClaiming(_ directory: EntryID, _ body: () throws -> Void) rethrows {
        claimed.withLock(waitingUntil: { !$0.contains(directory) }) { _ = $0.insert(directory) }
        defer {
            claimed.withLock { _ = $0.remove(directory) }
            claimed.broadcast()
        }
        try body()
    }
}
