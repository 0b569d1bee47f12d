import CacheModel
import Synchronization

/// The directories marked `user.cache.unit`: everything beneath one is evicted together.
/// Read at mount from the index and changed after each committed `setfattr`, so the hot
/// path asks only "has this pool any unit?" (a set lookup) before it walks anything. A
/// root whose directory is removed stays here, harmlessly: ids are never reused, and
/// nothing is beneath it any more.
final class UnitRoots: Sendable {
    private let roots: Mutex<Set<EntryID>>

    init(_ initial: Set<EntryID>) {
        roots = Mutex(initial)
    }

    var all: Set<EntryID> { roots.withLock { $0 } }

    var isEmpty: Bool { roots.withLock { $0.isEmpty } }

    func contains(_ directory: EntryID) -> Bool { roots.withLock { $0.contains(directory) } }

    func set(_ directory: EntryID, isRoot: Bool) {
        roots.withLock { roots in
            if isRoot { roots.insert(directory) } else { roots.remove(directory) }
        }
    }
}

extension NamespaceState {
    /// The unit a named entry belongs to: the outermost marked directory above it (nested
    /// units merge into the outer one), or nil. Walks its parents in memory: an entry in
    /// memory has its directory, and so all of its ancestors, loaded.
    func unit(of record: EntryRecord, roots: Set<EntryID>) -> EntryID? {
        guard !roots.isEmpty else { return nil }
        var outermost: EntryID?
        var next = record.kind == .directory ? record.entryID : record.parent
        while let directory = next, directory != WellKnownEntry.root {
            if roots.contains(directory) { outermost = directory }
            next = inodes[directory]?.record.parent
        }
        return outermost
    }

    /// The files beneath a directory by their first name (as the index's unit queries
    /// count them: a hard link elsewhere does not make a file part of a unit), from memory
    /// (its directories must be loaded).
    func filesBeneath(_ directory: EntryID) throws -> [EntryRecord] {
        let entries = try subtree(of: directory)
        let directories = Set(entries.filter { $0.kind == .directory }.map(\.entryID)).union([directory])
        var seen: Set<EntryID> = []
        return entries.filter { record in
            record.kind == .file && record.parent.map(directories.contains) == true && seen.insert(record.entryID).inserted
        }
    }
}
