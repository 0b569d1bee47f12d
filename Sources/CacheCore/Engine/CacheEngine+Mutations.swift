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
            guard try namespace.child(of: parent, named: Data(name)) == nil else { throw CacheError.exists }
            let time = now.nanoseconds
            var created = EntryRecord.directory(name: Data(name), parent: parent, pool: parentRecord.pool,
                                                mode: mode & 0o7777, uid: caller.uid, gid: caller.gid, now: time)
            inheritOwnership(from: parentRecord, into: &created, caller: caller)
            created.persistent = parentRecord.persistent
            created.pinnedUntil = parentRecord.pinnedUntil
            created.expiration = parentRecord.expiration
            created.id = id
            namespace.add(created)
            namespace.log(.insert(created))
            touch(parent, at: time, in: &namespace)
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
            namespace.add(created)
            touch(WellKnownEntry.root, at: time, in: &namespace)
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
        let path = layout.objectPath(for: id)
        let fd = try disk.open(path, flags: O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        do {
            return try addCreatedFile(id, fd: fd, parent: parent, name: name, mode: mode, caller: caller)
        } catch {
            disk.close(fd)
            unlinkBytes(of: [id])
            throw error
        }
    }

    private func addCreatedFile(_ id: EntryID, fd: Int32, parent: EntryID, name: [UInt8], mode: UInt32,
                                caller: Caller) throws -> CreatedFile {
        try namespace.withLock { namespace in
            let parentRecord = try directory(parent, in: &namespace)
            guard parent != WellKnownEntry.root else { throw CacheError.notPermitted }
            guard try namespace.child(of: parent, named: Data(name)) == nil else { throw CacheError.exists }
            let time = now.nanoseconds
            var created = EntryRecord(
                id: id, parent: parent, name: Data(name), pool: parentRecord.pool, kind: .file,
                mode: mode & 0o7777, uid: caller.uid, gid: caller.gid, size: 0, atime: time, mtime: time,
                ctime: time, lastAccess: time, persistent: parentRecord.persistent,
                pinnedUntil: parentRecord.pinnedUntil, expiration: parentRecord.expiration, writing: true,
                durable: false)
            inheritOwnership(from: parentRecord, into: &created, caller: caller)
            namespace.add(created)
            namespace.log(.insert(created))
            touch(parent, at: time, in: &namespace)
            namespace.modify(created.entryID) { inode in
                inode.lookups += 1
                inode.openHandles += 1
                inode.writers += 1
            }
            usage.addFile(1, bytes: 0, pool: created.pool, persistent: created.persistent)
            takeBackMissOfCreate(pool: created.pool)
            if !created.persistent && isOverLimit(created.pool) { evictor.requestEnforcement(of: [created.pool]) }
            let handle = handles.add(OpenFile(entry: created.entryID, fd: fd, writable: true, pool: created.pool,
                                              sizeLimit: sizeLimit(for: created)))
            return CreatedFile(attributes: created.attributes, handle: handle)
        }
    }

    /// The corresponding FUSE operation is `UNLINK`.
    public func unlink(parent: EntryID, name: [UInt8]) throws {
        let child = try namespace.withLock { namespace in
            _ = try directory(parent, in: &namespace)
            guard let child = try namespace.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            guard child.kind == .file else { throw CacheError.isDirectory }
            return child
        }
        guard removeFiles([child], as: .deleted, reason: "removed by a user").files == 1 else {
            throw CacheError.notFound
        }
    }

    /// The corresponding FUSE operation is `RMDIR`; an empty pool directory removes the pool.
    public func rmdir(parent: EntryID, name: [UInt8]) throws {
        try namespace.withLock { namespace in
            _ = try directory(parent, in: &namespace)
            guard let child = try namespace.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            guard child.kind == .directory else { throw CacheError.notDirectory }
            guard try !namespace.hasChildren(child.entryID) else { throw CacheError.notEmpty }
            let time = now.nanoseconds
            namespace.removeName(of: child.entryID, at: time)
            namespace.log(.delete(child.entryID))
            if child.isPool {
                policies.withLock { $0[child.entryID] = nil }
                usage.removePool(child.entryID)
            }
            touch(parent, at: time, in: &namespace)
        }
    }

    /// The corresponding FUSE operation is `RENAME`. Within a pool it replaces a target as
    /// rename(2) does; across pools it answers EXDEV so `mv` copies instead.
    public func rename(parent: EntryID, name: [UInt8], newParent: EntryID, newName: [UInt8],
                       flags: RenameFlags) throws {
        guard !flags.contains(.exchange) else { throw CacheError.io(EINVAL) }
        try validate(newName)
        let replacedBytes = try namespace.withLock { namespace -> [EntryID] in
            _ = try directory(parent, in: &namespace)
            let targetParent = try directory(newParent, in: &namespace)
            guard let moved = try namespace.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            guard !moved.isPool, newParent != WellKnownEntry.root else { throw CacheError.notPermitted }
            guard moved.pool == targetParent.pool else { throw CacheError.crossPool }
            if moved.kind == .directory { try refuseMoveIntoItself(moved.entryID, destination: newParent, in: &namespace) }
            let existing = try namespace.child(of: newParent, named: Data(newName))
            if let existing, existing.entryID == moved.entryID { return [] }
            if let existing {
                guard !flags.contains(.noReplace) else { throw CacheError.exists }
                switch (moved.kind, existing.kind) {
                case (.directory, .file): throw CacheError.notDirectory
                case (.file, .directory): throw CacheError.isDirectory
                case (.directory, .directory):
                    guard try !namespace.hasChildren(existing.entryID) else { throw CacheError.notEmpty }
                case (.file, .file): break
                }
            }
            let time = now.nanoseconds
            var replaced: [EntryID] = []
            if let existing {
                if existing.kind == .directory {
                    namespace.removeName(of: existing.entryID, at: time)
                    namespace.log(.delete(existing.entryID))
                } else if let id = forgetName(of: existing, at: time, in: &namespace) {
                    replaced.append(id)
                }
            }
            namespace.move(moved.entryID, to: newParent, name: Data(newName), at: time)
            namespace.log(.update(try namespace.record(moved.entryID)))
            touch(parent, at: time, in: &namespace)
            if newParent != parent { touch(newParent, at: time, in: &namespace) }
            return replaced
        }
        discardBytes(of: replacedBytes)
    }

    /// The corresponding FUSE operation is `SETATTR`: chmod, chown, truncate and utimens.
    public func setattr(_ id: EntryID, changes: AttributeChanges, handle: UInt64?) throws -> FileAttributes {
        if changes.size != nil { try markWriting(id) }
        defer { if changes.size != nil { finishWriting(id) } }
        return try namespace.withLock { namespace in
            let current = try namespace.record(id)
            let time = now.nanoseconds
            if let size = changes.size {
                guard current.kind == .file else { throw CacheError.isDirectory }
                if size > current.size, let limit = sizeLimit(for: current), size > limit {
                    throw CacheError.fileTooLarge
                }
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

    /// A new entry belongs to the caller; a setgid directory passes its group (and, to a
    /// directory, its setgid bit) on.
    private func inheritOwnership(from parent: EntryRecord, into created: inout EntryRecord, caller: Caller) {
        guard parent.mode & UInt32(S_ISGID) != 0 else { return }
        created.gid = parent.gid
        if created.kind == .directory { created.mode |= UInt32(S_ISGID) }
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

    /// A directory whose names change moves its times, as on ext4.
    func touch(_ directory: EntryID, at time: Int64, in namespace: inout NamespaceState) {
        let touched = namespace.modify(directory) { inode -> EntryRecord in
            inode.record.mtime = time
            inode.record.ctime = time
            return inode.record
        }
        if let touched, touched.parent != nil { namespace.log(.update(touched)) }
    }

    /// Takes a file's name away and its size out of its pool's usage (into pending while it
    /// is open), and queues the row's detach. Returns the id whose bytes the caller discards,
    /// or nil while a handle still holds them.
    func forgetName(of file: EntryRecord, at time: Int64, in namespace: inout NamespaceState) -> EntryID? {
        let id = file.entryID
        // The size is read in the same hold that takes the name, so a write counts its
        // growth either before (here subtracted) or after (as pending).
        let (current, open) = namespace.modify(id) { inode -> (EntryRecord, Bool) in
            let open = inode.openHandles > 0
            if inode.record.kind == .file {
                usage.addFile(-1, bytes: -inode.record.size, pool: inode.record.pool,
                              persistent: inode.record.persistent)
                if open {
                    usage.addPending(inode.record.size, pool: inode.record.pool)
                    inode.countedAsPending = true
                }
            }
            return (inode.record, open)
        } ?? (file, false)
        namespace.removeName(of: id, at: time)
        namespace.log(.detach(id, ctime: time))
        guard current.kind == .file else { return nil }
        return open ? nil : id
    }

    private func refuseMoveIntoItself(_ moved: EntryID, destination: EntryID,
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
