import CacheModel
import Synchronization

/// When each file fetched during this mount was last known to be its origin's current
/// version (its fetch's end, or the origin's last "unchanged"), and which version it holds.
/// A file not here (fetched before the mount, or forgotten when the table filled) counts as
/// due: its next open past `revalidate` asks the origin, with the version the index kept.
final class Validations: Sendable {
    struct Validation: Sendable {
        var time: Int64
        var version: OriginDelivery
    }

    private let table = Mutex<[EntryID: Validation]>([:])
    private let capacity: Int

    init(capacity: Int = Tunables.validationsKept) {
        self.capacity = capacity
    }

    func record(_ id: EntryID, at time: Int64, version: OriginDelivery) {
        table.withLock { table in
            // Forgetting makes files ask their origin once more: never a stale read.
            if table.count >= capacity && table[id] == nil { table.removeAll(keepingCapacity: true) }
            table[id] = Validation(time: time, version: version)
        }
    }

    func validation(of id: EntryID) -> Validation? {
        table.withLock { $0[id] }
    }

    func forget(_ id: EntryID) {
        _ = table.withLock { $0.removeValue(forKey: id) }
    }
}
