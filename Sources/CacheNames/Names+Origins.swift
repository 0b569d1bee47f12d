import CacheModel
import struct Foundation.Data

/// What a read-through pool's lookups and fetches change in the namespace: an origin's
/// entry added, a fetch counted and finished. Each is one hold; the fetch itself runs
/// outside (CacheCore's `ReadThrough`).
extension Names {
    /// The pool of a directory and its path below the pool, as the origin names it.
    package func originPath(of directory: EntryID) throws -> (pool: EntryID, path: [[UInt8]]) {
        try withLoaded([]) { namespace in
            (try namespace.record(directory).pool, try originPath(of: directory, in: &namespace))
        }
    }

    private func originPath(of directory: EntryID, in namespace: inout NamespaceState) throws -> [[UInt8]] {
        var components: [[UInt8]] = []
        var current = try namespace.record(directory)
        while !current.isPool, let parent = current.parent, components.count < 4096 {
            components.append(Array(current.name))
            current = try namespace.record(parent)
        }
        return components.reversed()
    }

    /// An origin's entry named in `parent` (counting one kernel reference), unless another
    /// lookup or a create added the name meanwhile: then that one, not new. A file is
    /// incomplete until its fetch ends, and counts against its pool only from its start;
    /// EFBIG for one larger than its pool may hold, unless it is not to be kept
    /// (`keptIfFetched` false: it counts against nothing). `addPendingFetch` runs in the hold that
    /// adds a new file, so its fetch is pending before anything can open it.
    package func addOriginEntry(_ id: EntryID, parent: EntryID, name: [UInt8], kind: EntryKind, size: Int64,
                                keptIfFetched: Bool = true, addPendingFetch: ((EntryID) -> Void)?) throws
        -> (attributes: FileAttributes, isNew: Bool)
    {
        try withLoaded([parent]) { namespace in
            let parentRecord = try directory(parent, in: &namespace)
            if let existing = try namespace.child(of: parent, named: Data(name)) {
                namespace.modify(existing.entryID) { $0.lookups += 1 }
                return (existing.attributes, false)
            }
            if kind == .file, keptIfFetched, !parentRecord.persistent, let limit = sizeLimit(for: parentRecord),
               size > limit {
                throw CacheError.fileTooLarge
            }
            let time = now.nanoseconds
            let owner = Caller(uid: parentRecord.uid, gid: parentRecord.gid, pid: 0)
            var created = newRecord(id, kind: kind, name: Data(name), in: parentRecord,
                                    mode: kind == .directory ? 0o755 : 0o644, caller: owner, at: time)
            if kind == .file {
                // Incomplete until the fetch ends; persistence (which recovery would keep
                // torn) is taken from the directory only then.
                created.size = size
                created.writing = true
                created.durable = false
                created.persistent = false
            }
            namespace.add(created)
            namespace.log(.insert(created))
            touch(parent, at: time, in: &namespace, subdirectories: kind == .directory ? 1 : 0)
            namespace.modify(id) { $0.lookups += 1 }
            // Not counted against the pool until its fetch starts: a lookup stores nothing.
            addPendingFetch?(id)
            return (created.attributes, true)
        }
    }

    /// Whether a file not fetched yet is larger than its pool may hold now (its limit lowered
    /// since the lookup), unless it will be persistent.
    package func isTooLargeToFetch(_ id: EntryID, size: Int64) -> Bool {
        namespace.withLock { namespace in
            guard let record = namespace.inodes[id]?.record, !inheritsPersistence(record, in: namespace),
                  let limit = sizeLimit(for: record) else { return false }
            return size > limit
        }
    }

    /// A fetch starts: the file counts against its pool at its announced size (pending
    /// bytes if it lost its name but is still open), unless it will be persistent, which
    /// counts only once complete. Returns whether it counted a named file.
    package func countFetchStart(_ id: EntryID) -> Bool {
        changeInMemory { namespace, _ in
            guard let inode = namespace.inodes[id], !fetches.isStopping,
                  inode.hasName || inode.keptUntilUnreferenced,
                  !inheritsPersistence(inode.record, in: namespace), fetches.markCounted(id) else { return false }
            guard inode.hasName else {
                usage.addPending(inode.record.size, pool: inode.record.pool)
                return false
            }
            countIn(inode.record, in: &namespace)
            return true
        }
    }

    /// Blocks of a file held in blocks were stored or dropped: `change` makes the change to
    /// its blocks and returns the bytes it adds (negative: frees), counted here in the same
    /// hold, so a removal reads held bytes and usage that agree. A file with no name left
    /// counts them as pending; one gone counts nothing (its blocks' `change` returns 0).
    package func countBlockBytes(_ id: EntryID, _ change: () -> Int64) {
        changeInMemory { namespace, _ in
            let delta = change()
            guard delta != 0, let inode = namespace.inodes[id] else { return }
            if inode.hasName {
                usage.addBytes(delta, pool: inode.record.pool, persistent: false)
            } else if inode.keptUntilUnreferenced {
                usage.addPending(delta, pool: inode.record.pool)
            }
        }
    }

    /// Whether anyone can still read a file being fetched: it has a name or an open handle.
    package func isWanted(_ id: EntryID) -> Bool {
        namespace.withLock { namespace in
            guard let inode = namespace.inodes[id] else { return false }
            return inode.hasName || inode.openHandles > 0
        }
    }

    /// A fetch's bytes are all stored: the entry becomes an ordinary cached file (persistent
    /// if its directory is); one not counted yet counts from now, and the origin's `version`
    /// goes to the writer with it. The fetch's time (`fetchMilliseconds`) becomes the file's
    /// miss cost, unless its writer set one. Throws when its record cannot change.
    package func finishFetch(_ id: EntryID, blocks: Int64, at time: Int64, fetchMilliseconds: Int64,
                             version: OriginDelivery) throws {
        try withLoaded([]) { namespace in
            guard let inode = namespace.inodes[id], inode.hasName else { return }
            let becomesPersistent = inheritsPersistence(inode.record, in: namespace)
            if let held = fetches.finishBlocks(id) {
                usage.addBytes(-held, pool: inode.record.pool, persistent: false)
                countIn(inode.record, in: &namespace)
            } else if fetches.markCounted(id) {
                countIn(inode.record, in: &namespace)
            }
            // A change of persistence moves the counted file between the figures.
            try update(id, in: &namespace) { record in
                record.writing = false
                record.blocks = blocks
                record.lastAccess = time
                // At least 1: 0 means unknown.
                if record.costMilliseconds == 0 { record.costMilliseconds = max(fetchMilliseconds, 1) }
                if becomesPersistent { record.persistent = true }
            }
            index.enqueueOriginVersion(of: id, etag: version.etag, lastModified: version.lastModified)
        }
    }

    /// Whether a file of an origin pool not fetched yet becomes persistent when complete.
    package func becomesPersistentWhenFetched(_ id: EntryID) -> Bool {
        namespace.withLock { namespace in
            namespace.inodes[id].map { inheritsPersistence($0.record, in: namespace) } ?? false
        }
    }

    /// Whether a file of an origin pool becomes persistent when complete: its directory is.
    /// The parent of a file being fetched is loaded (its lookup loaded it): memory only.
    private func inheritsPersistence(_ record: EntryRecord, in namespace: NamespaceState) -> Bool {
        record.parent.flatMap { namespace.inodes[$0]?.record }?.persistent ?? false
    }
}
