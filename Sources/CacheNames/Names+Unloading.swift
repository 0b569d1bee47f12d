import CacheModel
import CLinux

/// Directories leave memory again: when more entries are loaded than the memory budget
/// allows, a directory that nothing uses (no lookup or listing of its names for the idle
/// time, no name of it held by the kernel, no handle open, no write or fetch under way, no
/// subdirectory loaded) gives its names and their inodes back; the next request that needs
/// them loads it from the index as the first one did. Ids are entry ids, so an id the kernel
/// was given means the same file after the reload.
///
/// What memory alone keeps about those entries is theirs to keep: sizes, flags, pins and
/// times are in the index once the writer has committed (the unload waits for it before
/// another load may read the directory), user xattrs live in the index only, access times
/// not flushed yet keep their file loaded, and each pool's replacement state is keyed by
/// entry id, outside the names, so a file's place in its pool's order does not move.
extension Names {
    /// Entries memory holds now (every loaded directory's names, and entries known by id).
    package var loadedEntries: Int { namespace.withLock { $0.loadedEntries } }

    /// What those entries cost, as `memory_budget` counts it (``NamespaceState/loadedBytes``).
    package var loadedBytes: Int64 { namespace.withLock { $0.loadedBytes } }

    /// Runs `body`, which loads directories and changes them in later holds (a removal's
    /// batches, an eviction pass, a change of a directory's whole subtree), with no unload
    /// in between: a directory it loaded stays loaded until it returns.
    package func keepingLoaded<T>(_ body: () throws -> T) rethrows -> T {
        try unloadGate.keepingLoaded(body)
    }

    /// When the loaded entries cost more than the budget, unloads idle directories, least recently
    /// used first, until they fit (or nothing idle is left); returns how many directories
    /// and entries left memory, and how many were put off because an operation that relies on
    /// loaded directories ran (``keepingLoaded(_:)``): those are tried again at the next check.
    /// The memory unloader's thread calls it at every check.
    @discardableResult
    package func unloadIdleDirectories() -> (directories: Int, entries: Int, deferred: Int) {
        let budget = memoryBudget.bytes
        guard loadedBytes > budget else { return (0, 0, 0) }
        // Reads not flushed yet keep their files loaded (``isHeldOnlyByName``): flushed first.
        flushAccessTimes()
        let cutoff = now.nanoseconds - Int64(memoryBudget.idleSeconds * 1e9)
        var round = (directories: 0, entries: 0, deferred: 0)
        var tried: Set<EntryID> = []
        while loadedBytes > budget {
            let candidates = namespace.withLock { $0.idleLeafDirectories(usedBefore: cutoff) }
                .filter { !tried.contains($0) }
            guard !candidates.isEmpty else { break }
            for directory in candidates {
                guard loadedBytes > budget else { break }
                tried.insert(directory)
                switch unload(directory) {
                case .unloaded(let entries):
                    round.directories += 1
                    round.entries += entries
                case .deferred: round.deferred += 1
                case .stillHeld: break
                }
            }
        }
        let packed = namespace.withLock { $0.compactInodesIfSparse() }
        if packed || round.entries >= Tunables.trimAfterLoadingEntries {
            malloc_trim(0)
        }
        if round.directories > 0 {
            logger.debug("unloaded \(round.directories) idle directories (\(round.entries) entries)")
        }
        return round
    }

    /// Listings leave what they freed in the allocator: the pages of items and records a
    /// request thread built (each thread has an arena of its own) stay resident, about 4 MB
    /// after listing a million names. At each memory check after many names were listed,
    /// the allocator returns them to the kernel (`malloc_trim`); returns whether it did.
    @discardableResult
    package func returnMemoryFreedByListings() -> Bool {
        let trims = namespace.withLock { namespace in
            guard namespace.listedSinceTrim >= Tunables.trimAfterLoadingEntries else { return false }
            namespace.listedSinceTrim = 0
            return true
        }
        guard trims else { return false }
        malloc_trim(0)
        return true
    }

    /// What became of one directory an unload tried.
    enum UnloadOutcome {
        case unloaded(entries: Int)
        /// Something still holds one of its names: it stays, as used now.
        case stillHeld
        /// An operation that relies on loaded directories runs: not tried.
        case deferred
    }

    /// Unloads one directory, as its loader's counterpart: when no operation relies on loaded
    /// directories (``UnloadGate``), and under its load claim, so no load of it runs meanwhile.
    /// Its names leave first, in one short hold (from then on it is not loaded, and nothing
    /// can take a new hold on its children); then its children are
    /// checked and left to the index in bounded holds. If any is still held, the names go
    /// back as they were. Before the claim ends the index writer commits everything memory
    /// logged about them, so the next load reads what memory had.
    func unload(_ directory: EntryID) -> UnloadOutcome {
        var left: Int?
        guard unloadGate.unloadingIfNoKeepers({ left = unloadClaimed(directory) }) else { return .deferred }
        return left.map { .unloaded(entries: $0) } ?? .stillHeld
    }

    private func unloadClaimed(_ directory: EntryID) -> Int? {
        var left: Int?
        loadsInFlight.whileClaiming(directory) {
            guard let children = namespace.withLock({ $0.detachNames(of: directory) }) else { return }
            let ids = children.ids
            let parts = stride(from: 0, to: ids.count, by: Tunables.unloadNamesPerHold).map {
                ids[$0..<min($0 + Tunables.unloadNamesPerHold, ids.count)]
            }
            for part in parts {
                let idle = namespace.withLock { namespace in
                    part.allSatisfy { isHeldOnlyByName($0, in: directory, namespace) }
                }
                yieldBetweenHolds()
                guard idle else {
                    let time = now.nanoseconds
                    namespace.withLock { $0.reattach(children, to: directory, usedAt: time) }
                    return
                }
            }
            var count = 0
            for part in parts {
                count += namespace.withLock { namespace in
                    part.count { id in
                        isHeldOnlyByName(id, in: directory, namespace) && namespace.leaveToIndex(id, namedIn: directory)
                    }
                }
                yieldBetweenHolds()
            }
            index.waitForCommit()
            left = count
        }
        return left
    }

    /// ``NamespaceState/isHeldOnlyByName(_:in:)``, and no fetch or read not yet flushed
    /// needs the entry (leaf locks, taken inside the hold).
    private func isHeldOnlyByName(_ id: EntryID, in directory: EntryID, _ namespace: NamespaceState) -> Bool {
        namespace.isHeldOnlyByName(id, in: directory) && !fetches.isUnfinished(id) && access.pendingTime(id) == nil
    }
}
