import CacheModel
import Foundation
import Glibc

/// Hard links, symlinks and special files: entries beside directories and regular files.
/// Symlinks and special files are names and metadata only (no bytes in the store): they
/// never count against a pool and are never evicted or expired.
extension Names {
    /// The corresponding FUSE operation is `LINK`: one more name for a file, symlink or
    /// special file, in a directory of the same pool (EXDEV across pools).
    package func link(_ id: EntryID, newParent: EntryID, newName: [UInt8]) throws -> FileAttributes {
        try Self.validate(newName)
        return try withLoaded([newParent]) { namespace in
            let parentRecord = try directory(newParent, in: &namespace)
            guard newParent != WellKnownEntry.root else { throw CacheError.notPermitted }
            // In link(2)'s order: the source, the name taken, then what may be linked.
            guard let inode = try namespace.inode(id), inode.hasName else { throw CacheError.notFound }
            guard try namespace.childID(of: newParent, named: Data(newName)) == nil else { throw CacheError.exists }
            guard inode.record.kind != .directory else { throw CacheError.notPermitted }
            guard inode.record.pool == parentRecord.pool else { throw CacheError.crossPool }
            guard inode.record.linkCount < Tunables.maxLinks else { throw CacheError.io(EMLINK) }
            let time = now.nanoseconds
            let link = LinkName(parent: newParent, name: Data(newName))
            namespace.addLink(id, link, at: time)
            namespace.log(.insertLink(link, entry: id))
            let record = try namespace.record(id)
            namespace.log(.update(record))
            touch(newParent, at: time, in: &namespace)
            namespace.modify(id) { $0.lookups += 1 }
            return record.attributes
        }
    }

    /// The corresponding FUSE operation is `SYMLINK`; the target is kept with the entry.
    package func symlink(parent: EntryID, name: [UInt8], target: [UInt8], caller: Caller) throws -> FileAttributes {
        guard !target.isEmpty, !target.contains(0) else { throw CacheError.io(ENOENT) }
        guard target.count < PATH_MAX else { throw CacheError.nameTooLong }
        return try addMetadataEntry(parent: parent, name: name, kind: .symlink, mode: 0o777, caller: caller) { record in
            record.target = Data(target)
            record.size = Int64(target.count)
        }
    }

    /// The corresponding FUSE operation is `READLINK`.
    package func readlink(_ id: EntryID) throws -> [UInt8] {
        let record = try record(id)
        guard record.kind == .symlink, let target = record.target else { throw CacheError.io(EINVAL) }
        return Array(target)
    }

    /// `MKNOD` of anything but a regular file: FIFOs, sockets and device nodes (the kernel
    /// checks the caller may make devices; the mount is `nodev`, so they do not open).
    package func makeSpecialFile(parent: EntryID, name: [UInt8], mode: UInt32, device: UInt64, caller: Caller) throws
        -> FileAttributes
    {
        let kind: EntryKind
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFIFO): kind = .fifo
        case UInt32(S_IFSOCK): kind = .socket
        case UInt32(S_IFCHR): kind = .characterDevice
        case UInt32(S_IFBLK): kind = .blockDevice
        default: throw CacheError.io(EINVAL)
        }
        return try addMetadataEntry(parent: parent, name: name, kind: kind, mode: mode & 0o7777, caller: caller) {
            if kind == .characterDevice || kind == .blockDevice { $0.device = device }
        }
    }

    /// Adds an entry with no bytes (a symlink or special file) under a new name.
    private func addMetadataEntry(parent: EntryID, name: [UInt8], kind: EntryKind, mode: UInt32, caller: Caller,
                                  _ fill: (inout EntryRecord) -> Void) throws -> FileAttributes {
        try Self.validate(name)
        let id = try takeID()
        return try withLoaded([parent]) { namespace in
            let parentRecord = try directory(parent, in: &namespace)
            guard parent != WellKnownEntry.root else { throw CacheError.notPermitted }
            guard try namespace.childID(of: parent, named: Data(name)) == nil else { throw CacheError.exists }
            let time = now.nanoseconds
            var created = newRecord(id, kind: kind, name: Data(name), in: parentRecord, mode: mode, caller: caller,
                                    at: time)
            created.persistent = false
            created.pinnedUntil = 0
            created.expiration = 0
            fill(&created)
            namespace.add(created)
            namespace.log(.insert(created))
            touch(parent, at: time, in: &namespace)
            namespace.modify(id) { $0.lookups += 1 }
            return created.attributes
        }
    }
}
