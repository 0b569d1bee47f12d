import CacheModel
import CFuse3
import CacheCore
import Glibc

// Directory listings.

/// Packs directory items into a buffer of `size` bytes until it is full; `add` writes one
/// item at the given place and returns the bytes it needs (libfuse's add_direntry contract).
/// Returns the bytes used and the items that fitted.
private func pack(_ items: [DirectoryItem], size: Int,
                  add: (DirectoryItem, UnsafeMutablePointer<CChar>, Int) -> Int) -> ([UInt8], [DirectoryItem]) {
    var buffer = [CChar](repeating: 0, count: size)
    var used = 0
    var packed: [DirectoryItem] = []
    buffer.withUnsafeMutableBufferPointer { raw in
        for item in items {
            let needed = add(item, raw.baseAddress! + used, size - used)
            if needed > size - used { break }
            used += needed
            packed.append(item)
        }
    }
    return (buffer[..<used].map { UInt8(bitPattern: $0) }, packed)
}

private func cName(_ item: DirectoryItem) -> [CChar] {
    item.name.map { CChar(bitPattern: $0) } + [0]
}

/// The corresponding FUSE operation is `OPENDIR`: listings are kept in the kernel
/// (`cache_readdir`) across opens (`keep_cache`). The kernel drops them itself when a change
/// goes through the mount; removals the daemon makes reach it as notifications
/// (`LibfuseNotifier`).
func cachefsOpendir(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    Reply(request!).openedDirectory(info: info!)
}

/// The corresponding FUSE operation is `READDIR`: one page of names from memory (the
/// directory is loaded from the index the first time), packed until the kernel's buffer is
/// full; the next call resumes at the offset of the last name sent.
func cachefsReaddir(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
                    _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        let items = try context.engine.readdir(EntryID(inode), offset: Int64(offset),
                                               limit: max(size / Tunables.minimumDirentBytes, 1))
        let (bytes, _) = pack(items, size: size) { item, place, room in
            var info = Glibc.stat()
            info.st_ino = ino_t(item.id)
            info.st_mode = mode_t(StatConversion.fileType(item.kind))
            return fuse_add_direntry(request, place, room, cName(item), &info, off_t(item.nextOffset))
        }
        reply.bytes(bytes)
    } catch {
        reply.failure(error, operation: "readdir", context: context)
    }
}

/// The corresponding FUSE operation is `READDIRPLUS`: names with their attributes, so
/// `ls -l` needs no LOOKUP per file. The engine counts exactly the entries that fit.
func cachefsReaddirplus(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
                        _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        var room = size
        let items = try context.engine.readdirPlus(EntryID(inode), offset: Int64(offset), limit: max(size / Tunables.minimumDirentPlusBytes, 1)) {
            // With no buffer, libfuse only tells the bytes an entry needs.
            let needed = fuse_add_direntry_plus(request, nil, 0, cName($0), nil, 0)
            guard needed <= room else { return false }
            room -= needed
            return true
        }
        let (bytes, _) = pack(items, size: size) { item, place, room in
            var entry = fuse_entry_param()
            if let attributes = item.attributes {
                entry = Reply.entryParameters(attributes, timeouts: context.timeouts)
            } else {
                // "." and "..", and names only a pool's origin has: no kernel entry, just the name.
                entry.attr.st_ino = ino_t(item.id)
                entry.attr.st_mode = mode_t(StatConversion.fileType(item.kind))
            }
            return fuse_add_direntry_plus(request, place, room, cName(item), &entry, off_t(item.nextOffset))
        }
        reply.bytes(bytes)
    } catch {
        reply.failure(error, operation: "readdirplus", context: context)
    }
}

/// The corresponding FUSE operation is `FSYNCDIR`: the names in the directory are on disk
/// when it answers.
func cachefsFsyncdir(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ dataOnly: Int32,
                     _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        try context.engine.fsyncDirectory(EntryID(inode))
        reply.error(0)
    } catch {
        reply.failure(error, operation: "fsyncdir", context: context)
    }
}

/// The corresponding FUSE operation is `ACCESS`; the kernel already checked the mode bits
/// (`default_permissions`), so only existence remains.
func cachefsAccess(_ request: fuse_req_t?, _ inode: fuse_ino_t, _ mask: Int32) {
    let context = FuseContext.from(request!)
    let reply = Reply(request!)
    do {
        _ = try context.engine.getattr(EntryID(inode))
        reply.error(0)
    } catch {
        reply.failure(error, operation: "access", context: context)
    }
}
