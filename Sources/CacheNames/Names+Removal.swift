import CacheModel
import Foundation

/// How a name leaves: one name at a user's request (unlink, a rename over it), or every
/// name of an entry at once (cachefs's own removals work on inodes). The entry itself goes
/// with its last name; its bytes when nothing needs them any more.
extension Names {
    /// Removes `candidates` that still qualify, counts them, and leaves an event each and
    /// the kernel's notifications as effects; returns how many files and bytes went, and
    /// which. The one way cachefs removes files by itself (eviction, expiry, pressure,
    /// clear, refusal, a failed fetch).
    ///
    /// Files go in holds of at most ``Tunables/removalsPerHold``, so a request waiting for
    /// the namespace lock never waits behind a whole pass. With `unit` (its root), the
    /// candidates are a unit's files: they all go or none does (each must qualify, and the
    /// unit must hold no file that is not among them, such as one created since they were
    /// read), in one hold and so in one index transaction, and one event names the unit.
    @discardableResult
    package func removeFiles(_ candidates: [EntryRecord], as kind: CacheEventKind, reason: String,
                             qualifies: (EntryRecord, Timestamp) -> Bool = { _, _ in true }, unit: EntryRecord? = nil)
        -> (files: Int, bytes: Int64, ids: Set<EntryID>)
    {
        keepingLoaded {
            removeFilesInBatches(candidates, as: kind, reason: reason, qualifies: qualifies, unit: unit)
        }
    }

    private func removeFilesInBatches(_ candidates: [EntryRecord], as kind: CacheEventKind, reason: String,
                                      qualifies: (EntryRecord, Timestamp) -> Bool, unit: EntryRecord?)
        -> (files: Int, bytes: Int64, ids: Set<EntryID>)
    {
        let time = now
        let holds = unit == nil ? stride(from: 0, to: candidates.count, by: Tunables.removalsPerHold).map {
            Array(candidates[$0..<min($0 + Tunables.removalsPerHold, candidates.count)])
        } : [candidates]
        var total: (files: Int, bytes: Int64, ids: Set<EntryID>) = (0, 0, [])
        for batch in holds {
            // Each removal changes memory before the next candidate is reached, so everything
            // the candidates touch (their directories, their hard links') loads first, outside.
            loadForRemoval(batch.map(\.entryID))
            let directories = Array(Set(batch.compactMap(\.parent)))
            do {
                let removed = try change(loading: directories) { namespace, effects in
                    removeFiles(batch, as: kind, reason: reason, qualifies: qualifies, unit: unit, at: time,
                                in: &namespace, effects: &effects)
                }
                total.files += removed.files
                total.bytes += removed.bytes
                total.ids.formUnion(removed.ids)
                yieldBetweenHolds()
            } catch {
                logger.error("could not remove \(batch.count) files (\(kind.rawValue)): \(error)")
            }
        }
        return total
    }

    private func removeFiles(_ candidates: [EntryRecord], as kind: CacheEventKind, reason: String,
                             qualifies: (EntryRecord, Timestamp) -> Bool, unit: EntryRecord?, at time: Timestamp,
                             in namespace: inout NamespaceState, effects: inout NameEffects)
        -> (files: Int, bytes: Int64, ids: Set<EntryID>)
    {
        if let unit, !isWhole(unit, candidates, qualifies: qualifies, at: time, in: &namespace, effects: &effects) {
            return (0, 0, [])
        }
        var removed: [(record: EntryRecord, path: String, names: [LinkName])] = []
        for candidate in candidates {
            let current: EntryRecord
            let gone: (names: [LinkName], discard: EntryID?)
            let path: String
            do {
                // Loaded before the hold: an entry memory does not hold is gone.
                guard let inMemory = namespace.inodes[candidate.entryID]?.record else { continue }
                current = inMemory
                guard current.parent != nil, current.parent == candidate.parent, current.name == candidate.name,
                      current.kind == .file, qualifies(current, time) else { continue }
                path = self.path(of: current, in: &namespace)
                // Eviction works on inodes: every name of a hard-linked file goes.
                gone = try removeEveryName(of: current.entryID, at: time.nanoseconds, in: &namespace)
            } catch CacheError.notFound {
                continue
            } catch {
                effects.errors.append("could not remove entry \(candidate.entryID) (\(kind.rawValue)): \(error)")
                continue
            }
            if let id = gone.discard { effects.bytesToDiscard.append(id) }
            removed.append((current, path, gone.names))
        }
        // A directory whose entry goes changes, as on ext4.
        for parent in Set(removed.flatMap { $0.names.map(\.parent) }) {
            touch(parent, at: time.nanoseconds, in: &namespace)
        }
        // Counted with the usage change, so evicted_files never lags files and usage.
        if kind != .deleted && kind != .fetchFailed { counters.countRemoved(removed.map(\.record)) }
        let bytes = removed.reduce(Int64(0)) { $0 + $1.record.size }
        if let unit, !removed.isEmpty {
            effects.events.append(CacheEvent(time: time, event: kind, pool: poolName(unit.pool, in: &namespace) ?? "",
                                             path: path(of: unit, in: &namespace), size: bytes,
                                             reason: "unit of \(removed.count) files; \(reason)",
                                             files: removed.count))
        } else {
            effects.events += removed.map {
                CacheEvent(time: time, event: kind, pool: poolName($0.record.pool, in: &namespace) ?? "",
                           path: $0.path, size: $0.record.size, reason: reason)
            }
        }
        // The kernel made a user's own removal itself; only cachefs's removals need telling.
        if kind != .deleted {
            effects.notifications += removed.flatMap { item in
                item.names.map {
                    PendingNotification.deleted(parent: $0.parent, child: item.record.entryID, name: Array($0.name))
                }
            }
        }
        return (removed.count, bytes, Set(removed.map(\.record.entryID)))
    }

    /// Whether `candidates` are all of a unit's files now, each unchanged and qualifying.
    private func isWhole(_ unit: EntryRecord, _ candidates: [EntryRecord], qualifies: (EntryRecord, Timestamp) -> Bool,
                         at time: Timestamp, in namespace: inout NamespaceState, effects: inout NameEffects) -> Bool {
        do {
            let current = try namespace.filesBeneath(unit.entryID)
            guard current.count == candidates.count else { return false }
            let byID = Dictionary(current.map { ($0.entryID, $0) }, uniquingKeysWith: { first, _ in first })
            return candidates.allSatisfy { candidate in
                guard let now = byID[candidate.entryID] else { return false }
                return now.parent == candidate.parent && now.name == candidate.name && qualifies(now, time)
            }
        } catch {
            effects.errors.append("could not read unit \(unit.entryID) to remove it (\(error)): it stays")
            return false
        }
    }

    /// A user's removal of one name. When it was the last, a file's size leaves its pool and
    /// its bytes stay while a handle is open or the kernel still holds the inode (so an
    /// open(2) racing the removal opens the old file, as on ext4, instead of failing; the
    /// kernel forgets such an inode as soon as it sees the removal). A file's last name
    /// leaves a `deleted` event.
    func removeUserName(_ name: LinkName, of id: EntryID, reason: String, at time: Timestamp,
                        in namespace: inout NamespaceState, effects: inout NameEffects) {
        guard let inode = namespace.inodes[id], inode.names.count == 1 else {
            namespace.removeName(name, of: id, at: time.nanoseconds)
            return
        }
        if inode.record.kind == .file {
            effects.events.append(CacheEvent(time: time, event: .deleted,
                                             pool: poolName(inode.record.pool, in: &namespace) ?? "",
                                             path: path(of: name, in: &namespace), size: inode.record.size,
                                             reason: reason))
        }
        if let discard = retireLastName(of: id, keepWhileKernelHolds: true, at: time.nanoseconds, in: &namespace) {
            effects.bytesToDiscard.append(discard)
        }
        namespace.removeName(name, of: id, at: time.nanoseconds)
    }

    /// Takes every name of an entry away (eviction, expiry, pressure, clear, refusal).
    /// The kernel is told of each name; its bytes go at once unless a handle is open.
    /// Returns the names it had and the id whose bytes and row can go now.
    func removeEveryName(of id: EntryID, at time: Int64,
                         in namespace: inout NamespaceState) throws -> (names: [LinkName], discard: EntryID?) {
        guard let inode = namespace.inodes[id] else { return ([], nil) }
        // Every directory it is named in must be loaded before anything changes.
        for name in inode.names { try namespace.requireLoaded(name.parent) }
        let discard = retireLastName(of: id, keepWhileKernelHolds: kernelServesOpens.load(ordering: .relaxed),
                                     at: time, in: &namespace)
        let names = try namespace.removeAllNames(of: id, at: time)
        return (names, discard)
    }

    /// What the last name leaving changes, logged before the name goes: the size leaves the
    /// pool's usage (into pending while the bytes are kept) and the row becomes nameless. A
    /// file of an origin pool whose fetch never started was never counted (`countsInUsage`).
    private func retireLastName(of id: EntryID, keepWhileKernelHolds: Bool, at time: Int64,
                                in namespace: inout NamespaceState) -> EntryID? {
        // The size is read in the same hold that takes the name, so a write counts its
        // growth either before (here subtracted) or after (as pending).
        guard let (record, kept) = namespace.modify(id, { inode -> (EntryRecord, Bool) in
            let kept = inode.openHandles > 0 || (keepWhileKernelHolds && inode.lookups > 0)
            inode.keptUntilUnreferenced = kept
            return (inode.record, kept)
        }) else {
            namespace.log(.detach(id, ctime: time))
            return id
        }
        if record.kind == .file && countsInUsage(record) {
            countOut(record, kept: kept, in: &namespace)
        } else if let held = fetches.heldBlockBytes(id) {
            usage.addBytes(-held, pool: record.pool, persistent: false)
            if kept { usage.addPending(held, pool: record.pool) }
        }
        if !kept { fetches.dropIfPending(id) }
        namespace.log(.detach(id, ctime: time))
        return kept ? nil : id
    }

    /// A nameless entry whose last handle closed or which the kernel forgot: when nothing
    /// needs it any more it leaves memory, and its bytes and row go (an effect).
    func finishIfUnreferenced(_ id: EntryID, in namespace: inout NamespaceState, effects: inout NameEffects) {
        guard let inode = namespace.inodes[id], inode.record.parent == nil, !inode.isReferenced else { return }
        namespace.dropIfUnreferenced(id)
        guard inode.keptUntilUnreferenced else { return }
        if inode.record.kind == .file && countsInUsage(inode.record) {
            usage.addPending(-inode.record.size, pool: inode.record.pool)
        } else if let held = fetches.heldBlockBytes(id) {
            usage.addPending(-held, pool: inode.record.pool)
        }
        fetches.dropIfPending(id)
        effects.bytesToDiscard.append(id)
    }

    /// The path of an entry below the mount ("data/photos/a.jpg"), for events.
    func path(of entry: EntryRecord, in namespace: inout NamespaceState) -> String {
        // A directory that cannot be read (an index error) leaves its part of the path out:
        // the path only names the entry in events.
        EntryPath.of(entry) { try? namespace.record($0) }
    }

    /// The path of one name below the mount ("data/photos/a.jpg"), for events.
    func path(of name: LinkName, in namespace: inout NamespaceState) -> String {
        // Only names the file in an event; the name alone stands when its directory cannot be read.
        guard let directory = try? namespace.record(name.parent) else { return String(decoding: name.name, as: UTF8.self) }
        let directoryPath = path(of: directory, in: &namespace)
        return directoryPath + "/" + String(decoding: name.name, as: UTF8.self)
    }
}
