import CacheModel
import struct Foundation.Data

/// Where the namespace reads what it has not loaded: a directory's names and an entry's row.
/// Read-only; CacheCore's `IndexDatabase` is the one implementation.
package protocol DirectorySource: Sendable {
    func entry(_ id: EntryID) throws -> EntryRecord?
    /// At most `limit` rows of `parent`'s children with ids above `after`, in id order.
    func children(of parent: EntryID, after: EntryID, limit: Int) throws -> ChildPage
    func allLinks(in parent: EntryID) throws -> [(name: Data, record: EntryRecord)]
    func links(of entry: EntryID) throws -> [LinkName]
    /// How many rows `parent` has, if the source can tell cheaply: a load makes room for them
    /// at once instead of growing its tables by copying as pages arrive.
    func childCount(of parent: EntryID) throws -> Int?
}

extension DirectorySource {
    package func childCount(of parent: EntryID) throws -> Int? { nil }
}

/// One page of a directory's names as the index has them, read without the namespace lock
/// and installed under it (``NamespaceState/install(_:from:)``). While a directory is not
/// loaded nothing in memory changes its names (see the namespace's invariants), so what was
/// read is still current when it is installed, page after page, unless another request
/// loaded the directory meanwhile: then the load is dropped, and memory, which may have
/// changed since, stays the truth. Pages keep a large directory's load near the size of its
/// result: only one page of rows is held besides what memory already has.
struct DirectoryLoad: Sendable {
    let directory: EntryID
    /// The directory's own row, for a directory without a parent (the root): nothing else
    /// brings its entry into memory.
    var ownEntry: EntryRecord?
    /// Each name with the row of the entry it names: the entries' own names, and on the
    /// last page the directory's hard links (a row's `name` is its first name, elsewhere).
    var names: [(name: Data, row: EntryRecord)] = []
    /// The names of this page's entries with more than one, wherever they are.
    var links: [EntryID: [LinkName]] = [:]
    /// On the first page, how many rows the directory has (``DirectorySource/childCount(of:)``).
    var expectedNames: Int?
    /// The first page starts the install; the last completes it.
    var isFirst: Bool
    var isLast: Bool
}

/// Reads a directory page by page (``DirectoryLoad``), in id order, the order a directory
/// keeps its children in.
struct DirectoryPages {
    let directory: EntryID
    let ownEntry: EntryRecord?
    let source: any DirectorySource
    let pageSize: Int
    private var after: EntryID = 0
    private var pagesRead = 0
    private var finished = false

    init(_ directory: EntryID, ownEntry: EntryRecord? = nil, from source: any DirectorySource,
         pageSize: Int = Tunables.loadRowsPerRead) {
        self.directory = directory
        self.ownEntry = ownEntry
        self.source = source
        self.pageSize = pageSize
    }

    /// The next page, nil after the last.
    mutating func next() throws -> DirectoryLoad? {
        guard !finished else { return nil }
        let page = try source.children(of: directory, after: after, limit: pageSize)
        var names = page.rows.map { (name: $0.name, row: $0) }
        let isLast = !page.isFull
        if isLast {
            // Hard links are read after the rows: no query may run inside the row cursor's read.
            names += try source.allLinks(in: directory).map { (name: $0.name, row: $0.record) }
            finished = true
        }
        var links: [EntryID: [LinkName]] = [:]
        for (_, row) in names where row.kind != .directory && row.linkCount > 1 && links[row.entryID] == nil {
            links[row.entryID] = try source.links(of: row.entryID)
        }
        after = page.lastRead ?? after
        defer { pagesRead += 1 }
        // A directory that fits one page is counted already.
        let expected = pagesRead > 0 ? nil : isLast ? names.count : try source.childCount(of: directory)
        return DirectoryLoad(directory: directory, ownEntry: ownEntry, names: names, links: links,
                             expectedNames: expected, isFirst: pagesRead == 0, isLast: isLast)
    }
}
