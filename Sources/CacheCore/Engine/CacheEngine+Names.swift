import Foundation
import Glibc

/// Lookup, attributes and listing: the read side of the namespace, answered from memory
/// (no disk writes; a directory's first use reads it from the index once).
extension CacheEngine {
    /// The corresponding FUSE operation is `LOOKUP`; it counts one kernel reference.
    /// Answered from memory (a directory's first lookup loads it from the index).
    public func lookup(parent: EntryID, name: [UInt8]) throws -> FileAttributes {
        try validate(name)
        let time = now
        let (found, pool) = try namespace.withLock { namespace -> (EntryRecord?, EntryID) in
            let directory = try namespace.record(parent)
            guard directory.kind == .directory else { throw CacheError.notDirectory }
            guard let found = try namespace.child(of: parent, named: Data(name)) else { return (nil, directory.pool) }
            if found.kind == .file && isExpired(found, at: time) { return (found, directory.pool) }
            namespace.modify(found.entryID) { $0.lookups += 1 }
            return (found, directory.pool)
        }
        // A miss is a name the pool does not have; hits are counted at open.
        if pool != 0 && found == nil {
            counters.withLock { $0.misses[pool, default: 0] += 1 }
        }
        guard let found else {
            if let fromOrigin = try lookupInOrigin(parent: parent, name: name, pool: pool) { return fromOrigin }
            throw CacheError.notFound
        }
        // An expired file is never served, even before the sweep reaches it.
        if found.kind == .file && isExpired(found, at: time) {
            removeFiles([found], as: .expired, reason: "expired; found at lookup", qualifies: isExpired)
            throw CacheError.notFound
        }
        return found.attributes
    }

    /// Names are bytes, as on ext4: anything but "/" and NUL, at most 255 of them.
    func validate(_ name: [UInt8]) throws {
        guard !name.isEmpty, !name.contains(0x2f), !name.contains(0) else { throw CacheError.invalidName }
        guard name.count <= 255 else { throw CacheError.nameTooLong }
    }

    /// The corresponding FUSE operation is `FORGET`.
    public func forget(_ id: EntryID, count: UInt64) {
        let discard = namespace.withLock { namespace in
            namespace.modify(id) { $0.lookups -= min(count, $0.lookups) }
            return finishIfUnreferenced(id, in: &namespace)
        }
        if let discard { discardBytes(of: [discard]) }
    }

    /// The corresponding FUSE operation is `GETATTR`.
    public func getattr(_ id: EntryID) throws -> FileAttributes {
        try record(id).attributes
    }

    /// A page of a directory listing starting at `offset` (0 for the start); "." and ".."
    /// come first. Offsets are ``ListingCursor``s, so a listing resumes correctly even if
    /// entries are added or removed in between.
    public func readdir(_ id: EntryID, offset: Int64, limit: Int) throws -> [DirectoryItem] {
        let fromOrigin = originNames(in: id)
        return try namespace.withLock { namespace in
            try listPage(id, offset: offset, limit: limit, fromOrigin: fromOrigin, in: &namespace)
        }
    }

    /// The corresponding FUSE operation is `READDIRPLUS`: a page of `readdir`, cut where
    /// `fits` first says no, whose entries (all but "." and "..") each count as one kernel
    /// lookup, in the same hold of the namespace as the listing.
    public func readdirPlus(_ id: EntryID, offset: Int64, limit: Int,
                            fits: (DirectoryItem) -> Bool) throws -> [DirectoryItem] {
        let fromOrigin = originNames(in: id)
        return try namespace.withLock { namespace in
            var chosen: [DirectoryItem] = []
            for item in try listPage(id, offset: offset, limit: limit, fromOrigin: fromOrigin, in: &namespace) {
                guard fits(item) else { break }
                chosen.append(item)
                if let listed = item.listedRecord { namespace.modify(listed.entryID) { $0.lookups += 1 } }
            }
            return chosen
        }
    }

    /// The pool's own names come first, then those only its origin has (`fromOrigin`).
    private func listPage(_ id: EntryID, offset: Int64, limit: Int, fromOrigin: [OriginName]?,
                          in namespace: inout NamespaceState) throws -> [DirectoryItem] {
        let directory = try namespace.record(id)
        guard directory.kind == .directory else { throw CacheError.notDirectory }
        func originItems(after offset: Int64, limit: Int) -> [DirectoryItem] {
            guard let fromOrigin, limit > 0 else { return [] }
            return OriginListing.items(fromOrigin, after: offset, limit: limit) { name in
                // The directory is loaded by now (its own names were listed first): the lookup is memory only.
                (try? namespace.childID(of: id, named: Data(name))) != nil
            }
        }
        if offset >= OriginListing.firstOffset { return originItems(after: offset, limit: limit) }
        var items: [DirectoryItem] = []
        if offset < 1 {
            items.append(DirectoryItem(name: Array(".".utf8), id: id, kind: .directory, nextOffset: 1))
        }
        if offset < 2 {
            let parentID = directory.parent.flatMap { $0 == 0 ? id : $0 } ?? id
            items.append(DirectoryItem(name: Array("..".utf8), id: parentID, kind: .directory, nextOffset: 2))
        }
        let cursor = offset > 2 ? ListingCursor(offset: offset) : ListingCursor()
        let wanted = max(limit - items.count, 1)
        let children = try namespace.children(of: id, after: cursor, limit: wanted)
        for child in children {
            items.append(DirectoryItem(name: Array(child.name), id: child.record.entryID, kind: child.record.kind,
                                       nextOffset: child.cursor.offset, attributes: child.record.attributes,
                                       listedRecord: child.record))
        }
        if children.count < wanted { items += originItems(after: 0, limit: limit - items.count) }
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
