import CacheModel
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
        reply.created(created, bypassingPageCache: context.bypassesPageCache(created), info: info!,
                      timeouts: context.timeouts)
    } catch {
        reply.failure(error, operation: "create", context: context)
    }
}

/// The corresponding FUSE operation is `OPEN`.
func cachefsOpen(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    // The kernel serves opens itself from now on (`kernel_hits`): this is the connection's
    // only OPEN, and the file opens with handle 0.
    if context.engine.servesOpensInKernel { return reply.error(ENOSYS) }
    do {
        let handle = try context.engine.open(EntryID(inode), flags: info!.pointee.flags)
        reply.opened(handle: handle, bypassingPageCache: context.bypassesPageCache(handle),
                     onlyToRead: info!.pointee.flags & O_ACCMODE == O_RDONLY, info: info!)
    } catch {
        reply.failure(error, operation: "open", context: context)
    }
}

/// The corresponding FUSE operation is `READ`: answered straight from the stored bytes'
/// descriptor, so the data need not pass through a Swift buffer; an encrypted store's
/// stored bytes are ciphertext, so it answers with the decrypted bytes instead.
func cachefsRead(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
                 _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        // With the writeback cache the kernel also reads through a handle opened only to
        // write (to fill a page before a partial write): not a read by the user.
        let isAccess = info!.pointee.flags & O_ACCMODE != O_WRONLY
        let handle = info!.pointee.fh
        let file = EntryID(inode)
        // Handle 0: a file the kernel opened by itself (`kernel_hits`).
        if !context.engine.isEncrypted {
            let read = handle == 0
                ? try context.engine.readDescriptor(ofFile: file, offset: Int64(offset), size: size)
                : try context.engine.readDescriptor(handle, offset: Int64(offset), size: size, isAccess: isAccess)
            reply.data(descriptor: read.descriptor, size: size, offset: Int64(offset))
            // Only now may a block it spliced from be dropped.
            read.done()
        } else {
            let bytes = handle == 0
                ? try context.engine.read(ofFile: file, offset: Int64(offset), size: size)
                : try context.engine.read(handle, offset: Int64(offset), size: size, isAccess: isAccess)
            reply.bytes(bytes)
        }
    } catch {
        reply.failure(error, operation: "read", context: context)
    }
}

/// The corresponding FUSE operation is `WRITE`. Errors of bytes the kernel wrote back from
/// its page cache (`writepage`) are kept per file and reported at close (`WritebackErrors`).
func cachefsWrite(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ bytes: UnsafePointer<CChar>?, _ size: Int,
                  _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    let buffer = UnsafeRawBufferPointer(start: bytes, count: size)
    let handle = info!.pointee.fh
    let outcome: Result<Int, any Error>
    if handle == 0 {
        // A file the kernel opened by itself (`kernel_hits`): its writes go through the page
        // cache, where the kernel drops set-ID bits itself.
        outcome = Result { try context.engine.write(ofFile: EntryID(inode), offset: Int64(offset), bytes: buffer) }
    } else if info!.pointee.writepage == 0 {
        // A write through the page cache had the kernel drop set-ID bits first; one that
        // bypassed it leaves that to the daemon. uid 0 stands for CAP_FSETID.
        let clearingSetID = FuseContext.caller(request!).uid != 0
        outcome = Result {
            try context.engine.write(handle, offset: Int64(offset), bytes: buffer, clearingSetID: clearingSetID)
        }
    } else {
        outcome = writeBack(context: context, file: UInt64(inode), size: size) {
            try context.engine.write(handle, offset: Int64(offset), bytes: buffer)
        }
    }
    switch outcome {
    case .success(let written): reply.written(written)
    case .failure(let error): reply.failure(error, operation: "write", context: context)
    }
}

/// A written-back WRITE: after an ENOSPC the file's next ones fail without writing, and an
/// EFBIG is kept for close while the WRITE is answered as done (the file is already removed,
/// its bytes have no name).
private func writeBack(context: FuseContext, file: UInt64, size: Int,
                       _ write: () throws -> Int) -> Result<Int, any Error> {
    switch context.writebackErrors.error(of: file) {
    case EFBIG?: return .success(size)
    case let code?: return .failure(CacheError.io(code))
    case nil: break
    }
    do {
        return .success(try write())
    } catch {
        let code = CacheError.errno(for: error)
        guard code == EFBIG || code == ENOSPC else { return .failure(error) }
        context.writebackErrors.record(code, for: file)
        return code == EFBIG ? .success(size) : .failure(error)
    }
}

/// The corresponding FUSE operation is `FLUSH`.
func cachefsFlush(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    // With `kernel_hits`, the first close declines every later FLUSH: a close is then no
    // request at all (the kernel's close event ends a writer instead).
    if context.engine.servesOpensInKernel { return reply.error(ENOSYS) }
    do {
        let writeback = context.writebackActive.load(ordering: .acquiring)
        try context.engine.flush(info!.pointee.fh, finishesWrite: !writeback)
        reply.error(context.writebackErrors.report(for: UInt64(inode), closing: true))
    } catch {
        reply.failure(error, operation: "flush", context: context)
    }
}

/// The corresponding FUSE operation is `RELEASE`.
func cachefsRelease(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    context.engine.release(info!.pointee.fh)
    // The kernel reports a write-back error itself and then sends no FLUSH, so an ENOSPC
    // could outlive the close that reported it; RELEASE always comes.
    context.writebackErrors.released(UInt64(inode))
    Reply(request!).error(0)
}

/// The corresponding FUSE operation is `FSYNC`.
func cachefsFsync(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ dataOnly: Int32,
                  _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        if info!.pointee.fh == 0 {
            try context.engine.fsync(ofFile: EntryID(inode), dataOnly: dataOnly != 0)
        } else {
            try context.engine.fsync(info!.pointee.fh, dataOnly: dataOnly != 0)
        }
        reply.error(context.writebackErrors.report(for: UInt64(inode), closing: false))
    } catch {
        reply.failure(error, operation: "fsync", context: context)
    }
}

/// The corresponding FUSE operation is `FALLOCATE`.
func cachefsFallocate(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ mode: Int32, _ offset: off_t, _ length: off_t,
                      _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        if info!.pointee.fh == 0 {
            try context.engine.fallocate(ofFile: EntryID(inode), mode: mode, offset: Int64(offset), length: Int64(length))
        } else {
            try context.engine.fallocate(info!.pointee.fh, mode: mode, offset: Int64(offset), length: Int64(length))
        }
        reply.error(0)
    } catch {
        reply.failure(error, operation: "fallocate", context: context)
    }
}
