import CacheModel
import CFuse3
import CacheCore
import Glibc

/// The answer to one FUSE request. It is `~Copyable` and each answer `consuming`, so the
/// compiler refuses a second reply; a request dropped without an answer gets EIO from
/// `deinit` instead of hanging the caller.
struct Reply: ~Copyable {
    private let request: fuse_req_t

    init(_ request: fuse_req_t) {
        self.request = request
    }

    deinit {
        fuse_reply_err(request, EIO)
    }

    consuming func error(_ code: Int32) {
        fuse_reply_err(request, code)
        discard self
    }

    /// Answers an error thrown by the core, with the errno its one mapping gives.
    consuming func failure(_ error: any Error, operation: StaticString, context: FuseContext) {
        let code = CacheError.errno(for: error)
        if code == EIO {
            context.logger.error("\(operation) failed: \(error)")
        }
        fuse_reply_err(request, code)
        discard self
    }

    consuming func none() {
        fuse_reply_none(request)
        discard self
    }

    consuming func entry(_ attributes: FileAttributes, timeouts: CacheTimeouts) {
        var entry = Self.entryParameters(attributes, timeouts: timeouts)
        fuse_reply_entry(request, &entry)
        discard self
    }

    consuming func created(_ created: CreatedFile, bypassingPageCache: Bool, info: UnsafeMutablePointer<fuse_file_info>,
                           timeouts: CacheTimeouts) {
        var entry = Self.entryParameters(created.attributes, timeouts: timeouts)
        Self.setCaching(of: info, handle: created.handle, bypassingPageCache: bypassingPageCache)
        fuse_reply_create(request, &entry, info)
        discard self
    }

    consuming func attributes(_ attributes: FileAttributes, timeouts: CacheTimeouts) {
        var info = StatConversion.stat(attributes)
        fuse_reply_attr(request, &info, attributes.attributeSeconds(within: timeouts.attributes))
        discard self
    }

    /// A handle opened only to read asks the kernel for no FLUSH at its close (`noflush`):
    /// FLUSH finishes writes and reports their errors, so for a reader it is a round trip that
    /// does nothing, and on ext4 a reader's close reports no write errors either. (With the
    /// writeback cache on, the kernel sends it anyway.)
    consuming func opened(handle: UInt64, bypassingPageCache: Bool, onlyToRead: Bool,
                          info: UnsafeMutablePointer<fuse_file_info>) {
        Self.setCaching(of: info, handle: handle, bypassingPageCache: bypassingPageCache)
        info.pointee.noflush = onlyToRead ? 1 : 0
        fuse_reply_open(request, info)
        discard self
    }

    /// A handle that uses the page cache opens with `keep_cache`: cachefs never changes bytes
    /// behind the kernel's back (ids are never reused), so pages cached by an earlier open
    /// stay valid. One that bypasses it (`direct_io`) drops them instead: its writes would
    /// make them stale.
    private static func setCaching(of info: UnsafeMutablePointer<fuse_file_info>, handle: UInt64,
                                   bypassingPageCache: Bool) {
        info.pointee.fh = handle
        info.pointee.keep_cache = bypassingPageCache ? 0 : 1
        info.pointee.direct_io = bypassingPageCache ? 1 : 0
    }

    /// Opens a directory whose listing the kernel may cache and keep across opens.
    consuming func openedDirectory(info: UnsafeMutablePointer<fuse_file_info>) {
        info.pointee.cache_readdir = 1
        info.pointee.keep_cache = 1
        fuse_reply_open(request, info)
        discard self
    }

    consuming func written(_ count: Int) {
        fuse_reply_write(request, count)
        discard self
    }

    consuming func bytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                _ = fuse_reply_buf(request, chars.baseAddress, chars.count)
            }
        }
        discard self
    }

    /// A symlink's target, as a C string.
    consuming func link(_ target: [UInt8]) {
        (target + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                _ = fuse_reply_readlink(request, chars.baseAddress)
            }
        }
        discard self
    }

    /// Replies with `size` bytes at `offset` of a descriptor; libfuse splices them when it can.
    consuming func data(descriptor: Int32, size: Int, offset: Int64) {
        var vector = fuse_bufvec()
        vector.count = 1
        vector.idx = 0
        vector.off = 0
        vector.buf.size = size
        vector.buf.flags = fuse_buf_flags(rawValue: FUSE_BUF_IS_FD.rawValue | FUSE_BUF_FD_SEEK.rawValue)
        vector.buf.fd = descriptor
        vector.buf.pos = off_t(offset)
        fuse_reply_data(request, &vector, FUSE_BUF_SPLICE_MOVE)
        discard self
    }

    consuming func xattrSize(_ count: Int) {
        fuse_reply_xattr(request, count)
        discard self
    }

    consuming func filesystem(_ stats: FilesystemStats) {
        var info = statvfs()
        info.f_bsize = UInt(stats.blockSize)
        info.f_frsize = UInt(stats.fragmentSize)
        info.f_blocks = fsblkcnt_t(stats.blocks)
        info.f_bfree = fsblkcnt_t(stats.freeBlocks)
        info.f_bavail = fsblkcnt_t(stats.availableBlocks)
        info.f_files = fsfilcnt_t(stats.files)
        info.f_ffree = fsfilcnt_t(stats.freeFiles)
        info.f_favail = fsfilcnt_t(stats.freeFiles)
        info.f_namemax = UInt(stats.maxNameLength)
        fuse_reply_statfs(request, &info)
        discard self
    }

    static func entryParameters(_ attributes: FileAttributes, timeouts: CacheTimeouts) -> fuse_entry_param {
        var entry = fuse_entry_param()
        entry.ino = fuse_ino_t(attributes.id)
        entry.generation = 1
        entry.attr = StatConversion.stat(attributes)
        // A file that expires is kept by the kernel no longer than it has left: the kernel
        // then looks it up again and learns that it is gone.
        entry.attr_timeout = attributes.attributeSeconds(within: timeouts.attributes)
        entry.entry_timeout = min(timeouts.entries, attributes.expiresIn ?? .infinity)
        return entry
    }
}
