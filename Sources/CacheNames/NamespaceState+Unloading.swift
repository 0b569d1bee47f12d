import CacheModel

/// What an unload changes in memory (``Names/unloadIdleDirectories()``): a directory's names
/// leave, and so do the inodes nothing but those names holds, until the next load reads them
/// from the index again. Memory is then as if the directory had never been loaded.
extension NamespaceState {
    var loadedEntries: Int { inodes.count }

    /// What the loaded entries cost, as the memory budget counts it: each at
    /// ``Tunables/bytesPerLoadedEntry``, plus what its inode holds beyond (a long name, extras).
    var loadedBytes: Int64 { Int64(inodes.count) * Tunables.bytesPerLoadedEntry + Int64(inodes.heapBytes) }

    /// A name in `directory` was looked up or listed at `time`.
    mutating func noteUse(of directory: EntryID, at time: Int64) {
        directories[directory]?.lastUsed = time
    }

    /// Loaded directories last used at or before `cutoff`, least recently used first, that
    /// have no subdirectory loaded or loading (those go first: a loaded directory's own
    /// inode stays in memory). Never the root, whose names are the pools.
    func idleLeafDirectories(usedBefore cutoff: Int64) -> [EntryID] {
        var parentsOfLoaded: Set<EntryID> = []
        for id in directories.keys { if let parent = inodes[id]?.parent { parentsOfLoaded.insert(parent) } }
        for id in installing.keys { if let parent = inodes[id]?.parent { parentsOfLoaded.insert(parent) } }
        return directories
            .filter { id, children in
                id != WellKnownEntry.root && children.lastUsed <= cutoff && !parentsOfLoaded.contains(id)
            }
            .sorted { ($0.value.lastUsed, $0.key) < ($1.value.lastUsed, $1.key) }
            .map(\.key)
    }

    /// Takes a directory's names out of memory: from now on it counts as not loaded, so
    /// every request that needs its names misses and waits for the unloader's load claim.
    /// Nil when it is not loaded (or is the root).
    mutating func detachNames(of directory: EntryID) -> DirectoryChildren? {
        guard directory != WellKnownEntry.root else { return nil }
        return directories.removeValue(forKey: directory)
    }

    /// Puts back names ``detachNames(of:)`` took, unchanged: while a directory is not loaded
    /// nothing changes its names (see the namespace's invariants).
    mutating func reattach(_ children: DirectoryChildren, to directory: EntryID, usedAt time: Int64) {
        var children = children
        children.lastUsed = time
        directories[directory] = children
    }

    /// Whether nothing but its name in `directory` keeps `id` in memory: the kernel does
    /// not hold it, no handle is open, no write is under way, and it is no directory that is
    /// loaded or loading. An id no longer named there (a stale slot) needs nothing.
    func isHeldOnlyByName(_ id: EntryID, in directory: EntryID) -> Bool {
        guard let inode = inodes[id], inode.nameCount(in: directory) > 0 else { return true }
        return inode.lookups == 0 && inode.openHandles == 0 && inode.writers == 0 && !inode.isWriting
            && !(inode.isDirectory && (directories[id] != nil || installing[id] != nil))
    }

    /// Leaves the inode `id` named in the unloaded `directory` to the index, if nothing
    /// else holds it; one with a name in another directory (a hard link) stays, known by id,
    /// as memory's truth. Returns whether it left.
    mutating func leaveToIndex(_ id: EntryID, namedIn directory: EntryID) -> Bool {
        guard let inode = inodes[id], inode.parent == directory, inode.links.isEmpty,
              isHeldOnlyByName(id, in: directory) else { return false }
        leaveToIndex(id)
        return true
    }

    /// Packs the inode table once the positions unloads freed outnumber the inodes left.
    mutating func compactInodesIfSparse() -> Bool {
        guard inodes.vacantCount >= Tunables.compactAfterVacantInodes, inodes.vacantCount >= inodes.count else {
            return false
        }
        compactInodes()
        return true
    }
}
