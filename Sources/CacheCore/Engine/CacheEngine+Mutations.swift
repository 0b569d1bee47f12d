import Foundation
import Glibc

/// Operations that change names and metadata. Each runs under `namespaceLock` and writes
/// the index before memory, so a crash between the two loses nothing that was answered.
extension CacheEngine {
    /// The corresponding FUSE operation is `MKDIR`. At the root it creates a pool.
    public func mkdir(parent: EntryID, name: [UInt8], mode: UInt32, caller: Caller) throws -> FileAttributes {
        try validate(name)
        return try namespaceLock.withLock { _ in
            let parentRecord = try directory(parent)
            let time = now.nanoseconds
            var permissions = mode & 0o7777
            let gid = parentRecord.mode & UInt32(S_ISGID) != 0 ? parentRecord.gid : caller.gid
            if parentRecord.mode & UInt32(S_ISGID) != 0 { permissions |= UInt32(S_ISGID) }
            var created = EntryRecord.directory(name: Data(name), parent: parent, pool: parentRecord.pool,
                                                mode: permissions, uid: caller.uid, gid: gid, now: time)
            if parent == WellKnownEntry.root {
                guard let poolName = String(bytes: name, encoding: .utf8),
                      PoolOverride.isValidPoolName(poolName) else { throw CacheError.invalidName }
                created = try index.insertPool(created, policy: PoolPolicy())
                policies.withLock { $0[created.entryID] = PoolPolicy() }
            } else {
                created.persistent = parentRecord.persistent
                created.pinnedUntil = parentRecord.pinnedUntil
                created.expiration = parentRecord.expiration
            }
            if parent == WellKnownEntry.root {
                try touchDirectory(parentRecord, at: time)
            } else {
                created = try index.insert(created, touchingParentAt: time)
                touchInMemory(parent, at: time)
            }
            return nodes.remember(created).attributes
        }
    }

    /// The corresponding FUSE operation is `CREATE`: a new file, opened.
    public func create(parent: EntryID, name: [UInt8], mode: UInt32, flags: Int32, caller: Caller) throws
        -> CreatedFile
    {
        try validate(name)
        return try namespaceLock.withLock { _ in
            let parentRecord = try directory(parent)
            guard parent != WellKnownEntry.root else { throw CacheError.notPermitted }
            let time = now.nanoseconds
            let gid = parentRecord.mode & UInt32(S_ISGID) != 0 ? parentRecord.gid : caller.gid
            var created = EntryRecord(
                id: nil, parent: parent, name: Data(name), pool: parentRecord.pool, kind: .file,
                mode: mode & 0o7777, uid: caller.uid, gid: gid, size: 0, atime: time, mtime: time, ctime: time,
                lastAccess: time, persistent: parentRecord.persistent, pinnedUntil: parentRecord.pinnedUntil,
                expiration: parentRecord.expiration, writing: true, durable: false)
            created = try index.insert(created, touchingParentAt: time)
            touchInMemory(parent, at: time)
            let fd: Int32
            do {
                fd = try disk.open(layout.objectPath(for: created.entryID), flags: O_RDWR | O_CREAT | O_TRUNC,
                                   mode: 0o600)
            } catch {
                try? index.delete(created.entryID)
                throw error
            }
            usage.addFile(1, bytes: 0, pool: created.pool, persistent: created.persistent)
            if !created.persistent && isOverLimit(created.pool) { requestEnforcement(of: [created.pool]) }
            _ = nodes.remember(created)
            let opened = nodes.open(created, writable: true)
            let handle = handles.add(OpenFile(entry: created.entryID, fd: fd, writable: true, pool: created.pool,
                                              sizeLimit: sizeLimit(for: opened)))
            return CreatedFile(attributes: opened.attributes, handle: handle)
        }
    }

    /// The corresponding FUSE operation is `UNLINK`.
    public func unlink(parent: EntryID, name: [UInt8]) throws {
        let child = try namespaceLock.withLock { _ in
            _ = try directory(parent)
            guard let child = try index.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            guard child.kind == .file else { throw CacheError.isDirectory }
            return child
        }
        guard removeFiles([child], as: .deleted, reason: "removed by a user").files == 1 else {
            throw CacheError.notFound
        }
    }

    /// The corresponding FUSE operation is `RMDIR`; an empty pool directory removes the pool.
    public func rmdir(parent: EntryID, name: [UInt8]) throws {
        try namespaceLock.withLock { _ in
            let parentRecord = try directory(parent)
            guard let child = try index.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            guard child.kind == .directory else { throw CacheError.notDirectory }
            guard try !index.hasChildren(child.entryID) else { throw CacheError.notEmpty }
            let time = now.nanoseconds
            try index.delete(child.entryID)
            nodes.modify(child.entryID) { $0.record.parent = nil }
            if child.isPool {
                policies.withLock { $0[child.entryID] = nil }
                usage.removePool(child.entryID)
            }
            try touchDirectory(parentRecord, at: time)
        }
    }

    /// The corresponding FUSE operation is `RENAME`. Within a pool it replaces a target as
    /// rename(2) does; across pools it answers EXDEV so `mv` copies instead.
    public func rename(parent: EntryID, name: [UInt8], newParent: EntryID, newName: [UInt8],
                       flags: RenameFlags) throws {
        guard !flags.contains(.exchange) else { throw CacheError.io(EINVAL) }
        try validate(newName)
        var replacedBytes: [EntryID] = []
        try namespaceLock.withLock { _ in
            let sourceParent = try directory(parent)
            let targetParent = try directory(newParent)
            guard let found = try index.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            var moved = nodes.record(found.entryID) ?? found
            guard !moved.isPool, newParent != WellKnownEntry.root else { throw CacheError.notPermitted }
            guard moved.pool == targetParent.pool else { throw CacheError.crossPool }
            if moved.kind == .directory { try refuseMoveIntoItself(moved.entryID, destination: newParent) }
            let existing = try index.child(of: newParent, named: Data(newName))
            if let existing, existing.entryID == moved.entryID { return }
            if let existing {
                guard !flags.contains(.noReplace) else { throw CacheError.exists }
                switch (moved.kind, existing.kind) {
                case (.directory, .file): throw CacheError.notDirectory
                case (.file, .directory): throw CacheError.isDirectory
                case (.directory, .directory):
                    guard try !index.hasChildren(existing.entryID) else { throw CacheError.notEmpty }
                case (.file, .file): break
                }
            }
            let time = now.nanoseconds
            moved.parent = newParent
            moved.name = Data(newName)
            moved.ctime = time
            var parents = [sourceParent]
            if newParent != parent { parents.append(targetParent) }
            for index in parents.indices {
                parents[index].mtime = time
                parents[index].ctime = time
            }
            let replaced = existing.map { nodes.record($0.entryID) ?? $0 }
            let replacedIsOpen = replaced.map { (nodes.node($0.entryID)?.openHandles ?? 0) > 0 } ?? false
            try index.rename(moved, replacing: replaced, keepReplacedBytes: replacedIsOpen, touchedParents: parents)
            nodes.modify(moved.entryID) { node in
                node.record.parent = moved.parent
                node.record.name = moved.name
                node.record.ctime = time
            }
            for parent in parents {
                nodes.modify(parent.entryID) { node in
                    node.record.mtime = time
                    node.record.ctime = time
                }
            }
            if let replaced, let id = forgetName(of: replaced, keptOpen: replacedIsOpen, at: time) {
                replacedBytes = [id]
            }
        }
        unlinkBytes(of: replacedBytes)
    }

    /// The corresponding FUSE operation is `SETATTR`: chmod, chown, truncate and utimens.
    public func setattr(_ id: EntryID, changes: AttributeChanges, handle: UInt64?) throws -> FileAttributes {
        try namespaceLock.withLock { _ in
            let current = try record(id)
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
            let (before, after) = try update(id) { updated in
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

    // MARK: - Helpers (call under namespaceLock)

    func directory(_ id: EntryID) throws -> EntryRecord {
        let found = try record(id)
        guard found.kind == .directory else { throw CacheError.notDirectory }
        guard found.parent != nil else { throw CacheError.notFound }
        return found
    }

    /// Moves a directory's times in memory after the index moved them.
    func touchInMemory(_ directory: EntryID, at time: Int64) {
        nodes.modify(directory) { node in
            node.record.mtime = time
            node.record.ctime = time
        }
    }

    func touchDirectory(_ directory: EntryRecord, at time: Int64) throws {
        try update(directory.entryID) { touched in
            touched.mtime = time
            touched.ctime = time
        }
    }

    /// Takes a removed file out of memory and out of its pool's usage (into pending while it
    /// is open). Returns the id whose bytes the caller unlinks once `namespaceLock` is released,
    /// or nil while a handle still holds them. Call under `namespaceLock`, after the index.
    func forgetName(of file: EntryRecord, keptOpen: Bool, at time: Int64) -> EntryID? {
        // In memory, the size is read in the same hold that takes the name, so a write
        // counts its growth either before (here subtracted) or after (as pending).
        let inMemory = nodes.modify(file.entryID) { (node: inout Node) -> Void in
            if node.record.kind == .file {
                usage.addFile(-1, bytes: -node.record.size, pool: node.record.pool, persistent: node.record.persistent)
                if keptOpen {
                    usage.addPending(node.record.size, pool: node.record.pool)
                    node.countedAsPending = true
                }
            }
            node.record.parent = nil
            node.record.ctime = time
        } != nil
        guard file.kind == .file else { return nil }
        if !inMemory {
            usage.addFile(-1, bytes: -file.size, pool: file.pool, persistent: file.persistent)
        }
        return keptOpen ? nil : file.entryID
    }

    private func refuseMoveIntoItself(_ moved: EntryID, destination: EntryID) throws {
        var current: EntryID? = destination
        while let id = current, id != WellKnownEntry.root, id != 0 {
            if id == moved { throw CacheError.io(EINVAL) }
            current = try record(id).parent
        }
    }

    /// Cached files may not outgrow their pool's max_size (EFBIG); persistent ones may.
    func sizeLimit(for record: EntryRecord) -> Int64? {
        guard !record.persistent else { return nil }
        let maxSize = policies.withLock { $0[record.pool]?.maxSize ?? 0 }
        return maxSize > 0 ? maxSize : nil
    }
}
