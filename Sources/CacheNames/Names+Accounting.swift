import CacheModel
/// The one place a file's bytes are counted: its pool's usage, its unit's bytes and its
/// pool's replacement policy change together, in the hold that changes what they count, so
/// a size, a flag and a removal can never count a file in the wrong place.
extension Names {
    /// A named file starts counting (created, or its fetch started): in its pool's figures
    /// and, when cached, in its unit and its pool's policy, which weighs it at `policySize`
    /// (an empty new file: the pool's average file).
    func countIn(_ record: EntryRecord, policySize: Int64? = nil, in namespace: inout NamespaceState) {
        usage.addFile(1, bytes: record.size, pool: record.pool, persistent: record.persistent)
        guard !record.persistent else { return }
        addUnitBytes(record.size, of: record, in: &namespace)
        replacement.inserted(record.entryID, fingerprint: fingerprint(of: record), size: policySize ?? record.size,
                             costMilliseconds: record.costMilliseconds, pool: record.pool)
    }

    /// A counted file's last name went: it leaves its pool's figures, its unit and its
    /// policy; while `kept` (a handle or the kernel still holds it) its bytes are pending.
    func countOut(_ record: EntryRecord, kept: Bool, in namespace: inout NamespaceState) {
        usage.addFile(-1, bytes: -record.size, pool: record.pool, persistent: record.persistent)
        if !record.persistent {
            addUnitBytes(-record.size, of: record, in: &namespace)
            replacement.removed(record.entryID, costMilliseconds: record.costMilliseconds, pool: record.pool)
        }
        if kept { usage.addPending(record.size, pool: record.pool) }
    }

    /// A counted file's size moved by `delta` (a write, a truncation); a file with no name
    /// left counts its growth as pending.
    func countResize(_ record: EntryRecord, by delta: Int64, in namespace: inout NamespaceState) {
        guard delta != 0 else { return }
        guard record.parent != nil else {
            usage.addPending(delta, pool: record.pool)
            return
        }
        usage.addBytes(delta, pool: record.pool, persistent: record.persistent)
        guard !record.persistent else { return }
        addUnitBytes(delta, of: record, in: &namespace)
        replacement.resized(record.entryID, size: record.size, costMilliseconds: record.costMilliseconds,
                            previousCostMilliseconds: record.costMilliseconds, pool: record.pool)
    }

    /// A counted cached file's miss cost changed (`user.cache.cost`, a finished fetch's
    /// time): its pool's policy weighs it again.
    func recostIfCostChanged(from before: EntryRecord, to after: EntryRecord) {
        guard before.costMilliseconds != after.costMilliseconds, after.kind == .file, after.parent != nil,
              !after.persistent, countsInUsage(after) else { return }
        replacement.resized(after.entryID, size: after.size, costMilliseconds: after.costMilliseconds,
                            previousCostMilliseconds: before.costMilliseconds, pool: after.pool)
    }

    /// A named file that becomes (or stops being) persistent moves between its pool's
    /// figures, in or out of its unit's bytes and its policy.
    func moveUsageIfPersistenceChanged(from before: EntryRecord, to after: EntryRecord,
                                       in namespace: inout NamespaceState) {
        guard after.kind == .file, after.parent != nil, before.persistent != after.persistent,
              countsInUsage(after) else { return }
        usage.moveFile(bytes: after.size, pool: after.pool, toPersistent: after.persistent)
        addUnitBytes(after.persistent ? -after.size : after.size, of: after, in: &namespace)
        if after.persistent {
            replacement.removed(after.entryID, costMilliseconds: after.costMilliseconds, pool: after.pool)
        } else {
            replacement.inserted(after.entryID, fingerprint: fingerprint(of: after), size: after.size,
                                 costMilliseconds: after.costMilliseconds, pool: after.pool)
        }
    }

    /// A file's first name moved from `before` to `after` (a rename): its cached bytes
    /// follow it from one unit to another.
    func moveUnitBytes(from before: EntryRecord, to after: EntryRecord, in namespace: inout NamespaceState) {
        guard after.kind == .file, !after.persistent, countsInUsage(after), !units.isEmpty else { return }
        let roots = units.all
        let from = namespace.unit(of: before, roots: roots), to = namespace.unit(of: after, roots: roots)
        guard from != to else { return }
        if let from { namespace.addUnitBytes(-after.size, to: from) }
        if let to { namespace.addUnitBytes(after.size, to: to) }
    }

    private func addUnitBytes(_ delta: Int64, of record: EntryRecord, in namespace: inout NamespaceState) {
        guard delta != 0, !namespace.unitBytes.isEmpty, !units.isEmpty,
              let unit = namespace.unit(of: record, roots: units.all) else { return }
        namespace.addUnitBytes(delta, to: unit)
    }

    /// The counted cached bytes beneath `unit` (a unit's root): kept in memory once a walk
    /// of the unit counted them (its directories must be loaded: ``loadSubtreeOutsideTheLock(_:)``).
    func unitBytes(of unit: EntryID, in namespace: inout NamespaceState) throws -> Int64 {
        if let known = namespace.unitBytes[unit] { return known }
        let counted = try namespace.filesBeneath(unit).reduce(Int64(0)) { sum, file in
            sum + (file.persistent || !countsInUsage(file) ? 0 : file.size)
        }
        namespace.setUnitBytes(counted, of: unit)
        return counted
    }
}

extension Names {
    /// Marks or unmarks a unit's root (its mark committed already): the units' kept bytes are
    /// counted again when next asked.
    package func setUnitRoot(_ directory: EntryID, isRoot: Bool) {
        changeInMemory { namespace, _ in
            units.set(directory, isRoot: isRoot)
            namespace.forgetUnitBytes()
        }
    }
}

extension Names {
    /// An open for reading that is a hit: counted in its pool, and an access for its pool's
    /// replacement policy when the file is named and cached.
    package func countHit(of opened: EntryRecord) {
        counters.countHit(pool: opened.pool, bytes: opened.size)
        if opened.parent != nil && !opened.persistent {
            replacement.accessed(opened.entryID, fingerprint: { fingerprint(of: opened) }, size: opened.size,
                                 costMilliseconds: opened.costMilliseconds, pool: opened.pool)
        }
    }
}

extension Names {
    /// The pool's average cached file (0 when it has none): what an empty new file weighs
    /// for its policy.
    func averageCachedFileSize(in pool: EntryID) -> Int64 {
        let poolUsage = usage.usage(of: pool)
        return poolUsage.cachedFiles > 0 ? poolUsage.cachedBytes / poolUsage.cachedFiles : 0
    }

    /// What a miss weighs in the byte hit ratio: the missing name's size is unknown, so the
    /// pool's average cached file, at least a byte.
    func missWeight(in pool: EntryID) -> Int64 {
        max(averageCachedFileSize(in: pool), 1)
    }
}
