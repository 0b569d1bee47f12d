import CacheModel
import CacheNames

/// The writer is where ``Names`` logs its changes; the pool and origin rows it cannot
/// express as an ``IndexChange`` go as actions on the index.
extension IndexWriter: IndexLog {
    func waitForCommit() { flush() }

    func commitNewPool(_ record: EntryRecord, settings: PoolSettings) throws {
        try perform { [index] db in try index.insertPool(record, settings: settings, in: db) }
    }

    func commitSettings(_ settings: PoolSettings, of pool: EntryID) throws {
        try perform { [index] db in try index.saveSettings(settings, for: pool, in: db) }
    }

    func enqueueSettings(_ settings: PoolSettings, of pool: EntryID) {
        enqueue([.action { [index] db in try index.saveSettings(settings, for: pool, in: db) }])
    }

    func enqueueOriginVersion(of id: EntryID, etag: String?, lastModified: String?) {
        // Most origins name no version (exec:, file:, the shared tier): no action, which would
        // also keep the batch's changes of other entries from folding across it.
        guard etag != nil || lastModified != nil else { return }
        enqueue([.action { [index] db in
            try index.setOriginVersion(id, etag: etag, lastModified: lastModified, in: db)
        }])
    }
}
