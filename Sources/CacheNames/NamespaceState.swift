import CacheModel
import struct Foundation.Data

/// Names and metadata in memory: the one truth the request threads read and change.
///
/// Directories are loaded from the index the first time anything inside them is needed
/// (a lookup, a listing, a removal chosen by the evictor) and stay loaded while used (an
/// idle one may leave again past the memory budget: `NamespaceState+Unloading`): while
/// loaded, every change to their names goes through here first and reaches the index later,
/// in order, through the index writer (`IndexLog`).
///
/// It holds nothing that can read the index, so no hold of the namespace lock waits for
/// I/O: what a hold reaches that is not loaded throws a ``NamespaceMiss``, and ``Names``
/// loads it outside the lock and runs the hold again (``Names/change(loading:_:)``).
///
/// Invariants:
/// - a directory's children are either all in `directories[id]` (loaded) or all only in the
///   index, with no change pending for them (nothing changes a name it has not loaded);
/// - every entry named in a loaded directory has its ``Inode`` in `inodes`, with all its
///   names (a hard-linked entry's links are read with it, whichever directory loads first);
/// - an entry without a name (`record.parent == nil`) stays in `inodes` while referenced.
struct NamespaceState: Sendable {
    private(set) var inodes = InodeTable()
    /// Loaded directories' names (`NamespaceState+Unloading` takes idle ones out).
    var directories: [EntryID: DirectoryChildren] = [:]
    /// Index changes made during the current hold of the lock; ``Namespace`` hands them to
    /// the writer as one group when the hold ends, so a crash keeps all of an operation or none.
    private(set) var outbox: [IndexChange] = []
    /// What the loader found cannot be loaded (no such entry, not a directory, a failed
    /// read), for the hold it runs again: reaching it answers that, not another miss.
    /// Set by ``Names`` for one hold at a time.
    var unloadable: [EntryID: any Error] = [:]
    /// Whether this hold has changed memory yet: a miss after a change cannot be retried.
    private(set) var changedInHold = false
    /// The counted cached bytes of each unit (``Names/unitBytes(of:in:)``), for the units a
    /// write has asked about: counted by one walk, then kept by every change of what they
    /// count. Dropped, to be walked again, when membership changes wholesale: a directory
    /// moves, a unit is marked or unmarked, a hard-linked file's first name changes.
    private(set) var unitBytes: [EntryID: Int64] = [:]
    /// Directories whose install has begun but not ended (``install(_:from:)``): their names
    /// so far, not yet visible to lookups.
    var installing: [EntryID: PartialInstall] = [:]

    init() {}

    /// Records the index change that matches a change just made in memory.
    mutating func log(_ change: IndexChange) {
        changedInHold = true
        outbox.append(change)
    }

    mutating func log(_ changes: [IndexChange]) {
        changedInHold = true
        outbox.append(contentsOf: changes)
    }

    mutating func addUnitBytes(_ delta: Int64, to unit: EntryID) {
        unitBytes[unit]? += delta
    }

    mutating func setUnitBytes(_ bytes: Int64, of unit: EntryID) {
        unitBytes[unit] = bytes
        unitWalks += 1
    }

    /// How many times a unit's bytes were counted by a walk: once per unit until membership
    /// changes wholesale (the tests' measure that filling a unit is linear).
    private(set) var unitWalks = 0

    /// Names listed since the allocator was last asked to return freed pages
    /// (``Names/returnMemoryFreedByListings()``).
    var listedSinceTrim = 0

    mutating func forgetUnitBytes() {
        if !unitBytes.isEmpty { unitBytes = [:] }
    }

    /// Ends a hold: what it found unloadable and whether it changed anything are its own.
    mutating func endHold() {
        unloadable = [:]
        changedInHold = false
    }

    mutating func takeOutbox() -> [IndexChange] {
        defer { outbox = [] }
        return outbox
    }

    // MARK: - Reading

    /// The inode of `id`; nil if no such entry is named. An entry memory does not hold may
    /// be in a directory not loaded yet: that is a ``NamespaceMiss`` for the loader.
    func inode(_ id: EntryID) throws -> Inode? {
        if let inode = inodes[id] { return inode }
        guard let reason = unloadable[id] else { throw NamespaceMiss.entry(id) }
        if case CacheError.notFound = reason { return nil }
        throw reason
    }

    func record(_ id: EntryID) throws -> EntryRecord {
        guard let inode = try inode(id) else { throw CacheError.notFound }
        return inode.record
    }

    /// The entry called `name` in `directory`.
    func child(of directory: EntryID, named name: Data) throws -> EntryRecord? {
        try requireLoaded(directory)
        guard let slot = directories[directory]?.slot(named: name, in: directory, inodes: inodes) else { return nil }
        return inodes[slot: slot].record
    }

    /// The id named `name` in `directory`.
    func childID(of directory: EntryID, named name: Data) throws -> EntryID? {
        try requireLoaded(directory)
        guard let slot = directories[directory]?.slot(named: name, in: directory, inodes: inodes) else { return nil }
        return inodes[slot: slot].id
    }

    func hasChildren(_ directory: EntryID) throws -> Bool {
        try requireLoaded(directory)
        return !(directories[directory]?.isEmpty ?? true)
    }

    /// Names after the listing cursor (see ``ListingCursor``), ascending by id, then by name
    /// among the names one entry has in the directory.
    func children(of directory: EntryID, after cursor: ListingCursor, limit: Int) throws
        -> [(name: Data, record: EntryRecord, cursor: ListingCursor)]
    {
        try requireLoaded(directory)
        guard let children = directories[directory] else { return [] }
        var result: [(name: Data, record: EntryRecord, cursor: ListingCursor)] = []
        var after = cursor.id
        while result.count < limit {
            let page = children.page(after: after, limit: limit - result.count) { id in
                inodes[id].map { $0.nameCount(in: directory) > 0 } ?? false
            }
            guard let last = page.last else { break }
            for id in page {
                guard let inode = inodes[id] else { continue }
                var names = inode.names(in: directory)
                if names.count > 1 { names.sort { $0.lexicographicallyPrecedes($1) } }
                for (ordinal, name) in names.enumerated() where id != cursor.id || ordinal >= cursor.namesListed {
                    result.append((name, inode.record, ListingCursor(id: id, namesListed: ordinal + 1)))
                }
            }
            after = last
        }
        return result
    }

    /// Every entry beneath `directory` once, parents first (each directory must be loaded:
    /// ``Names/loadSubtreeOutsideTheLock(_:)``).
    func subtree(of directory: EntryID) throws -> [EntryRecord] {
        var result: [EntryRecord] = []
        var seen: Set<EntryID> = []
        var pending = [directory]
        while let next = pending.popLast() {
            for child in try children(of: next, after: ListingCursor(), limit: Int.max)
            where seen.insert(child.record.entryID).inserted {
                result.append(child.record)
                if child.record.kind == .directory { pending.append(child.record.entryID) }
            }
        }
        return result
    }

    var all: [Inode] { inodes.values }

    // MARK: - Changing

    /// Runs `body` on an inode in memory; nil when it is not there.
    @discardableResult
    mutating func modify<T>(_ id: EntryID, _ body: (inout Inode) throws -> T) rethrows -> T? {
        changedInHold = true
        return try inodes.modify(id, body)
    }

    /// Adds a new entry under its name (its directory must be loaded).
    mutating func add(_ record: EntryRecord) {
        changedInHold = true
        inodes[record.entryID] = Inode(record: record)
        if let parent = record.parent { insertName(record.name, of: record.entryID, in: parent) }
        if record.kind == .directory { directories[record.entryID] = DirectoryChildren() }
    }

    /// Gives an entry one more name (a hard link) in a loaded directory.
    mutating func addLink(_ id: EntryID, _ link: LinkName, at time: Int64) {
        guard var inode = inodes[id] else { return }
        changedInHold = true
        inode.links.append(link)
        inode.record.linkCount += 1
        inode.record.ctime = time
        inodes[id] = inode
        insertName(link.name, of: id, in: link.parent)
    }

    /// Takes one name of an entry away and logs the index changes. When it was the entry's
    /// record name and hard links remain, the first link becomes the record name. Returns
    /// whether the entry has no name left (then it stays in memory only while referenced,
    /// and the caller decides about its row and bytes).
    @discardableResult
    mutating func removeName(_ name: LinkName, of id: EntryID, at time: Int64) -> Bool {
        guard var inode = inodes[id], inode.hasName else { return true }
        changedInHold = true
        forgetName(name, of: id)
        inode.record.ctime = time
        if let position = inode.links.firstIndex(of: name) {
            inode.links.remove(at: position)
            inode.record.linkCount -= 1
            inodes[id] = inode
            log(.deleteLink(name))
            log(.update(inode.record))
            return false
        }
        if !inode.links.isEmpty {
            forgetUnitBytes()
            let promoted = inode.links.removeFirst()
            inode.record.parent = promoted.parent
            inode.record.name = promoted.name
            inode.record.linkCount -= 1
            inodes[id] = inode
            log(.deleteLink(promoted))
            log(.update(inode.record))
            return false
        }
        inode.record.parent = nil
        inode.record.linkCount = 0
        if inode.record.kind == .directory { directories[id] = nil }
        inodes[id] = inode.isReferenced ? inode : nil
        return true
    }

    /// Takes every name of an entry away (eviction works on inodes); the directories of its
    /// hard links must be loaded (``directoriesToRemove(_:)``), so none of them reappears
    /// from the index. Returns the names it had; the row's detach is the caller's to log.
    mutating func removeAllNames(of id: EntryID, at time: Int64) throws -> [LinkName] {
        guard let inode = inodes[id] else { return [] }
        // Every directory that holds one of its names, its own name's too: the entry may be in
        // memory through a link elsewhere, and a directory loaded after the removal would
        // read the name back from the index before the writer commits its removal.
        for name in inode.names { try requireLoaded(name.parent) }
        let names = inode.names
        for link in inode.links { forgetName(link, of: id) }
        if !inode.links.isEmpty { log(.deleteLinks(id)) }
        modify(id) { inode in
            inode.links = []
            inode.record.linkCount = 1
        }
        if let first = names.first { removeName(first, of: id, at: time) }
        return names
    }

    /// Moves one name of an entry to another (loaded) directory or name.
    mutating func move(_ name: LinkName, of id: EntryID, to destination: LinkName, at time: Int64) {
        guard var inode = inodes[id] else { return }
        changedInHold = true
        if inode.isDirectory { forgetUnitBytes() }
        forgetName(name, of: id)
        inode.record.ctime = time
        if let position = inode.links.firstIndex(of: name) {
            inode.links[position] = destination
            log(.deleteLink(name))
            log(.insertLink(destination, entry: id))
        } else {
            inode.record.parent = destination.parent
            inode.record.name = destination.name
        }
        inodes[id] = inode
        insertName(destination.name, of: id, in: destination.parent)
    }

    /// Swaps what two names name (RENAME_EXCHANGE) and logs the index changes: both names
    /// leave the index before either is written again, so no unique name is held twice.
    mutating func exchange(_ first: LinkName, of firstID: EntryID, with second: LinkName, of secondID: EntryID,
                           at time: Int64) {
        changedInHold = true
        forgetUnitBytes()
        func release(_ name: LinkName, of id: EntryID) {
            if inodes[id]?.links.contains(name) == true { log(.deleteLink(name)) } else { log(.detach(id, ctime: time)) }
        }
        release(first, of: firstID)
        release(second, of: secondID)
        forgetName(first, of: firstID)
        forgetName(second, of: secondID)
        rename(first, of: firstID, to: second, at: time)
        rename(second, of: secondID, to: first, at: time)
        insertName(first.name, of: secondID, in: first.parent)
        insertName(second.name, of: firstID, in: second.parent)
        for id in [firstID, secondID] {
            guard let inode = inodes[id] else { continue }
            log(.update(inode.record))
            for link in inode.links where link == first || link == second { log(.insertLink(link, entry: id)) }
        }
    }

    /// Gives one name of an inode another in memory only (a link, or the record's own).
    private mutating func rename(_ name: LinkName, of id: EntryID, to destination: LinkName, at time: Int64) {
        guard var inode = inodes[id] else { return }
        if let position = inode.links.firstIndex(of: name) {
            inode.links[position] = destination
        } else {
            inode.record.parent = destination.parent
            inode.record.name = destination.name
        }
        inode.record.ctime = time
        inodes[id] = inode
    }

    /// Drops a nameless inode nobody references any more.
    mutating func dropIfUnreferenced(_ id: EntryID) {
        guard let inode = inodes[id], !inode.hasName, !inode.isReferenced else { return }
        changedInHold = true
        inodes[id] = nil
    }

    /// Enters a name of an inode in memory into its (loaded) directory's table.
    private mutating func insertName(_ name: Data, of id: EntryID, in directory: EntryID, ordered: Bool = true) {
        guard directories[directory] != nil, let slot = inodes.slot(of: id) else { return }
        let inodes = self.inodes
        directories[directory]?.insert(id, slot: slot, named: name, in: directory, inodes: inodes, ordered: ordered)
    }

    /// Takes a name of an inode in memory out of its directory's table.
    private mutating func forgetName(_ name: LinkName, of id: EntryID) {
        guard directories[name.parent] != nil, let slot = inodes.slot(of: id) else { return }
        let inodes = self.inodes
        directories[name.parent]?.remove(slot: slot, named: name.name, in: name.parent, inodes: inodes)
    }

    // MARK: - Loading

    /// Takes an inode out of memory and logs nothing: the index's row is its truth again
    /// (an unload, `NamespaceState+Unloading`).
    mutating func leaveToIndex(_ id: EntryID) {
        inodes[id] = nil
    }

    /// Packs the inode table (``InodeTable/compact()``); the tables that hold its positions follow.
    mutating func compactInodes() {
        let newSlot = inodes.compact()
        for id in directories.keys { directories[id]?.remapSlots(newSlot) }
        for id in installing.keys { installing[id]?.children.remapSlots(newSlot) }
    }

    func isLoaded(_ directory: EntryID) -> Bool {
        directories[directory] != nil
    }

    /// The subdirectories of a loaded directory (none when it is not loaded).
    func loadedSubdirectories(of directory: EntryID) -> [EntryID] {
        guard let children = directories[directory] else { return [] }
        return children.page(after: 0, limit: Int.max) { id in
            inodes[id].map { $0.isDirectory && $0.nameCount(in: directory) > 0 } ?? false
        }
    }

    /// Throws a ``NamespaceMiss`` for a directory not loaded yet (or what the loader found:
    /// no such entry, not a directory).
    func requireLoaded(_ directory: EntryID) throws {
        guard directories[directory] == nil else { return }
        if let reason = unloadable[directory] { throw reason }
        if let inode = inodes[directory], !inode.isDirectory { throw CacheError.notDirectory }
        throw NamespaceMiss.directory(directory)
    }

    /// The directories a removal of every name of `id` touches that are not loaded yet.
    func directoriesToRemove(_ id: EntryID) -> [EntryID] {
        inodes[id]?.names.map(\.parent).filter { directories[$0] == nil } ?? []
    }

    /// Puts the names of a directory read from the index in memory, `Tunables.installNamesPerHold`
    /// a hold, so no hold of a large directory's install is long. Call for each page with `from`
    /// 0 first, then with each position returned until it returns nil; the directory counts as
    /// loaded only after the last page's last part, and until then every operation on its names misses and waits
    /// for the loader (``LoadsInFlight``). Entries put in memory by an earlier part are the
    /// truth from then on, as after a whole install: a change by id between parts is kept.
    ///
    /// Nothing is installed when the directory was loaded meanwhile or its own entry is not in
    /// memory (its parent is not loaded); a directory without a parent (the root) brings its
    /// own entry.
    mutating func install(_ load: DirectoryLoad, from start: Int) -> Int? {
        let directory = load.directory
        if load.isFirst && start == 0 {
            if inodes[directory] == nil, let own = load.ownEntry, own.parent == 0 || own.parent == nil {
                inodes[directory] = Inode(record: own)
            }
            guard directories[directory] == nil, installing[directory] == nil,
                  inodes[directory]?.isDirectory == true else { return nil }
            var partial = PartialInstall()
            if let expected = load.expectedNames {
                inodes.reserve(expected)
                partial.children.reserve(expected, inodes: inodes)
            }
            installing[directory] = partial
        }
        guard var partial = installing.removeValue(forKey: directory) else { return nil }
        let end = min(load.names.count, start + Tunables.installNamesPerHold)
        for (name, row) in load.names[start..<end] {
            addLoadedName(name, of: row, into: &partial, of: directory)
        }
        if end == load.names.count { partial.links.merge(load.links) { kept, _ in kept } }
        guard end == load.names.count, load.isLast else {
            installing[directory] = partial
            return end == load.names.count ? nil : end
        }
        partial.children.restoreOrder()
        directories[directory] = partial.children
        for id in partial.linked {
            if let links = partial.links[id] { inodes.modify(id) { $0.links = links } }
        }
        return nil
    }

    /// Whether a load of `directory` has begun and not ended: its next page may be read.
    func isInstalling(_ directory: EntryID) -> Bool {
        installing[directory] != nil
    }

    /// A load that could not read its next page: the directory stays unloaded, and the
    /// entries its pages put in memory stay, as entries known by id.
    mutating func abandonInstall(of directory: EntryID) {
        installing[directory] = nil
    }

    /// A name read from the index while loading `directory`. An entry memory already had is
    /// the truth: a name it no longer has there (moved or removed by a change the index writer
    /// has not committed yet) stays gone, or it would come back as a ghost.
    private mutating func addLoadedName(_ name: Data, of row: EntryRecord, into partial: inout PartialInstall,
                                        of directory: EntryID) {
        if !partial.readNow.contains(row.entryID), let known = inodes[row.entryID] {
            guard known.isNamed(name, in: directory) else { return }
        } else if remember(row) {
            partial.readNow.insert(row.entryID)
            partial.linked.append(row.entryID)
        }
        guard let slot = inodes.slot(of: row.entryID) else { return }
        partial.children.insert(row.entryID, slot: slot, named: name, in: directory, inodes: inodes, ordered: false)
    }
    /// Puts an entry read from the index in memory, unless memory already has it (and is then
    /// the truth). Returns whether the caller must read its hard links.
    private mutating func remember(_ row: EntryRecord) -> Bool {
        guard inodes[row.entryID] == nil else { return false }
        inodes[row.entryID] = Inode(record: row)
        return row.kind != .directory && row.linkCount > 1
    }
}

/// What a directory's install has put in memory so far.
struct PartialInstall {
    var children = DirectoryChildren()
    /// Entries with hard links this install put in memory: only they come again in the same
    /// load (their other names, on the last page), and their names are set once the install
    /// ends. Memory's copy of any entry it had before is the truth. (A set of every entry the
    /// install read was 16 MB more at the peak of a million-file load.)
    var readNow: Set<EntryID> = []
    /// The same entries, in the order they were read.
    var linked: [EntryID] = []
    /// Their names, as the pages read so far had them.
    var links: [EntryID: [LinkName]] = [:]
}
