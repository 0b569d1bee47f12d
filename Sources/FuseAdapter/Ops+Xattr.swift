import CacheModel
import CFuse3
import CacheCore
import Glibc

// Extended attributes. Size 0 asks for the length; a short buffer gets ERANGE.

/// The corresponding FUSE operation is `GETXATTR`.
func cachefsGetxattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ size: Int) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let value = try context.engine.getxattr(EntryID(inode), name: String(cString: name!))
        replySized(value, size: size, reply: reply)
    } catch {
        reply.failure(error, operation: "getxattr", context: context)
    }
}

/// The corresponding FUSE operation is `LISTXATTR`.
func cachefsListxattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let names = try context.engine.listxattr(EntryID(inode))
        replySized(names.flatMap { Array($0.utf8) + [0] }, size: size, reply: reply)
    } catch {
        reply.failure(error, operation: "listxattr", context: context)
    }
}

/// The corresponding FUSE operation is `SETXATTR`.
func cachefsSetxattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?,
                     _ value: UnsafePointer<CChar>?, _ size: Int, _ flags: Int32) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let bytes = Array(UnsafeRawBufferPointer(start: value, count: size))
        try context.engine.setxattr(EntryID(inode), name: String(cString: name!), value: bytes, flags: flags)
        reply.error(0)
    } catch {
        reply.failure(error, operation: "setxattr", context: context)
    }
}

/// The corresponding FUSE operation is `REMOVEXATTR`.
func cachefsRemovexattr(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        try context.engine.removexattr(EntryID(inode), name: String(cString: name!))
        reply.error(0)
    } catch {
        reply.failure(error, operation: "removexattr", context: context)
    }
}

private func replySized(_ value: [UInt8], size: Int, reply: consuming Reply) {
    if size == 0 {
        reply.xattrSize(value.count)
    } else if value.count > size {
        reply.error(ERANGE)
    } else {
        reply.bytes(value)
    }
}
