import CFuse3
import CacheCore
import Glibc

// Open files and their bytes.

/// The corresponding FUSE operation is `CREATE`.
func cachefsCreate(_ request: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t,
                   _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let created = try context.engine.create(parent: EntryID(parent), name: nameBytes(name), mode: UInt32(mode),
                                                flags: info!.pointee.flags, caller: FuseContext.caller(request!))
        reply.created(created, info: info!, timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "create", context: context)
    }
}

/// The corresponding FUSE operation is `OPEN`.
func cachefsOpen(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let handle = try context.engine.open(EntryID(inode), flags: info!.pointee.flags)
        reply.opened(handle: handle, info: info!)
    } catch {
        reply.failure(error, operation: "open", context: context)
    }
}

/// The corresponding FUSE operation is `READ`: answered straight from the stored bytes'
/// descriptor, so the data need not pass through a Swift buffer.
func cachefsRead(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
                 _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let descriptor = try context.engine.readDescriptor(info!.pointee.fh)
        reply.data(descriptor: descriptor, size: size, offset: Int64(offset))
    } catch {
        reply.failure(error, operation: "read", context: context)
    }
}

/// The corresponding FUSE operation is `WRITE`.
func cachefsWrite(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ bytes: UnsafePointer<CChar>?, _ size: Int,
                  _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let buffer = UnsafeRawBufferPointer(start: bytes, count: size)
        let written = try context.engine.write(info!.pointee.fh, offset: Int64(offset), bytes: buffer)
        reply.written(written)
    } catch {
        reply.failure(error, operation: "write", context: context)
    }
}

/// The corresponding FUSE operation is `FLUSH`.
func cachefsFlush(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        try context.engine.flush(info!.pointee.fh)
        reply.error(0)
    } catch {
        reply.failure(error, operation: "flush", context: context)
    }
}

/// The corresponding FUSE operation is `RELEASE`.
func cachefsRelease(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    FuseContext.from(request!).engine.release(info!.pointee.fh)
    Reply(request!).error(0)
}

/// The corresponding FUSE operation is `FSYNC`.
func cachefsFsync(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ dataOnly: Int32,
                  _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        try context.engine.fsync(info!.pointee.fh, dataOnly: dataOnly != 0)
        reply.error(0)
    } catch {
        reply.failure(error, operation: "fsync", context: context)
    }
}
