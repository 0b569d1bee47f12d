import CLinux

/// Directories are read from the index outside the namespace lock: an operation names the
/// directories it needs, and those not loaded yet are read with the lock released and
/// installed in a short hold (``DirectoryLoad``), before the operation's own hold. What an
/// operation reaches without naming it (an entry known by id alone, a hard link's other
/// directory) is loaded inside its hold, the rare fallback.
extension Names {
    /// Runs `body` in one hold once `directories` are loaded.
    func withLoaded<T>(_ directories: [EntryID], _ body: (inout NamespaceState) throws -> T) rethrows -> T {
        try change(loading: directories) { namespace, _ in try body(&namespace) }
    }

    /// `change` once `directories` are loaded: effects are carried out after the hold. In
    /// the common case (all loaded) the check and the change are one hold.
    func change<T>(loading directories: [EntryID],
                   _ body: (inout NamespaceState, inout NameEffects) throws -> T) rethrows -> T {
        var effects = NameEffects()
        defer { carryOut(effects) }
        let attempt = try namespace.withLock { namespace -> LoadAttempt<T> in
            let missing = directories.filter { !namespace.isLoaded($0) }
            guard missing.isEmpty else { return .missing(missing) }
            return .done(try body(&namespace, &effects))
        }
        switch attempt {
        case .done(let result):
            return result
        case .missing(let missing):
            for directory in missing { loadOutsideTheLock(directory) }
            // Whatever is still missing (a directory that does not exist, say) the body
            // reaches inside its hold, and answers for.
            return try namespace.withLock { try body(&$0, &effects) }
        }
    }

    /// Loads `directory` and every directory beneath it, each outside the lock.
    func loadSubtreeOutsideTheLock(_ directory: EntryID) {
        var pending = [directory]
        while let next = pending.popLast() {
            loadOutsideTheLock(next)
            pending += namespace.withLock { $0.loadedSubdirectories(of: next) }
        }
    }

    /// Reads `directory` (and the ancestors memory lacks) from the index without the
    /// namespace lock and installs each in a short hold. A failed read installs nothing:
    /// the operation's own hold then reads again and reports the error.
    func loadOutsideTheLock(_ directory: EntryID) {
        var chain = [directory]
        do {
            // Ancestors first: a directory installs only where its own entry is in memory.
            while let last = chain.last, !namespace.withLock({ $0.inodes[last] != nil }) {
                guard let row = try directorySource.entry(last), let parent = row.parent, parent != 0 else { break }
                chain.append(parent)
            }
            for next in chain.reversed() where !namespace.withLock({ $0.isLoaded(next) }) {
                let load = try DirectoryLoad(next, from: directorySource)
                let installed = namespace.withLock { $0.install(load) }
                // Growing the tables to a big directory freed their smaller copies; hand
                // those pages back rather than keep them resident.
                if installed >= NamespaceState.trimAfterLoading { malloc_trim(0) }
            }
        } catch {
            logger.debug("loading directory \(directory) outside the lock failed (read again inside): \(error)")
        }
    }
}

private enum LoadAttempt<T> {
    case done(T)
    case missing([EntryID])
}
