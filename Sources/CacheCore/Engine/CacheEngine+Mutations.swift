import Foundation
import Glibc

/// Operations that change names and metadata. Each changes memory under the namespace lock
/// and hands the matching index changes to the writer in the same hold, so the index
/// commits them in the order memory made them, a few milliseconds later.
extension CacheEngine {
    /// The corresponding FUSE operation is `MKDIR`. At the root it creates a pool.
    public func mkdir(parent: EntryID, name: [UInt8], mode: UInt32, caller: Caller) throws -> FileAttributes {
        try validate(name)
        if parent == WellKnownEntry.root { return try makePool(name: name, mode: mode, caller: caller) }
        let id = try takeID()
        return try namespace.withLock { namespace in
            let parentRecord = try directory(parent, in: &namespace)
            guard try namespace.childID(of: parent, named: Data(name)) == nil else { throw CacheError.exists }
            let time = now.nanoseconds
            let created = newRecord(id, kind: .directory, name: Data(name), in: parentRecord, mode: mode,
                                    caller: caller, at: time)
            namespace.add(created)
            namespace.log(.insert(created))
            touch(parent, at: time, in: &namespace, subdirectories: 1)
            namespace.modify(created.entryID) { $0.lookups += 1 }
            return created.attributes
        }
    }

    /// A pool is a directory with a policy; both commit before MKDIR answers (rare).
    private func makePool(name: [UInt8], mode: UInt32, caller: Caller) throws -> FileAttributes {
        guard let poolName = String(bytes: name, encoding: .utf8), PoolOverride.isValidPoolName(poolName) else {
            throw CacheError.invalidName
        }
        let id = try takeID()
        return try namespace.withLock { namespace in
            guard try namespace.child(of: WellKnownEntry.root, named: Data(name)) == nil else {
                throw CacheError.exists
            }
            let time = now.nanoseconds
            var created = EntryRecord.directory(name: Data(name), parent: WellKnownEntry.root, pool: 0,
                                                mode: mode & 0o7777, uid: caller.uid, gid: caller.gid, now: time)
            created.id = id
            created.pool = id
            let record = created
            try writer.perform { db in try IndexStore.insertPool(record, policy: PoolPolicy(), in: db) }
            policies.withLock { $0[created.entryID] = PoolPolicy() }
            evictor.replacement.apply(PoolPolicy(), to: created.entryID)
            namespace.add(created)
            touch(WellKnownEntry.root, at: time, in: &namespace, subdirectories: 1)
            namespace.modify(created.entryID) { $0.lookups += 1 }
            return created.attributes
        }
    }

    /// The corresponding FUSE operation is `CREATE`: a new file, opened.
    public func create(parent: EntryID, name: [UInt8], mode: UInt32, flags: Int32, caller: Caller) throws
        -> CreatedFile
    {
        try validate(name)
        // The bytes are created before the namespace lock is taken, so no request waits on
        // this I/O; should the daemon die before the row commits, they lie in the open id
        // range that recovery clears.
        let id = try takeID()
        let fd = try makeBytes(for: id)
        do {
            return try addCreatedFile(id, fd: fd, parent: parent, name: name, mode: mode, caller: caller,
                                      writeOnly: flags & O_ACCMODE == O_WRONLY)
        } catch {
            disk.close(fd)
            unlinkBytes(of: [id])
            throw error
        }
    }

    private func addCreatedFile(_ id: EntryID, fd: Int32, parent: EntryID, name: [UInt8], mode: UInt32,
                                caller: Caller, writeOnly: Bool) throws -> CreatedFile {
        try namespace.withLock { namespace in
            let parentRecord = try directory(parent, in: &namespace)
            guard parent != WellKnownEntry.root else { throw CacheError.notPermitted }
            guard try namespace.childID(of: parent, named: Data(name)) == nil else { throw CacheError.exists }
            let time = now.nanoseconds
            var created = newRecord(id, kind: .file, name: Data(name), in: parentRecord, mode: mode, caller: caller,
                                    at: time)
            created.writing = true
            created.durable = false
            namespace.add(created)
            namespace.log(.insert(created))
            touch(parent, at: time, in: &namespace)
            namespace.modify(created.entryID) { inode in
                inode.lookups += 1
                inode.openHandles += 1
                inode.writers += 1
            }
            usage.addFile(1, bytes: 0, pool: created.pool, persistent: created.persistent)
            if !created.persistent {
                // The file is empty yet: the pool's average file stands for its size.
                let poolUsage = usage.usage(of: created.pool)
                let averageSize = poolUsage.cachedFiles > 0 ? poolUsage.cachedBytes / poolUsage.cachedFiles : 0
                evictor.replacement.inserted(created.entryID, fingerprint: fingerprint(of: created), size: averageSize,
                                     pool: created.pool)
            }
            takeBackMissOfCreate(pool: created.pool)
            if !created.persistent && isOverLimit(created.pool) { evictor.requestEnforcement(of: [created.pool]) }
            let handle = handles.add(OpenFile(entry: created.entryID, fd: fd, writable: true, pool: created.pool,
                                              sizeLimit: sizeLimit(for: created)),
                                     writeOnly: writeOnly)
            return CreatedFile(attributes: created.attributes, handle: handle)
        }
    }

    /// The corresponding FUSE operation is `UNLINK`: one name of a file, symlink or special
    /// file goes; the entry goes with its last name (see `removeUserName`).
    public func unlink(parent: EntryID, name: [UInt8]) throws {
        let time = now
        let (removed, removedPath, discard) = try namespace.withLock { namespace -> (EntryRecord, String, EntryID?) in
            _ = try directory(parent, in: &namespace)
            let link = LinkName(parent: parent, name: Data(name))
            guard let id = try namespace.childID(of: parent, named: link.name) else { throw CacheError.notFound }
            let child = try namespace.record(id)
            guard child.kind != .directory else { throw CacheError.isDirectory }
            let linkPath = path(of: link, in: &namespace)
            let discard = removeUserName(link, of: id, at: time.nanoseconds, in: &namespace)
            touch(parent, at: time.nanoseconds, in: &namespace)
            return (child, linkPath, discard)
        }
        discardBytes(of: discard.map { [$0] } ?? [])
        if removed.linkCount <= 1 { recordDeletion(of: removed, path: removedPath, reason: "removed by a user", at: time) }
    }

    /// The corresponding FUSE operation is `RMDIR`; a pool directory answers EBUSY.
    public func rmdir(parent: EntryID, name: [UInt8]) throws {
        try namespace.withLock { namespace in
            _ = try directory(parent, in: &namespace)
            guard let child = try namespace.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            guard child.kind == .directory else { throw CacheError.notDirectory }
            guard try !namespace.hasChildren(child.entryID) else { throw CacheError.notEmpty }
            // Emptying a pool (even `rm -rf MOUNT/POOL`) keeps it and its policy: only
            // `user.cache.remove_pool` on the root removes one (`removePool`).
            guard !child.isPool else { throw CacheError.io(EBUSY) }
            let time = now.nanoseconds
            namespace.removeName(LinkName(parent: parent, name: child.name), of: child.entryID, at: time)
            namespace.log(.delete(child.entryID))
            touch(parent, at: time, in: &namespace, subdirectories: -1)
        }
    }

    /// The corresponding FUSE operation is `RENAME`. Within a pool it replaces a target as
    /// rename(2) does; across pools it answers EXDEV so `mv` copies instead. A file it
    /// replaces leaves a `deleted` event.
    public func rename(parent: EntryID, name: [UInt8], newParent: EntryID, newName: [UInt8],
                       flags: RenameFlags) throws {
        try validate(newName)
        if flags.contains(.exchange) {
            guard !flags.contains(.noReplace) else { throw CacheError.io(EINVAL) }
            return try exchange(LinkName(parent: parent, name: Data(name)), LinkName(parent: newParent, name: Data(newName)))
        }
        let time = now
        let source = LinkName(parent: parent, name: Data(name))
        let destination = LinkName(parent: newParent, name: Data(newName))
        let replaced = try namespace.withLock { namespace -> (record: EntryRecord, path: String, discard: EntryID?)? in
            _ = try directory(parent, in: &namespace)
            let targetParent = try directory(newParent, in: &namespace)
            guard let movedID = try namespace.childID(of: parent, named: source.name) else { throw CacheError.notFound }
            let moved = try namespace.record(movedID)
            guard !moved.isPool, newParent != WellKnownEntry.root else { throw CacheError.notPermitted }
            guard moved.pool == targetParent.pool else { throw CacheError.crossPool }
            if moved.kind == .directory { try refuseMoveIntoItself(movedID, destination: newParent, in: &namespace) }
            let existingID = try namespace.childID(of: newParent, named: destination.name)
            // Two names of one entry: rename(2) does nothing and succeeds.
            if existingID == movedID { return nil }
            let existing = try existingID.map { try namespace.record($0) }
            if let existing {
                guard !flags.contains(.noReplace) else { throw CacheError.exists }
                switch (moved.kind == .directory, existing.kind == .directory) {
                case (true, false): throw CacheError.notDirectory
                case (false, true): throw CacheError.isDirectory
                case (true, true):
                    guard try !namespace.hasChildren(existing.entryID) else { throw CacheError.notEmpty }
                case (false, false): break
                }
            }
            let stamp = time.nanoseconds
            var replaced: (record: EntryRecord, path: String, discard: EntryID?)?
            if let existing {
                if existing.kind == .directory {
                    namespace.removeName(destination, of: existing.entryID, at: stamp)
                    namespace.log(.delete(existing.entryID))
                    touch(newParent, at: stamp, in: &namespace, subdirectories: -1)
                } else {
                    let replacedPath = path(of: destination, in: &namespace)
                    let discard = removeUserName(destination, of: existing.entryID, at: stamp, in: &namespace)
                    replaced = (existing, replacedPath, discard)
                }
            }
            namespace.move(source, of: movedID, to: destination, at: stamp)
            namespace.log(.update(try namespace.record(movedID)))
            let movesDirectory = moved.kind == .directory && newParent != parent
            touch(parent, at: stamp, in: &namespace, subdirectories: movesDirectory ? -1 : 0)
            if newParent != parent { touch(newParent, at: stamp, in: &namespace, subdirectories: movesDirectory ? 1 : 0) }
            return replaced
        }
        guard let replaced else { return }
        discardBytes(of: replaced.discard.map { [$0] } ?? [])
        if replaced.record.linkCount <= 1 {
            let reason = "replaced by a rename of \(String(decoding: name, as: UTF8.self))"
            recordDeletion(of: replaced.record, path: replaced.path, reason: reason, at: time)
        }
    }

    /// The corresponding FUSE operation is `SETATTR`: chmod, chown, truncate and utimens.
    public func setattr(_ id: EntryID, changes: AttributeChanges, handle: UInt64?) throws -> FileAttributes {
        if changes.size != nil {
            // A truncation changes a complete file: one still being fetched completes first.
            if let fetch = try joinFetch(id) { try fetch.waitForCompletion() }
            try markWriting(id)
        }
        defer { if changes.size != nil { finishWriting(id) } }
        return try namespace.withLock { namespace in
            let current = try namespace.record(id)
            let time = now.nanoseconds
            if let size = changes.size {
                guard current.kind == .file else { throw CacheError.isDirectory }
                if size > current.size, let limit = sizeLimit(for: current), size > limit {
                    throw CacheError.fileTooLarge
                }
                // A handle already released (a racing close): truncate by path below, as without one.
                if let handle, let file = try? handles.get(handle) {
                    try disk.ftruncate(file.fd, length: size)
                } else {
                    try disk.truncate(layout.objectPath(for: id), length: size)
                }
            }
            let (before, after) = try update(id, in: &namespace) { updated in
                if let permissions = changes.permissions { updated.mode = permissions & 0o7777 }
                if let uid = changes.uid { updated.uid = uid }
                if let gid = changes.gid { updated.gid = gid }
                if let size = changes.size {
                    updated.size = size
                    updated.mtime = time
                    updated.durable = false
                    // Growing leaves a hole; shrinking frees the blocks past the end.
                    updated.blocks = min(updated.blocks, Tunables.blocks(forSize: size))
                }
                switch changes.accessTime {
                case .now: updated.atime = time
                case .at(let stamp): updated.atime = stamp.nanoseconds
                case nil: break
                }
                switch changes.modificationTime {
                case .now: updated.mtime = time
                case .at(let stamp): updated.mtime = stamp.nanoseconds
                case nil: break
                }
                updated.ctime = time
            }
            if changes.size != nil, after.parent != nil {
                usage.addBytes(after.size - before.size, pool: after.pool, persistent: after.persistent)
            }
            return after.attributes
        }
    }

    // MARK: - Helpers (call inside namespace.withLock)

    func directory(_ id: EntryID, in namespace: inout NamespaceState) throws -> EntryRecord {
        let found = try namespace.record(id)
        guard found.kind == .directory else { throw CacheError.notDirectory }
        guard found.parent != nil else { throw CacheError.notFound }
        return found
    }

    /// An id for a new entry; when its range is used up, the next range is committed first.
    func takeID() throws -> EntryID {
        let taken = ids.withLock { $0.take() }
        if let bound = taken.newBound {
            writer.enqueue(.setting(key: IDReservation.settingKey, value: String(bound)))
            writer.flush()
        }
        return taken.id
    }

    /// A directory whose names change moves its times, as on ext4, and its link count
    /// follows the number of its subdirectories.
    func touch(_ directory: EntryID, at time: Int64, in namespace: inout NamespaceState, subdirectories: Int = 0) {
        let touched = namespace.modify(directory) { inode -> EntryRecord in
            inode.record.mtime = time
            inode.record.ctime = time
            inode.record.linkCount = UInt32(max(Int(inode.record.linkCount) + subdirectories, 2))
            return inode.record
        }
        if let touched, touched.parent != nil { namespace.log(.update(touched)) }
    }

    func refuseMoveIntoItself(_ moved: EntryID, destination: EntryID,
                                      in namespace: inout NamespaceState) throws {
        var current: EntryID? = destination
        while let id = current, id != WellKnownEntry.root, id != 0 {
            if id == moved { throw CacheError.io(EINVAL) }
            current = try namespace.record(id).parent
        }
    }

    /// Cached files may not outgrow their pool's max_size (EFBIG); persistent ones may.
    func sizeLimit(for record: EntryRecord) -> Int64? {
        guard !record.persistent else { return nil }
        let maxSize = policies.withLock { $0[record.pool]?.maxSize ?? 0 }
        return maxSize > 0 ? maxSize : nil
    }
}
