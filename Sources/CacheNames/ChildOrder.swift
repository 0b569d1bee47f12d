import CacheModel

/// A directory's child ids in the order ``DirectoryChildren`` keeps them: 4 bytes an id while
/// every id fits 32 bits, 8 from the first that does not (ids are never reused, so a store
/// reaches 2^32 only after that many creates).
struct ChildOrder: Sendable {
    private var narrow: [UInt32] = []
    /// Replaces `narrow` for good once an id is past `UInt32.max`.
    private var wide: [EntryID]?

    var count: Int { wide?.count ?? narrow.count }
    var last: EntryID? { count == 0 ? nil : self[count - 1] }
    var all: [EntryID] { wide ?? narrow.map { EntryID($0) } }
    /// Bytes the ids take (the arrays' capacity).
    var bytes: Int { wide.map { $0.capacity * 8 } ?? narrow.capacity * 4 }

    subscript(position: Int) -> EntryID {
        if let wide { return wide[position] }
        return EntryID(narrow[position])
    }

    mutating func reserve(_ total: Int) {
        if wide != nil { wide!.reserveCapacity(total) } else { narrow.reserveCapacity(total) }
    }

    mutating func append(_ id: EntryID) {
        if let narrowID = narrowed(id) { narrow.append(narrowID) } else { wide!.append(id) }
    }

    mutating func insert(_ id: EntryID, at position: Int) {
        if let narrowID = narrowed(id) { narrow.insert(narrowID, at: position) } else { wide!.insert(id, at: position) }
    }

    /// Sorts the ids and keeps one of each.
    mutating func sortKeepingOneOfEach() {
        if wide != nil {
            wide!.sort()
            Self.dropRepeats(&wide!)
        } else {
            narrow.sort()
            Self.dropRepeats(&narrow)
        }
    }

    mutating func removeAll(where shouldRemove: (EntryID) -> Bool) {
        if wide != nil { wide!.removeAll(where: shouldRemove) } else { narrow.removeAll { shouldRemove(EntryID($0)) } }
    }

    /// `id` as a narrow one while the order is narrow and it fits; otherwise nil, with the
    /// order wide from now on.
    private mutating func narrowed(_ id: EntryID) -> UInt32? {
        guard wide == nil else { return nil }
        if let narrowID = UInt32(exactly: id) { return narrowID }
        wide = narrow.map { EntryID($0) }
        narrow = []
        return nil
    }

    private static func dropRepeats<Element: Equatable>(_ sorted: inout [Element]) {
        var kept = 0
        for position in sorted.indices where kept == 0 || sorted[position] != sorted[kept - 1] {
            sorted[kept] = sorted[position]
            kept += 1
        }
        sorted.removeLast(sorted.count - kept)
    }
}
