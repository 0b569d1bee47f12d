import Foundation
import Glibc

/// Lookup, attributes and listing: the read side of the namespace (no lock but the
/// in-memory tables, no disk writes).
extension CacheEngine {
    /// The corresponding FUSE operation is `LOOKUP`; it counts one kernel reference.
    public func lookup(parent: EntryID, name: [UInt8]) throws -> FileAttributes {
        try validate(name)
        let found = try index.child(of: parent, named: Data(name))
        let parentRecord = try record(parent)
        let inPool = parentRecord.pool != 0
        if inPool {
            counters.withLock { counters in
                if found == nil {
                    counters.misses[parentRecord.pool, default: 0] += 1
                } else {
                    counters.hits[parentRecord.pool, default: 0] += 1
                }
            }
        }
        guard let found else { throw CacheError.notFound }
        // An expired file is never served, even before the sweep reaches it.
        if found.kind == .file, isExpired(nodes.record(found.entryID) ?? found, at: now) {
            removeFiles([found], as: .expired, reason: "expired; found at lookup", qualifies: isExpired)
            throw CacheError.notFound
        }
        if let known = nodes.rememberIfNamed(found.entryID, parent: parent, name: found.name) {
            return known.attributes
        }
        // Not in memory: the row read above may be older than a change (a write's close, a
        // removal) that finished since, and the node that held the newer state may have been
        // forgotten meanwhile. Read it again where no such change can interleave.
        return try namespaceLock.withLock { _ in
            guard let current = try index.child(of: parent, named: Data(name)) else { throw CacheError.notFound }
            return nodes.remember(current).attributes
        }
    }

    /// Names are bytes, as on ext4: anything but "/" and NUL, at most 255 of them.
    func validate(_ name: [UInt8]) throws {
        guard !name.isEmpty, !name.contains(0x2f), !name.contains(0) else { throw CacheError.invalidName }
        guard name.count <= 255 else { throw CacheError.nameTooLong }
    }

    /// The corresponding FUSE operation is `FORGET`.
    public func forget(_ id: EntryID, count: UInt64) {
        _ = nodes.forget(id, count: count)
    }

    /// The corresponding FUSE operation is `GETATTR`.
    public func getattr(_ id: EntryID) throws -> FileAttributes {
        try record(id).attributes
    }

    /// A page of a directory listing starting at `offset` (0 for the start); "." and ".."
    /// come first. Offsets are entry ids shifted by 2, so a listing resumes correctly even if
    /// entries are added or removed in between.
    public func readdir(_ id: EntryID, offset: Int64, limit: Int) throws -> [DirectoryItem] {
        try namespaceLock.withLock { _ in try listPage(id, offset: offset, limit: limit) }
    }

    /// The corresponding FUSE operation is `READDIRPLUS`: a page of `readdir`, cut where
    /// `fits` first says no, whose entries (all but "." and "..") each count as one kernel
    /// lookup. Listing and counting happen under one hold of the namespace lock, as in
    /// `lookup`: a node is only ever made from a row no older than the newest close.
    public func readdirPlus(_ id: EntryID, offset: Int64, limit: Int,
                            fits: (DirectoryItem) -> Bool) throws -> [DirectoryItem] {
        try namespaceLock.withLock { _ in
            var chosen: [DirectoryItem] = []
            for item in try listPage(id, offset: offset, limit: limit) {
                guard fits(item) else { break }
                chosen.append(item)
            }
            nodes.remember(chosen.compactMap(\.listedRecord))
            return chosen
        }
    }

    /// Call under `namespaceLock`, so the rows are no older than any finished close.
    private func listPage(_ id: EntryID, offset: Int64, limit: Int) throws -> [DirectoryItem] {
        let directory = try record(id)
        guard directory.kind == .directory else { throw CacheError.notDirectory }
        var items: [DirectoryItem] = []
        if offset < 1 {
            items.append(DirectoryItem(name: Array(".".utf8), id: id, kind: .directory, nextOffset: 1))
        }
        if offset < 2 {
            let parentID = directory.parent.flatMap { $0 == 0 ? id : $0 } ?? id
            items.append(DirectoryItem(name: Array("..".utf8), id: parentID, kind: .directory, nextOffset: 2))
        }
        let children = try index.children(of: id, after: max(offset - 2, 0), limit: max(limit - items.count, 1))
        for child in children {
            let newest = nodes.record(child.entryID) ?? child
            items.append(DirectoryItem(name: Array(child.name), id: child.entryID, kind: child.kind,
                                       nextOffset: child.entryID + 2, attributes: newest.attributes,
                                       listedRecord: newest))
        }
        return items
    }

    /// The corresponding FUSE operation is `STATFS`: the store's own filesystem.
    public func statfs() throws -> FilesystemStats {
        let info = try disk.statvfs(layout.root)
        return FilesystemStats(
            blockSize: UInt64(info.f_bsize), fragmentSize: UInt64(info.f_frsize), blocks: UInt64(info.f_blocks),
            freeBlocks: UInt64(info.f_bfree), availableBlocks: UInt64(info.f_bavail), files: UInt64(info.f_files),
            freeFiles: UInt64(info.f_ffree), maxNameLength: 255)
    }
}
