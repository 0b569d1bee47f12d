import CLinux
import Glibc

/// `fallocate(2)` on the stored bytes, with the pool's rules applied as for a write.
extension CacheEngine {
    /// The corresponding FUSE operation is `FALLOCATE`. Modes: 0 (allocate, growing the
    /// size), `FALLOC_FL_KEEP_SIZE` (allocate past the end), `FALLOC_FL_PUNCH_HOLE` (with
    /// KEEP_SIZE, as Linux requires) and `FALLOC_FL_ZERO_RANGE`. A cached file it would take
    /// past its pool's max_size gets EFBIG (nothing changes); a full disk frees cached space
    /// and retries, as a write does. A pool's usage counts the size, not the allocation.
    public func fallocate(_ handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws {
        let file = try handles.get(handle)
        guard file.writable else { throw CacheError.badHandle }
        let supported = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE
        guard mode & ~supported == 0 else { throw CacheError.io(EOPNOTSUPP) }
        guard offset >= 0, length > 0 else { throw CacheError.io(EINVAL) }
        let keepsSize = mode & FALLOC_FL_KEEP_SIZE != 0
        let end = offset + length
        if !keepsSize, let limit = file.sizeLimit, end > limit { throw CacheError.fileTooLarge }
        if namespace.withLock({ $0.inodes[file.entry].map { !$0.record.writing } ?? false }) {
            try markWriting(file.entry)
        }
        let allocates = mode & FALLOC_FL_PUNCH_HOLE == 0
        try freeingSpace(extra: allocates ? length : 0) { () throws(CacheError) in
            try disk.fallocate(file.fd, mode: mode, offset: offset, length: length)
        }
        // As on ext4, every mode moves ctime and mtime, even one that allocates nothing new.
        noteContentChanged(file, growingTo: keepsSize ? nil : end)
    }
}
