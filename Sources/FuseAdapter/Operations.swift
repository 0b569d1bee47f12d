import CFuse3
import CacheCore
import Glibc

/// The table of callbacks handed to libfuse. Every entry is a free function of this module,
/// or a closure here that captures nothing and times one: closures written in `main.swift`
/// would be MainActor-isolated and crash when libfuse calls them from a worker thread.
func makeOperations() -> fuse_lowlevel_ops {
    var operations = fuse_lowlevel_ops()
    operations.`init` = cachefsInit
    operations.lookup = { request, parent, name in timed(request, .lookup) { cachefsLookup(request, parent, name) } }
    operations.forget = { request, inode, count in timed(request, .forget) { cachefsForget(request, inode, count) } }
    operations.forget_multi = { request, count, forgets in
        timed(request, .forgetMulti) { cachefsForgetMulti(request, count, forgets) }
    }
    operations.getattr = { request, inode, info in timed(request, .getattr) { cachefsGetattr(request, inode, info) } }
    operations.setattr = { request, inode, attributes, toSet, info in
        timed(request, .setattr) { cachefsSetattr(request, inode, attributes, toSet, info) }
    }
    operations.mknod = { request, parent, name, mode, device in
        timed(request, .mknod) { cachefsMknod(request, parent, name, mode, device) }
    }
    operations.mkdir = { request, parent, name, mode in
        timed(request, .mkdir) { cachefsMkdir(request, parent, name, mode) }
    }
    operations.unlink = { request, parent, name in timed(request, .unlink) { cachefsUnlink(request, parent, name) } }
    operations.rmdir = { request, parent, name in timed(request, .rmdir) { cachefsRmdir(request, parent, name) } }
    operations.symlink = { request, target, parent, name in
        timed(request, .symlink) { cachefsSymlink(request, target, parent, name) }
    }
    operations.link = { request, inode, newParent, newName in
        timed(request, .link) { cachefsLink(request, inode, newParent, newName) }
    }
    operations.readlink = { request, inode in timed(request, .readlink) { cachefsReadlink(request, inode) } }
    operations.rename = { request, parent, name, newParent, newName, flags in
        timed(request, .rename) { cachefsRename(request, parent, name, newParent, newName, flags) }
    }
    operations.create = { request, parent, name, mode, info in
        timed(request, .create) { cachefsCreate(request, parent, name, mode, info) }
    }
    operations.open = { request, inode, info in timed(request, .open) { cachefsOpen(request, inode, info) } }
    operations.read = { request, inode, size, offset, info in
        timed(request, .read) { cachefsRead(request, inode, size, offset, info) }
    }
    operations.write = { request, inode, bytes, size, offset, info in
        timed(request, .write) { cachefsWrite(request, inode, bytes, size, offset, info) }
    }
    operations.flush = { request, inode, info in timed(request, .flush) { cachefsFlush(request, inode, info) } }
    operations.release = { request, inode, info in timed(request, .release) { cachefsRelease(request, inode, info) } }
    operations.fsync = { request, inode, dataOnly, info in
        timed(request, .fsync) { cachefsFsync(request, inode, dataOnly, info) }
    }
    operations.fallocate = { request, inode, mode, offset, length, info in
        timed(request, .fallocate) { cachefsFallocate(request, inode, mode, offset, length, info) }
    }
    operations.opendir = { request, inode, info in timed(request, .opendir) { cachefsOpendir(request, inode, info) } }
    operations.readdir = { request, inode, size, offset, info in
        timed(request, .readdir) { cachefsReaddir(request, inode, size, offset, info) }
    }
    operations.readdirplus = { request, inode, size, offset, info in
        timed(request, .readdirplus) { cachefsReaddirplus(request, inode, size, offset, info) }
    }
    operations.fsyncdir = { request, inode, dataOnly, info in
        timed(request, .fsyncdir) { cachefsFsyncdir(request, inode, dataOnly, info) }
    }
    operations.statfs = { request, inode in timed(request, .statfs) { cachefsStatfs(request, inode) } }
    operations.access = { request, inode, mask in timed(request, .access) { cachefsAccess(request, inode, mask) } }
    operations.getxattr = { request, inode, name, size in
        timed(request, .getxattr) { cachefsGetxattr(request, inode, name, size) }
    }
    operations.setxattr = { request, inode, name, value, size, flags in
        timed(request, .setxattr) { cachefsSetxattr(request, inode, name, value, size, flags) }
    }
    operations.listxattr = { request, inode, size in
        timed(request, .listxattr) { cachefsListxattr(request, inode, size) }
    }
    operations.removexattr = { request, inode, name in
        timed(request, .removexattr) { cachefsRemovexattr(request, inode, name) }
    }
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
    // Hits without a request (`kernel_hits`, docs/no-open-hits.md): OPEN and FLUSH are
    // answered ENOSYS once, and the kernel serves opens and closes itself. Atomic O_TRUNC
    // would then be lost (no OPEN carries it), so O_TRUNC comes as SETATTR instead.
    if context.kernelHits && connection.pointee.capable & UInt32(FUSE_CAP_NO_OPEN_SUPPORT) != 0 {
        connection.pointee.want &= ~UInt32(FUSE_CAP_ATOMIC_O_TRUNC)
        context.engine.serveOpensInKernel()
    } else if context.kernelHits {
        context.logger.warning("kernel_hits: this kernel cannot serve opens by itself; every open goes through the daemon")
    }
    connection.pointee.max_write = context.maxWrite
}
