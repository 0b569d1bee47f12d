import CacheModel
import struct Foundation.Data

/// Where the namespace reads what it has not loaded: a directory's names and an entry's row.
/// Read-only; CacheCore's `IndexDatabase` is the one implementation.
package protocol DirectorySource: Sendable {
    func entry(_ id: EntryID) throws -> EntryRecord?
    func forEachChild(of parent: EntryID, _ body: (EntryRecord) throws -> Void) throws
    func allLinks(in parent: EntryID) throws -> [(name: Data, record: EntryRecord)]
    func links(of entry: EntryID) throws -> [LinkName]
}

/// A directory's names as the index has them, read without the namespace lock and installed
/// under it (``NamespaceState/install(_:from:)``). While a directory is not loaded nothing in
/// memory changes its names (see the namespace's invariants), so what was read is still
/// current when it is installed, unless another request loaded the directory meanwhile:
/// then the load is dropped, and memory, which may have changed since, stays the truth.
struct DirectoryLoad: Sendable {
    let directory: EntryID
    /// The directory's own row, for a directory without a parent (the root): nothing else
    /// brings its entry into memory.
    var ownEntry: EntryRecord?
    /// Each name with the row of the entry it names: the entries' own names first, then
    /// the directory's hard links (a row's `name` is its first name, elsewhere).
    var names: [(name: Data, row: EntryRecord)] = []
    /// The names of entries with more than one, wherever they are.
    var links: [EntryID: [LinkName]] = [:]

    /// Reads `directory` from `source` (with `ownEntry` when memory cannot have its entry).
    init(_ directory: EntryID, ownEntry: EntryRecord? = nil, from source: any DirectorySource) throws {
        self.directory = directory
        self.ownEntry = ownEntry
        var names: [(name: Data, row: EntryRecord)] = []
        try source.forEachChild(of: directory) { row in names.append((row.name, row)) }
        // Hard links are read after the rows: no query may run inside the row cursor's read.
        for (name, row) in try source.allLinks(in: directory) { names.append((name, row)) }
        for (_, row) in names where row.kind != .directory && row.linkCount > 1 && links[row.entryID] == nil {
            links[row.entryID] = try source.links(of: row.entryID)
        }
        // In id order, the order a directory keeps its children in, so the install's last
        // hold finds them sorted; sorting here costs the lock nothing.
        names.sort { $0.row.entryID < $1.row.entryID }
        self.names = names
    }
}
