import CacheModel
import Foundation

/// Lookup, attributes and listing: the read side of the namespace, answered from memory
/// (no disk writes; a directory's first use reads it from the index once).
extension Names {
    package enum LookupAnswer {
        case found(FileAttributes)
        /// The name is not in the pool (`pool`, 0 at the root): its origin may have it.
        case missing(pool: EntryID)
    }

    /// The corresponding FUSE operation is `LOOKUP`; a name found counts one kernel
    /// reference. A miss is counted here; hits are counted at open.
    package func lookup(parent: EntryID, name: [UInt8]) throws -> LookupAnswer {
        try Self.validate(name)
        let time = now
        // Expiry is judged once, in the hold: there the record and the time gathered in
        // memory agree (a fold changes the inode before it lets go of the time).
        let (found, pool, expired) = try withLoaded([parent]) { namespace -> (EntryRecord?, EntryID, Bool) in
            let directory = try namespace.record(parent)
            guard directory.kind == .directory else { throw CacheError.notDirectory }
            namespace.noteUse(of: parent, at: time.nanoseconds)
            guard let found = try namespace.child(of: parent, named: Data(name)) else { return (nil, directory.pool, false) }
            if found.kind == .file && isExpired(found, at: time) { return (found, directory.pool, true) }
            namespace.modify(found.entryID) { $0.lookups += 1 }
            return (found, directory.pool, false)
        }
        guard let found else {
            counters.countMiss(pool: pool, bytes: missWeight(in: pool))
            return .missing(pool: pool)
        }
        // An expired file is never served, even before the sweep reaches it.
        if expired {
            removeFiles([found], as: .expired, reason: "expired; found at lookup", qualifies: isExpired)
            counters.countMiss(pool: pool, bytes: missWeight(in: pool))
            throw CacheError.notFound
        }
        return .found(found.attributes)
    }

    /// Names are bytes, as on ext4: anything but "/" and NUL, at most 255 of them.
    package static func validate(_ name: [UInt8]) throws {
        guard !name.isEmpty, !name.contains(0x2f), !name.contains(0) else { throw CacheError.invalidName }
        guard name.count <= 255 else { throw CacheError.nameTooLong }
    }

    /// The corresponding FUSE operation is `FORGET`.
    package func forget(_ id: EntryID, count: UInt64) {
        changeInMemory { namespace, effects in
            namespace.modify(id) { $0.lookups -= min(count, $0.lookups) }
            finishIfUnreferenced(id, in: &namespace, effects: &effects)
        }
    }

    /// A page of a directory listing starting at `offset` (0 for the start); "." and ".."
    /// come first, then the directory's names, then `fromOrigin`'s names the pool lacks.
    /// Offsets are ``ListingCursor``s, so a listing resumes correctly even if entries are
    /// added or removed in between.
    package func readdir(_ id: EntryID, offset: Int64, limit: Int, fromOrigin: [OriginName]?) throws
        -> [DirectoryItem]
    {
        let time = now.nanoseconds
        return try withLoaded([id]) { namespace in
            namespace.noteUse(of: id, at: time)
            return try listPage(id, offset: offset, limit: limit, fromOrigin: fromOrigin, in: &namespace)
        }
    }

    /// The corresponding FUSE operation is `READDIRPLUS`: a page of `readdir`, cut where
    /// `fits` first says no, whose entries (all but "." and "..") each count as one kernel
    /// lookup, in the same hold of the namespace as the listing.
    package func readdirPlus(_ id: EntryID, offset: Int64, limit: Int, fromOrigin: [OriginName]?,
                             fits: (DirectoryItem) -> Bool) throws -> [DirectoryItem] {
        let time = now.nanoseconds
        return try withLoaded([id]) { namespace in
            namespace.noteUse(of: id, at: time)
            var chosen: [DirectoryItem] = []
            for item in try listPage(id, offset: offset, limit: limit, fromOrigin: fromOrigin, in: &namespace) {
                guard fits(item) else { break }
                chosen.append(item)
                if let listed = item.listedRecord { namespace.modify(listed.entryID) { $0.lookups += 1 } }
            }
            return chosen
        }
    }

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
        namespace.listedSinceTrim += children.count
        for child in children {
            items.append(DirectoryItem(name: Array(child.name), id: child.record.entryID, kind: child.record.kind,
                                       nextOffset: child.cursor.offset, attributes: child.record.attributes,
                                       listedRecord: child.record))
        }
        if children.count < wanted { items += originItems(after: 0, limit: limit - items.count) }
        return items
    }

    /// Every entry beneath `directory` once, parents first; its directories load outside
    /// the lock first.
    package func subtree(of directory: EntryID) throws -> [EntryRecord] {
        loadSubtreeOutsideTheLock(directory)
        return try withLoaded([]) { try $0.subtree(of: directory) }
    }

    /// The files beneath a directory by their first name (see ``NamespaceState/filesBeneath(_:)``).
    package func filesBeneath(_ directory: EntryID) throws -> [EntryRecord] {
        loadSubtreeOutsideTheLock(directory)
        return try withLoaded([]) { try $0.filesBeneath(directory) }
    }
}
