import struct Foundation.Data

/// The names in one directory, held in memory once the directory has been loaded.
///
/// `order` keeps child ids ascending, the cursor of a listing (ids are never reused, so a
/// listing resumes correctly across changes). New files get the largest id so far and are
/// appended; a removal only counts a stale slot, and the slots are swept out once they are
/// half the array, so removing many names costs O(1) each, amortised.
struct DirectoryChildren: Sendable {
    private(set) var byName: [Data: EntryID] = [:]
    private var order: [EntryID] = []
    private var staleSlots = 0

    var isEmpty: Bool { byName.isEmpty }
    var count: Int { byName.count }

    subscript(name: Data) -> EntryID? { byName[name] }

    mutating func insert(_ id: EntryID, named name: Data) {
        byName[name] = id
        if let last = order.last, id <= last {
            let position = firstPosition(after: id - 1)
            if position < order.count, order[position] == id {
                staleSlots -= 1
                return
            }
            order.insert(id, at: position)
        } else {
            order.append(id)
        }
    }

    /// Takes `name` away; its slot in `order` goes at the next sweep.
    mutating func remove(named name: Data) {
        guard byName.removeValue(forKey: name) != nil else { return }
        staleSlots += 1
        if staleSlots > 64 && staleSlots * 2 > order.count {
            let live = Set(byName.values)
            order.removeAll { !live.contains($0) }
            staleSlots = 0
        }
    }

    /// Up to `limit` child ids greater than `cursor`, ascending; `isLive` filters stale slots.
    func page(after cursor: EntryID, limit: Int, isLive: (EntryID) -> Bool) -> [EntryID] {
        var result: [EntryID] = []
        var position = firstPosition(after: cursor)
        while position < order.count && result.count < limit {
            if isLive(order[position]) { result.append(order[position]) }
            position += 1
        }
        return result
    }

    private func firstPosition(after cursor: EntryID) -> Int {
        var low = 0
        var high = order.count
        while low < high {
            let middle = (low + high) / 2
            if order[middle] <= cursor { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
