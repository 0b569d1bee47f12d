import struct Foundation.Data

/// Names and metadata in memory: the one truth the request threads read and change.
///
/// Directories are loaded from the index the first time anything inside them is needed
/// (a lookup, a listing, a removal chosen by the evictor) and stay loaded: from then on
/// every change to their names goes through here first and reaches the index later, in
/// order, through the ``IndexWriter``.
///
/// Invariants:
/// - a directory's children are either all in `directories[id]` (loaded) or all only in the
///   index, with no change pending for them (nothing changes a name it has not loaded);
/// - every entry named in a loaded directory has its ``Inode`` in `inodes`;
/// - an entry without a name (`record.parent == nil`) stays in `inodes` while referenced.
struct NamespaceState: Sendable {
    private(set) var inodes: [EntryID: Inode] = [:]
    private var directories: [EntryID: DirectoryChildren] = [:]
    let index: IndexStore
    /// Index changes made during the current hold of the lock; ``Namespace`` hands them to
    /// the writer as one group when the hold ends, so a crash keeps all of an operation or none.
    private(set) var outbox: [IndexChange] = []

    init(index: IndexStore) {
        self.index = index
    }

    /// Records the index change that matches a change just made in memory.
    mutating func log(_ change: IndexChange) {
        outbox.append(change)
    }

    mutating func log(_ changes: [IndexChange]) {
        outbox.append(contentsOf: changes)
    }

    mutating func takeOutbox() -> [IndexChange] {
        defer { outbox = [] }
        return outbox
    }

    // MARK: - Reading

    /// The inode of `id`, loading its directory if needed; nil if no such entry is named.
    mutating func inode(_ id: EntryID) throws -> Inode? {
        if let inode = inodes[id] { return inode }
        guard let row = try index.entry(id), let parent = row.parent else { return nil }
        // A loaded directory is the truth: a row it does not list is a removal not yet committed.
        guard directories[parent] == nil else { return nil }
        try loadChildren(of: parent)
        return inodes[id]
    }

    mutating func record(_ id: EntryID) throws -> EntryRecord {
        guard let inode = try inode(id) else { throw CacheError.notFound }
        return inode.record
    }

    /// The entry called `name` in `directory`.
    mutating func child(of directory: EntryID, named name: Data) throws -> EntryRecord? {
        try loadChildren(of: directory)
        guard let id = directories[directory]?[name] else { return nil }
        return inodes[id]?.record
    }

    mutating func hasChildren(_ directory: EntryID) throws -> Bool {
        try loadChildren(of: directory)
        return !(directories[directory]?.isEmpty ?? true)
    }

    /// Children after the listing cursor `after` (an id), ascending by id.
    mutating func children(of directory: EntryID, after cursor: EntryID, limit: Int) throws -> [EntryRecord] {
        try loadChildren(of: directory)
        guard let children = directories[directory] else { return [] }
        let inodes = self.inodes
        return children.page(after: cursor, limit: limit) { inodes[$0]?.record.parent == directory }
            .compactMap { inodes[$0]?.record }
    }

    /// Every entry beneath `directory` (loading each directory on the way), parents first.
    mutating func subtree(of directory: EntryID) throws -> [EntryRecord] {
        var result: [EntryRecord] = []
        var pending = [directory]
        while let next = pending.popLast() {
            for child in try children(of: next, after: 0, limit: Int.max) {
                result.append(child)
                if child.kind == .directory { pending.append(child.entryID) }
            }
        }
        return result
    }

    var all: [Inode] { Array(inodes.values) }

    // MARK: - Changing

    /// Runs `body` on an inode in memory; nil when it is not there.
    @discardableResult
    mutating func modify<T>(_ id: EntryID, _ body: (inout Inode) throws -> T) rethrows -> T? {
        guard var inode = inodes[id] else { return nil }
        let result = try body(&inode)
        inodes[id] = inode
        return result
    }

    /// Adds a new entry under its name (its directory must be loaded).
    mutating func add(_ record: EntryRecord) {
        inodes[record.entryID] = Inode(record: record)
        if let parent = record.parent { directories[parent]?.insert(record.entryID, named: record.name) }
        if record.kind == .directory { directories[record.entryID] = DirectoryChildren() }
    }

    /// Takes an entry's name away; it stays in memory, nameless, only while referenced.
    mutating func removeName(of id: EntryID, at time: Int64) {
        guard var inode = inodes[id], let parent = inode.record.parent else { return }
        directories[parent]?.remove(named: inode.record.name)
        inode.record.parent = nil
        inode.record.ctime = time
        if inode.record.kind == .directory { directories[id] = nil }
        inodes[id] = inode.isReferenced ? inode : nil
    }

    /// Gives an entry a new name, possibly in another (loaded) directory.
    mutating func move(_ id: EntryID, to parent: EntryID, name: Data, at time: Int64) {
        guard var inode = inodes[id], let oldParent = inode.record.parent else { return }
        directories[oldParent]?.remove(named: inode.record.name)
        inode.record.parent = parent
        inode.record.name = name
        inode.record.ctime = time
        inodes[id] = inode
        directories[parent]?.insert(id, named: name)
    }

    /// Drops a nameless inode nobody references any more.
    mutating func dropIfUnreferenced(_ id: EntryID) {
        guard let inode = inodes[id], inode.record.parent == nil, !inode.isReferenced else { return }
        inodes[id] = nil
    }

    // MARK: - Loading

    /// Loads a directory's children from the index, once. The index is current for them
    /// (see the invariants), so nothing has to be waited for.
    mutating func loadChildren(of directory: EntryID) throws {
        guard directories[directory] == nil else { return }
        if inodes[directory] == nil {
            guard let row = try index.entry(directory) else { throw CacheError.notFound }
            guard row.kind == .directory else { throw CacheError.notDirectory }
            if let parent = row.parent, parent != 0 {
                try loadChildren(of: parent)
                guard inodes[directory] != nil else { throw CacheError.notFound }
            } else {
                inodes[directory] = Inode(record: row)
            }
        }
        guard inodes[directory]?.record.kind == .directory else { throw CacheError.notDirectory }
        var children = DirectoryChildren()
        for row in try index.allChildren(of: directory) {
            let id = row.entryID
            if inodes[id] == nil { inodes[id] = Inode(record: row) }
            children.insert(id, named: row.name)
        }
        directories[directory] = children
    }
}
