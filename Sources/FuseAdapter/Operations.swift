import CFuse3
import CacheCore
import Glibc

/// The table of callbacks handed to libfuse. Every entry is a free function of this module:
/// closures written in `main.swift` would be MainActor-isolated and crash when libfuse calls
/// them from a worker thread.
func makeOperations() -> fuse_lowlevel_ops {
    var operations = fuse_lowlevel_ops()
    operations.`init` = cachefsInit
    operations.lookup = cachefsLookup
    operations.forget = cachefsForget
    operations.forget_multi = cachefsForgetMulti
    operations.getattr = cachefsGetattr
    operations.setattr = cachefsSetattr
    operations.mknod = cachefsMknod
    operations.mkdir = cachefsMkdir
    operations.unlink = cachefsUnlink
    operations.rmdir = cachefsRmdir
    operations.symlink = cachefsSymlink
    operations.link = cachefsLink
    operations.readlink = cachefsReadlink
    operations.rename = cachefsRename
    operations.create = cachefsCreate
    operations.open = cachefsOpen
    operations.read = cachefsRead
    operations.write = cachefsWrite
    operations.flush = cachefsFlush
    operations.release = cachefsRelease
    operations.fsync = cachefsFsync
    operations.fallocate = cachefsFallocate
    operations.opendir = cachefsOpendir
    operations.readdir = cachefsReaddir
    operations.readdirplus = cachefsReaddirplus
    operations.fsyncdir = cachefsFsyncdir
    operations.statfs = cachefsStatfs
    operations.access = cachefsAccess
    operations.getxattr = cachefsGetxattr
    operations.setxattr = cachefsSetxattr
    operations.listxattr = cachefsListxattr
    operations.removexattr = cachefsRemovexattr
    return operations
}

/// The corresponding FUSE operation is `INIT`: choose what the kernel may do.
func cachefsInit(_ userdata: UnsafeMutableRawPointer?, _ connection: UnsafeMutablePointer<fuse_conn_info>?) {
    let context = Unmanaged<FuseContext>.fromOpaque(userdata!).takeUnretainedValue()
    let connection = connection!
    // Reads can be spliced straight from the stored bytes' descriptor.
    if connection.pointee.capable & UInt32(FUSE_CAP_SPLICE_WRITE) != 0 {
        connection.pointee.want |= UInt32(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE)
    }
    // cachefs never changes a file's bytes behind the kernel, so its page cache stays valid
    // across opens; without this every open would drop it.
    connection.pointee.want &= ~UInt32(FUSE_CAP_AUTO_INVAL_DATA)
    // Listings carry attributes (the kernel asks for them when it sees lookups follow).
    if connection.pointee.capable & UInt32(FUSE_CAP_READDIRPLUS) != 0 {
        connection.pointee.want |= UInt32(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO)
    }
    // The kernel's writeback cache: write() returns once the bytes are in the page cache, and
    // the kernel sends them in large WRITEs, all of them before the FLUSH of each close (so a
    // file is complete once close() returns). The kernel then owns size and mtime while it
    // holds dirty pages (it sends them with SETATTR), may READ through a handle opened only
    // to write (the core opens the bytes O_RDWR for any writer) and handles O_APPEND itself
    // (the core never passes O_APPEND to the bytes' descriptor). A FLUSH then does not end the
    // file's "being written" mark (RELEASE does): a shell's `cmd > file` closes its own
    // descriptor (a FLUSH) before `cmd` writes a byte, and those bytes reach the daemon only
    // at write-back, so a crash meanwhile must find the file marked.
    if context.writebackCache && connection.pointee.capable & UInt32(FUSE_CAP_WRITEBACK_CACHE) != 0 {
        connection.pointee.want |= UInt32(FUSE_CAP_WRITEBACK_CACHE)
        context.writebackActive.store(true, ordering: .releasing)
    } else if context.writebackCache {
        context.logger.warning("writeback_cache: this kernel does not offer FUSE's writeback cache; writes go through")
    }
    connection.pointee.max_write = context.maxWrite
}
