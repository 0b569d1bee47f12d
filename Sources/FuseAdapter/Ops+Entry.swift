import CacheModel
import CFuse3
import CacheCore
import Glibc

// Names and attributes. Each callback: context, one core call, one reply.

/// The corresponding FUSE operation is `LOOKUP`.
func cachefsLookup(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let found = try context.engine.lookup(parent: EntryID(parent), name: nameBytes(name))
        reply.entry(found, timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "lookup", context: context)
    }
}

/// The corresponding FUSE operation is `FORGET`.
func cachefsForget(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ count: UInt64) {
    let context = FuseContext.from(request!)
    context.engine.forget(EntryID(inode), count: count)
    context.writebackErrors.forget(UInt64(inode))
    Reply(request!).none()
}

/// The corresponding FUSE operation is `BATCH_FORGET`.
func cachefsForgetMulti(_ request: fuse_req_t?, _ count: Int, _ forgets: UnsafeMutablePointer<fuse_forget_data>?) {
    let context = FuseContext.from(request!)
    for item in UnsafeBufferPointer(start: forgets, count: count) {
        context.engine.forget(EntryID(item.ino), count: item.nlookup)
        context.writebackErrors.forget(UInt64(item.ino))
    }
    Reply(request!).none()
}

/// The corresponding FUSE operation is `GETATTR`.
func cachefsGetattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let attributes = try context.engine.getattr(EntryID(inode))
        reply.attributes(attributes, timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "getattr", context: context)
    }
}

/// The corresponding FUSE operation is `SETATTR`.
func cachefsSetattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ attributes: UnsafeMutablePointer<stat>?,
                    _ toSet: Int32, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    let wanted = attributes!.pointee
    var changes = AttributeChanges()
    if toSet & FUSE_SET_ATTR_MODE != 0 { changes.permissions = UInt32(wanted.st_mode) & 0o7777 }
    if toSet & FUSE_SET_ATTR_UID != 0 { changes.uid = wanted.st_uid }
    if toSet & FUSE_SET_ATTR_GID != 0 { changes.gid = wanted.st_gid }
    if toSet & FUSE_SET_ATTR_SIZE != 0 { changes.size = Int64(wanted.st_size) }
    if toSet & FUSE_SET_ATTR_ATIME_NOW != 0 {
        changes.accessTime = .now
    } else if toSet & FUSE_SET_ATTR_ATIME != 0 {
        changes.accessTime = .at(StatConversion.timestamp(wanted.st_atim))
    }
    if toSet & FUSE_SET_ATTR_MTIME_NOW != 0 {
        changes.modificationTime = .now
    } else if toSet & FUSE_SET_ATTR_MTIME != 0 {
        changes.modificationTime = .at(StatConversion.timestamp(wanted.st_mtim))
    }
    do {
        let updated = try context.engine.setattr(EntryID(inode), changes: changes, handle: info?.pointee.fh)
        reply.attributes(updated, timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "setattr", context: context)
    }
}

/// The corresponding FUSE operation is `MKDIR`.
func cachefsMkdir(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let created = try context.engine.mkdir(parent: EntryID(parent), name: nameBytes(name), mode: UInt32(mode),
                                               caller: FuseContext.caller(request!))
        reply.entry(created, timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "mkdir", context: context)
    }
}

/// The corresponding FUSE operation is `UNLINK`.
func cachefsUnlink(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        try context.engine.unlink(parent: EntryID(parent), name: nameBytes(name))
        reply.error(0)
    } catch {
        reply.failure(error, operation: "unlink", context: context)
    }
}

/// The corresponding FUSE operation is `RMDIR`.
func cachefsRmdir(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        try context.engine.rmdir(parent: EntryID(parent), name: nameBytes(name))
        reply.error(0)
    } catch {
        reply.failure(error, operation: "rmdir", context: context)
    }
}

/// The corresponding FUSE operation is `RENAME`.
func cachefsRename(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?,
                   _ newParent: fuse_ino_t, _ newName: UnsafePointer<CChar>?, _ flags: UInt32) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        try context.engine.rename(parent: EntryID(parent), name: nameBytes(name), newParent: EntryID(newParent),
                                  newName: nameBytes(newName), flags: RenameFlags(rawValue: flags))
        reply.error(0)
    } catch {
        reply.failure(error, operation: "rename", context: context)
    }
}

/// The corresponding FUSE operation is `MKNOD`: FIFOs, sockets, device nodes, regular files.
func cachefsMknod(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t,
                  _ device: dev_t) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let created = try context.engine.mknod(parent: EntryID(parent), name: nameBytes(name), mode: UInt32(mode),
                                               device: UInt64(device), caller: FuseContext.caller(request!))
        reply.entry(created, timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "mknod", context: context)
    }
}

/// The corresponding FUSE operation is `LINK`: a hard link within one pool.
func cachefsLink(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ newParent: fuse_ino_t,
                 _ newName: UnsafePointer<CChar>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let linked = try context.engine.link(EntryID(inode), newParent: EntryID(newParent), newName: nameBytes(newName))
        reply.entry(linked, timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "link", context: context)
    }
}

/// The corresponding FUSE operation is `SYMLINK`.
func cachefsSymlink(_ request: fuse_req_t?, _ target: UnsafePointer<CChar>?, _ parent: fuse_ino_t,
                    _ name: UnsafePointer<CChar>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let created = try context.engine.symlink(parent: EntryID(parent), name: nameBytes(name),
                                                 target: nameBytes(target), caller: FuseContext.caller(request!))
        reply.entry(created, timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "symlink", context: context)
    }
}

/// The corresponding FUSE operation is `READLINK`.
func cachefsReadlink(_ request: fuse_req_t?, _ inode: fuse_ino_t) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let target = try context.engine.readlink(EntryID(inode))
        reply.link(target)
    } catch {
        reply.failure(error, operation: "readlink", context: context)
    }
}

/// The corresponding FUSE operation is `STATFS`: `df` of a pool shows the pool, elsewhere
/// the store's filesystem.
func cachefsStatfs(_ request: fuse_req_t?, _ inode: fuse_ino_t) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let stats = try context.engine.statfs(of: EntryID(inode))
        reply.filesystem(stats)
    } catch {
        reply.failure(error, operation: "statfs", context: context)
    }
}
