import CacheModel
import CLinux
import Glibc

/// Directories are read from the index outside the namespace lock, never inside it: an
/// operation names the directories it needs, and those not loaded yet are read with the
/// lock released and installed in a hold of their own (``DirectoryLoad``), before the operation's
/// own hold. What a hold reaches without naming it (an entry known by id alone, a hard
/// link's other directory) throws a ``NamespaceMiss``: the hold ends, what it missed is
/// loaded outside, and the hold runs again.
extension Names {
    /// Runs `body` in one hold once `directories` (and whatever it misses) are loaded.
    func withLoaded<T>(_ directories: [EntryID], _ body: (inout NamespaceState) throws -> T) throws -> T {
        try change(loading: directories) { namespace, _ in try body(&namespace) }
    }

    /// Runs `body` under the namespace lock once `directories` are loaded, and carries out
    /// the effects it gathered once the lock is released (also when it throws: what it did
    /// before is real). A body that misses before changing anything runs again after the
    /// load; one that misses after a change would leave half an operation, so it fails
    /// (EIO, logged): an operation that changes several entries loads what it needs first.
    func change<T>(loading directories: [EntryID] = [],
                   _ body: (inout NamespaceState, inout NameEffects) throws -> T) throws -> T {
        var effects = NameEffects()
        defer { carryOut(effects) }
        var unloadable: [EntryID: any Error] = [:]
        var pending: [NamespaceMiss] = []
        for _ in 0..<Tunables.loadsPerOperation {
            for miss in pending { resolve(miss, into: &unloadable) }
            let attempt = try namespace.withLock { namespace -> HoldAttempt<T> in
                namespace.unloadable = unloadable
                let missing = directories.filter { !namespace.isLoaded($0) && unloadable[$0] == nil }
                guard missing.isEmpty else { return .missed(missing.map(NamespaceMiss.directory)) }
                let before = effects
                do {
                    return .done(try body(&namespace, &effects))
                } catch let miss as NamespaceMiss {
                    guard !namespace.changedInHold else { return .missedAfterChange(miss) }
                    effects = before
                    return .missed([miss])
                }
            }
            switch attempt {
            case .done(let result): return result
            case .missed(let misses): pending = misses
            case .missedAfterChange(let miss):
                logger.error("a change reached \(miss) after changing memory; it answers EIO")
                throw CacheError.io(EIO)
            }
        }
        logger.error("an operation kept missing entries after \(Tunables.loadsPerOperation) loads; it answers EIO")
        throw CacheError.io(EIO)
    }

    /// A change of what memory holds for certain (an open handle's file, an inode the kernel
    /// references): nothing to load, and the effects are carried out after the hold.
    func changeInMemory<T>(_ body: (inout NamespaceState, inout NameEffects) -> T) -> T {
        var effects = NameEffects()
        defer { carryOut(effects) }
        return namespace.withLock { body(&$0, &effects) }
    }

    /// Loads what a hold missed, outside the lock. What cannot be loaded is remembered for
    /// the next hold, which answers it (ENOENT, ENOTDIR, an index error) where it is reached.
    private func resolve(_ miss: NamespaceMiss, into unloadable: inout [EntryID: any Error]) {
        switch miss {
        case .directory(let directory):
            do {
                try load(directory)
            } catch {
                unloadable[directory] = error
            }
        case .entry(let id):
            do {
                guard let row = try directories.entry(id), let parent = row.parent else {
                    unloadable[id] = CacheError.notFound
                    return
                }
                let mark = unloadGate.mark
                try load(parent == 0 ? id : parent)
                // A loaded directory is the truth: a row it does not list is a removal not yet
                // committed, unless the directory was unloaded again since (then the next hold
                // misses it and it loads again).
                if !namespace.withLock({ $0.inodes[id] != nil }) && !unloadGate.unloadedSince(mark) {
                    unloadable[id] = CacheError.notFound
                }
            } catch {
                unloadable[id] = error
            }
        }
    }

    /// Loads the directories of `ids` that memory does not hold, each outside the lock.
    /// Afterwards an id memory does not hold is gone, but for those returned: their
    /// directories could not be read (logged).
    @discardableResult
    package func loadEntries(_ ids: [EntryID]) -> Set<EntryID> {
        var unloadable: [EntryID: any Error] = [:]
        for id in ids where !namespace.withLock({ $0.inodes[id] != nil }) {
            // Asked again each time: the load of one id's directory brings its neighbours.
            resolve(.entry(id), into: &unloadable)
        }
        var failed: Set<EntryID> = []
        for (id, error) in unloadable {
            if case CacheError.notFound = error { continue }
            logger.error("could not load the directory of entry \(id): \(error)")
            failed.insert(id)
        }
        return failed
    }

    /// Loads what a removal of every name of `ids` touches (the files' own directories and
    /// those of their hard links), each outside the lock: a removal of several files
    /// changes memory before it reaches the next one, so nothing may be missed on the way.
    func loadForRemoval(_ ids: [EntryID]) {
        loadEntries(ids)
        let directories = namespace.withLock { namespace in Set(ids.flatMap { namespace.directoriesToRemove($0) }) }
        var unloadable: [EntryID: any Error] = [:]
        for directory in directories { resolve(.directory(directory), into: &unloadable) }
    }

    /// Loads `directory` and every directory beneath it, each outside the lock. A directory
    /// that cannot be read is left to the hold that reaches it, which reports the error.
    package func loadSubtreeOutsideTheLock(_ directory: EntryID) {
        var pending = [directory]
        while let next = pending.popLast() {
            var unloadable: [EntryID: any Error] = [:]
            resolve(.directory(next), into: &unloadable)
            pending += namespace.withLock { $0.loadedSubdirectories(of: next) }
        }
    }

    /// Reads `directory` (and the ancestors memory lacks) from the index without the
    /// namespace lock and installs each in holds of a bounded number of names. One loader a
    /// directory: another that needs it meanwhile waits for that one's install to end.
    package func load(_ directory: EntryID) throws {
        let mark = unloadGate.mark
        var chain: [(id: EntryID, row: EntryRecord?)] = [(directory, nil)]
        // Ancestors first: a directory installs only where its own entry is in memory.
        while let last = chain.last, !namespace.withLock({ $0.inodes[last.id] != nil }) {
            guard let row = try directories.entry(last.id) else { throw CacheError.notFound }
            guard row.kind == .directory else { throw CacheError.notDirectory }
            chain[chain.count - 1].row = row
            guard let parent = row.parent, parent != 0 else { break }
            chain.append((parent, nil))
        }
        for (next, row) in chain.reversed() where !namespace.withLock({ $0.isLoaded(next) }) {
            try loadsInFlight.whileClaiming(next) {
                // Another loader may have installed it while this one waited for its claim.
                guard !namespace.withLock({ $0.isLoaded(next) }) else { return }
                var pages = DirectoryPages(next, ownEntry: row, from: directories)
                var installed = 0
                do {
                    while let load = try pages.next() {
                        var position: Int? = 0
                        while let start = position {
                            position = namespace.withLock { $0.install(load, from: start) }
                            yieldBetweenHolds()
                        }
                        installed += load.names.count
                        // Dropped (another loader was first, or the directory left memory).
                        if !load.isLast && !namespace.withLock({ $0.isInstalling(next) }) { break }
                    }
                } catch {
                    namespace.withLock { $0.abandonInstall(of: next) }
                    throw error
                }
                // Loaded counts as used: an idle time passes before it may leave memory again.
                let time = now.nanoseconds
                namespace.withLock { $0.noteUse(of: next, at: time) }
                // Growing the tables to a big directory freed their smaller copies; hand
                // those pages back rather than keep them resident.
                if installed >= Tunables.trimAfterLoadingEntries { malloc_trim(0) }
            }
        }
        do {
            try namespace.withLock { try $0.requireLoaded(directory) }
        } catch is NamespaceMiss {
            // Unloaded again since (idle past the memory budget): the hold that needs it misses
            // and loads it again.
            if unloadGate.unloadedSince(mark) { return }
            // Read, but not installed: its entry left memory meanwhile (a removal the index
            // has not committed yet).
            throw CacheError.notFound
        }
    }
}

private enum HoldAttempt<T> {
    case done(T)
    case missed([NamespaceMiss])
    /// Memory changed before the miss: the operation fails (logged after the hold).
    case missedAfterChange(NamespaceMiss)
}
