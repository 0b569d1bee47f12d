import CacheModel
import CachePolicy

/// The LRU order a pass on `lru` takes victims in, as one merge: the index's rows (by
/// last read, then id), files read since the last flush at their new time (a preview's;
/// a pass has flushed), and units at the time of their most recently read file. A unit's
/// files never appear alone. The pass and the preview both walk it, so a preview lists
/// what the pass then removes.
extension Evictor {
    func leastRecentlyUsedOrder(of pool: EntryID, need: Need, excluding writing: Set<EntryID>,
                                pending: [EntryID: Int64], units: [EvictionUnit],
                                in host: any EvictionHost) throws -> [VictimGroup] {
        let time = host.now
        let members = Set(units.flatMap { $0.files.map(\.entryID) })
        // The files of this pool read since the last flush, by their new time.
        // A file read is in memory (its lookup loaded its directory), so memory is asked only.
        var moved: [(lastAccess: Int64, record: EntryRecord)] = host.withCachedFiles { inMemory, _ in
            pending.compactMap { id, readAt -> (Int64, EntryRecord)? in
                guard !members.contains(id), let current = inMemory(id), current.pool == pool, current.parent != nil, current.kind == .file,
                      readAt > current.lastAccess, !writing.contains(id), host.isEvictable(current, at: time)
                else { return nil }
                return (readAt, current)
            }
        }
        moved.sort { ($0.lastAccess, $0.record.entryID) < ($1.lastAccess, $1.record.entryID) }
        let movedIDs = Set(moved.map(\.record.entryID))
        let waitingUnits = units.filter(\.mayGo).sorted { $0.order < $1.order }
        var remaining = need
        var order: [VictimGroup] = []
        var nextMoved = 0
        var nextUnit = 0
        func take(_ group: VictimGroup) {
            order.append(group)
            remaining.bytes -= group.bytes
            remaining.files -= 1
        }
        /// Takes the moved files and units that come before `key`, in order.
        func takeEarlier(than key: (Int64, EntryID)?) {
            while !remaining.isMet {
                let file = nextMoved < moved.count ? (moved[nextMoved].lastAccess, moved[nextMoved].record.entryID) : nil
                let unit = nextUnit < waitingUnits.count ? waitingUnits[nextUnit].order : nil
                let unitFirst: Bool
                switch (file, unit) {
                case (nil, nil): return
                case (let file?, nil): unitFirst = false; if let key, !(file < key) { return }
                case (nil, let unit?): unitFirst = true; if let key, !(unit < key) { return }
                case (let file?, let unit?):
                    unitFirst = unit < file
                    if let key, !((unitFirst ? unit : file) < key) { return }
                }
                if unitFirst {
                    take(.unit(waitingUnits[nextUnit]))
                    nextUnit += 1
                } else {
                    take(.file(moved[nextMoved].record, lastAccess: moved[nextMoved].lastAccess))
                    nextMoved += 1
                }
            }
        }
        // Pages are reads of their own: a row read again on a later page is taken once.
        var taken: Set<EntryID> = []
        if !remaining.isMet {
            try host.victimQueries.forEachLeastRecentlyUsed(pool: pool, batch: Self.victimBatch) { page in
                let heldInMemory: Set<EntryID> = host.withCachedFiles { _, isEligibleInMemory in
                    Set(page.map(\.entryID).filter { isEligibleInMemory($0) == false })
                }
                for row in page where taken.insert(row.entryID).inserted {
                    takeEarlier(than: (row.lastAccess, row.entryID))
                    if remaining.isMet { return false }
                    // As the removal's own check would: a file pinned or being written since its
                    // row was committed stays. (A directory not loaded yet has nothing newer in memory.)
                    if members.contains(row.entryID) || movedIDs.contains(row.entryID) || writing.contains(row.entryID)
                        || heldInMemory.contains(row.entryID) {
                        continue
                    }
                    take(.file(row, lastAccess: row.lastAccess))
                }
                return !remaining.isMet
            }
        }
        takeEarlier(than: nil)
        return order
    }

    /// A pool's units (none when it has none) and the ids of their files, for a pass that takes
    /// files alone and units whole; nil (logged) when the index cannot say.
    func unitsAndMembers(of pool: EntryID, in host: any EvictionHost) -> (units: [EvictionUnit], members: Set<EntryID>)? {
        do {
            let units = try host.units(of: pool, pending: [:], writing: []) ?? []
            return (units, Set(units.flatMap { $0.files.map(\.entryID) }))
        } catch {
            host.logger.error("could not read pool \(pool)'s units from the index: \(error)")
            return nil
        }
    }

    /// A pool's victims from its in-memory policy, with each unit's file standing for its
    /// whole unit (taken once, when the unit may go; otherwise the file stays, and is given
    /// back to the policy by the pass).
    func groupingUnits(_ victims: [EntryRecord], units: [EvictionUnit]) -> [VictimGroup] {
        var unitOf: [EntryID: Int] = [:]
        for (index, unit) in units.enumerated() {
            for file in unit.files { unitOf[file.entryID] = index }
        }
        var taken: Set<Int> = []
        var groups: [VictimGroup] = []
        for victim in victims {
            guard let index = unitOf[victim.entryID] else {
                groups.append(.file(victim, lastAccess: victim.lastAccess))
                continue
            }
            if units[index].mayGo, taken.insert(index).inserted { groups.append(.unit(units[index])) }
        }
        return groups
    }

    /// Removes each group in order, a unit as a whole (files between units in one batch);
    /// returns what went.
    func remove(_ groups: [VictimGroup], as kind: CacheEventKind, reason: String,
                qualifies: @escaping (EntryRecord, Timestamp) -> Bool,
                in host: any EvictionHost) -> (files: Int, bytes: Int64, ids: Set<EntryID>) {
        var total: (files: Int, bytes: Int64, ids: Set<EntryID>) = (0, 0, [])
        var singles: [EntryRecord] = []
        func add(_ removed: (files: Int, bytes: Int64, ids: Set<EntryID>)) {
            total.files += removed.files
            total.bytes += removed.bytes
            total.ids.formUnion(removed.ids)
        }
        func removeSingles() {
            guard !singles.isEmpty else { return }
            add(host.removeFiles(singles, as: kind, reason: reason, qualifies: qualifies))
            singles = []
        }
        for group in groups {
            guard let unit = group.unit else {
                singles += group.files
                continue
            }
            removeSingles()
            add(host.removeUnit(unit, as: kind, reason: reason, qualifies: qualifies))
        }
        removeSingles()
        return total
    }
}
