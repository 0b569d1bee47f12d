import Glibc
import Synchronization

/// Errors of bytes the kernel wrote back by itself, kept per file.
///
/// With the writeback cache, `write()` returns once the bytes are in the kernel's page cache;
/// the daemon sees them later, in WRITEs marked `writepage`, whose errors cannot fail the
/// `write()` that caused them. The kernel keeps only "ENOSPC" or "EIO" for a page that failed
/// to write back and reports it at the next `close()` or `fsync()`. Two cases need more:
///
/// - **EFBIG** (a cached file past its pool's `max_size`; the core refuses and removes it):
///   answered as EIO it would read "Input/output error". So that WRITE and later
///   written-back WRITEs of the file are answered as done (the file has no name any more;
///   its bytes are dropped), and every FLUSH and FSYNC of it answers EFBIG, so `close()` and
///   `fsync()` say "File too large". FORGET ends it (ids are never reused).
/// - **ENOSPC** (the store is full and nothing is left to evict): the kernel would go on
///   writing back the file's other pages, each running a futile eviction pass first (a
///   writer without the cache stops at its first ENOSPC). So later written-back WRITEs of the
///   file answer ENOSPC without writing, until a FLUSH or a RELEASE of the file (the kernel
///   reports the error at the close and then sends no FLUSH, but RELEASE always comes).
final class WritebackErrors: Sendable {
    private let files = Mutex<[UInt64: Int32]>([:])
    /// How many files have an error: almost always 0, so the hot path skips the lock.
    private let count = Atomic<Int>(0)

    /// The error a written-back WRITE of this file meets without writing, if any.
    func error(of inode: UInt64) -> Int32? {
        guard count.load(ordering: .acquiring) > 0 else { return nil }
        return files.withLock { $0[inode] }
    }

    func record(_ code: Int32, for inode: UInt64) {
        files.withLock { files in
            guard files[inode] != EFBIG else { return }
            if files.updateValue(code, forKey: inode) == nil { count.add(1, ordering: .releasing) }
        }
    }

    /// At FLUSH and FSYNC: what the call must report beyond what the kernel reports itself
    /// (EFBIG, or 0). A FLUSH ends an ENOSPC.
    func report(for inode: UInt64, closing: Bool) -> Int32 {
        guard count.load(ordering: .acquiring) > 0 else { return 0 }
        return files.withLock { files in
            switch files[inode] {
            case EFBIG: return EFBIG
            case .some where closing:
                files[inode] = nil
                count.subtract(1, ordering: .releasing)
                return 0
            default: return 0
            }
        }
    }

    /// At RELEASE: an ENOSPC ends (a later writer starts afresh); an EFBIG stays until FORGET.
    func released(_ inode: UInt64) {
        guard count.load(ordering: .acquiring) > 0 else { return }
        files.withLock { files in
            guard let code = files[inode], code != EFBIG else { return }
            files[inode] = nil
            count.subtract(1, ordering: .releasing)
        }
    }

    func forget(_ inode: UInt64) {
        guard count.load(ordering: .acquiring) > 0 else { return }
        files.withLock { files in
            if files.removeValue(forKey: inode) != nil { count.subtract(1, ordering: .releasing) }
        }
    }
}
