/// Files still being written, which the size pass leaves out of its sums: a file that turns
/// out larger than its pool is refused (EFBIG) without having cost any other file, and a
/// file that fits is counted when its write ends, when the evictor makes room for it.
extension CacheEngine {
    /// The cached bytes and files of `pool` whose write has not ended (marked `writing`,
    /// with a writable handle open). O(open handles), never a scan of the pool.
    func usageBeingWritten(in pool: EntryID) -> (bytes: Int64, files: Int64, entries: Set<EntryID>) {
        let candidates = handles.entriesOpenForWriting(in: pool)
        guard !candidates.isEmpty else { return (0, 0, []) }
        return namespace.withLock { namespace in
            var bytes: Int64 = 0
            var entries: Set<EntryID> = []
            for id in candidates {
                guard let record = namespace.inodes[id]?.record, record.writing, record.parent != nil,
                      !record.persistent else { continue }
                bytes += record.size
                entries.insert(id)
            }
            return (bytes, Int64(entries.count), entries)
        }
    }

    /// Asks the evictor to look at a pool once a write in it has ended, since the size pass
    /// left that file out while it was being written.
    func enforceLimitsAfterWrite(in pool: EntryID) {
        if isOverLimit(pool) { evictor.requestEnforcement(of: [pool]) }
    }
}
