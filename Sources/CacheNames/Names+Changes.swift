import CacheModel
import Foundation
import Glibc

/// Operations that change names. Each changes memory under the namespace lock and hands the
/// matching index changes to the writer in the same hold, so the index commits them in the
/// order memory made them, a few milliseconds later.
extension Names {
    /// The corresponding FUSE operation is `MKDIR`. At the root it creates a pool.
    package func mkdir(parent: EntryID, name: [UInt8], mode: UInt32, caller: Caller) throws -> FileAttributes {
        try Self.validate(name)
        if parent == WellKnownEntry.root { return try makePool(name: name, mode: mode, caller: caller) }
        let id = try takeID()
        return try withLoaded([parent]) { namespace in
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

    /// A pool is a directory with settings. Both commit before MKDIR answers (rare), and the
    /// pool appears in memory once committed: the commit waits outside the namespace hold,
    /// and `poolChanges` keeps another pool change from slipping in between.
    private func makePool(name: [UInt8], mode: UInt32, caller: Caller) throws -> FileAttributes {
        guard let poolName = String(bytes: name, encoding: .utf8), PoolOverride.isValidPoolName(poolName) else {
            throw CacheError.invalidName
        }
        let id = try takeID()
        return try poolChanges.withLock { _ in
            guard try withLoaded([WellKnownEntry.root], { try $0.child(of: WellKnownEntry.root, named: Data(name)) }) == nil else {
                throw CacheError.exists
            }
            let time = now.nanoseconds
            var created = EntryRecord.directory(name: Data(name), parent: WellKnownEntry.root, pool: 0,
                                                mode: mode & 0o7777, uid: caller.uid, gid: caller.gid, now: time)
            created.id = id
            created.pool = id
            try index.commitNewPool(created, settings: PoolSettings())
            return namespace.withLock { namespace in
                poolSettings.withLock { $0[created.entryID] = PoolSettings() }
                replacement.apply(PoolSettings(), to: created.entryID)
                namespace.add(created)
                touch(WellKnownEntry.root, at: time, in: &namespace, subdirectories: 1)
                namespace.modify(created.entryID) { $0.lookups += 1 }
                return created.attributes
            }
        }
    }

    /// Removes the empty pool `name` and its settings; ENOTEMPTY while it holds anything,
    /// ENOENT when there is no such pool. Returns once the removal is committed.
    package func removePool(named text: String) throws {
        let name = Data(text.utf8)
        try poolChanges.withLock { _ in
            try change { namespace, effects in
                guard let pool = try namespace.child(of: WellKnownEntry.root, named: name), pool.isPool else {
                    throw CacheError.notFound
                }
                guard try !namespace.hasChildren(pool.entryID) else { throw CacheError.notEmpty }
                let time = now.nanoseconds
                namespace.removeName(LinkName(parent: WellKnownEntry.root, name: pool.name), of: pool.entryID, at: time)
                namespace.log(.delete(pool.entryID))
                poolSettings.withLock { $0[pool.entryID] = nil }
                replacement.removePool(pool.entryID)
                usage.removePool(pool.entryID)
                touch(WellKnownEntry.root, at: time, in: &namespace, subdirectories: -1)
                effects.notifications.append(
                    .deleted(parent: WellKnownEntry.root, child: pool.entryID, name: Array(pool.name)))
            }
            index.waitForCommit()
        }
        logger.info("removed pool \(text) and its policy")
    }

    /// The entry of a new file, open once for writing (`CREATE`), counted in its pool.
    package func addCreatedFile(_ id: EntryID, parent: EntryID, name: [UInt8], mode: UInt32, caller: Caller) throws
        -> EntryRecord
    {
        try change(loading: [parent]) { namespace, effects in
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
            // The file is empty yet: for its policy the pool's average file stands for its size.
            let missWeight = missWeight(in: created.pool)
            countIn(created, policySize: averageCachedFileSize(in: created.pool), in: &namespace)
            if !created.persistent && isOverLimit(created.pool) { effects.poolsToEnforce.insert(created.pool) }
            counters.takeBackMissOfCreate(pool: created.pool, bytes: missWeight)
            return created
        }
    }

    /// The corresponding FUSE operation is `UNLINK`: one name of a file, symlink or special
    /// file goes; the entry goes with its last name (see `removeUserName`).
    package func unlink(parent: EntryID, name: [UInt8]) throws {
        let time = now
        try change(loading: [parent]) { namespace, effects in
            _ = try directory(parent, in: &namespace)
            let link = LinkName(parent: parent, name: Data(name))
            guard let id = try namespace.childID(of: parent, named: link.name) else { throw CacheError.notFound }
            guard try namespace.record(id).kind != .directory else { throw CacheError.isDirectory }
            removeUserName(link, of: id, reason: "removed by a user", at: time, in: &namespace, effects: &effects)
            touch(parent, at: time.nanoseconds, in: &namespace)
        }
    }

    /// The corresponding FUSE operation is `RMDIR`; a pool directory answers EBUSY.
    package func rmdir(parent: EntryID, name: [UInt8]) throws {
        try withLoaded([parent]) { namespace in
            _ = try directory(parent, in: &namespace)
            guard let child = try namespace.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            guard child.kind == .directory else { throw CacheError.notDirectory }
            guard try !namespace.hasChildren(child.entryID) else { throw CacheError.notEmpty }
            // Emptying a pool (even `rm -rf MOUNT/POOL`) keeps it and its settings: only
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
    package func rename(parent: EntryID, name: [UInt8], newParent: EntryID, newName: [UInt8],
                        flags: RenameFlags) throws {
        try Self.validate(newName)
        let source = LinkName(parent: parent, name: Data(name))
        let destination = LinkName(parent: newParent, name: Data(newName))
        if flags.contains(.exchange) {
            guard !flags.contains(.noReplace) else { throw CacheError.io(EINVAL) }
            return try exchange(source, destination)
        }
        let time = now
        try change(loading: [parent, newParent]) { namespace, effects in
            _ = try directory(parent, in: &namespace)
            let targetParent = try directory(newParent, in: &namespace)
            guard let movedID = try namespace.childID(of: parent, named: source.name) else { throw CacheError.notFound }
            let moved = try namespace.record(movedID)
            guard !moved.isPool, newParent != WellKnownEntry.root else { throw CacheError.notPermitted }
            guard moved.pool == targetParent.pool else { throw CacheError.crossPool }
            if moved.kind == .directory { try refuseMoveIntoItself(movedID, destination: newParent, in: &namespace) }
            let existingID = try namespace.childID(of: newParent, named: destination.name)
            // Two names of one entry: rename(2) does nothing and succeeds.
            if existingID == movedID { return }
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
            if let existing {
                if existing.kind == .directory {
                    namespace.removeName(destination, of: existing.entryID, at: stamp)
                    namespace.log(.delete(existing.entryID))
                    touch(newParent, at: stamp, in: &namespace, subdirectories: -1)
                } else {
                    let reason = "replaced by a rename of \(String(decoding: name, as: UTF8.self))"
                    removeUserName(destination, of: existing.entryID, reason: reason, at: time, in: &namespace,
                                   effects: &effects)
                }
            }
            namespace.move(source, of: movedID, to: destination, at: stamp)
            let movedNow = try namespace.record(movedID)
            moveUnitBytes(from: moved, to: movedNow, in: &namespace)
            namespace.log(.update(movedNow))
            let movesDirectory = moved.kind == .directory && newParent != parent
            touch(parent, at: stamp, in: &namespace, subdirectories: movesDirectory ? -1 : 0)
            if newParent != parent { touch(newParent, at: stamp, in: &namespace, subdirectories: movesDirectory ? 1 : 0) }
        }
    }

    /// `renameat2(RENAME_EXCHANGE)`: two names of one pool swap what they name, atomically.
    private func exchange(_ first: LinkName, _ second: LinkName) throws {
        try withLoaded([first.parent, second.parent]) { namespace in
            let firstParent = try directory(first.parent, in: &namespace)
            let secondParent = try directory(second.parent, in: &namespace)
            guard let firstID = try namespace.childID(of: first.parent, named: first.name),
                  let secondID = try namespace.childID(of: second.parent, named: second.name)
            else { throw CacheError.notFound }
            guard firstID != secondID else { return }
            let firstRecord = try namespace.record(firstID)
            let secondRecord = try namespace.record(secondID)
            guard !firstRecord.isPool, !secondRecord.isPool else { throw CacheError.notPermitted }
            guard firstParent.pool == secondParent.pool else { throw CacheError.crossPool }
            // A directory may not end up inside itself.
            if firstRecord.kind == .directory { try refuseMoveIntoItself(firstID, destination: second.parent, in: &namespace) }
            if secondRecord.kind == .directory { try refuseMoveIntoItself(secondID, destination: first.parent, in: &namespace) }
            let time = now.nanoseconds
            namespace.exchange(first, of: firstID, with: second, of: secondID, at: time)
            // Each parent loses the subdirectory it gave and gains the one it got.
            let firstParentChange = (secondRecord.kind == .directory ? 1 : 0) - (firstRecord.kind == .directory ? 1 : 0)
            if first.parent == second.parent {
                touch(first.parent, at: time, in: &namespace)
            } else {
                touch(first.parent, at: time, in: &namespace, subdirectories: firstParentChange)
                touch(second.parent, at: time, in: &namespace, subdirectories: -firstParentChange)
            }
        }
    }

    // MARK: - Helpers (call inside the namespace hold)

    func directory(_ id: EntryID, in namespace: inout NamespaceState) throws -> EntryRecord {
        let found = try namespace.record(id)
        guard found.kind == .directory else { throw CacheError.notDirectory }
        guard found.parent != nil else { throw CacheError.notFound }
        return found
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

    private func refuseMoveIntoItself(_ moved: EntryID, destination: EntryID,
                                      in namespace: inout NamespaceState) throws {
        var current: EntryID? = destination
        while let id = current, id != WellKnownEntry.root, id != 0 {
            if id == moved { throw CacheError.io(EINVAL) }
            current = try namespace.record(id).parent
        }
    }

    /// A new entry in `parent`: the caller's (a setgid directory passes its group, and to a
    /// directory its setgid bit, on), with the directory's persistent, pin and expiration
    /// settings, as everything created beneath a flagged directory gets them.
    func newRecord(_ id: EntryID, kind: EntryKind, name: Data, in parent: EntryRecord, mode: UInt32,
                   caller: Caller, at time: Int64) -> EntryRecord {
        var record = EntryRecord(
            id: id, parent: parent.entryID, name: name, pool: parent.pool, kind: kind, mode: mode & 0o7777,
            uid: caller.uid, gid: caller.gid, size: 0, atime: time, mtime: time, ctime: time, lastAccess: time,
            persistent: parent.persistent, pinnedUntil: parent.pinnedUntil, expiration: parent.expiration,
            writing: false, durable: true, linkCount: kind == .directory ? 2 : 1)
        if parent.mode & UInt32(S_ISGID) != 0 {
            record.gid = parent.gid
            if kind == .directory { record.mode |= UInt32(S_ISGID) }
        }
        return record
    }
}
