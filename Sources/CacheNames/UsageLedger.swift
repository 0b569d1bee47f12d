import CacheModel
import Synchronization

/// Live byte and file counts per pool, kept exact in memory: computed once from the index at
/// mount, then moved by every write, truncate, removal and state change.
final class UsageLedger: Sendable {
    private let usage: Mutex<[EntryID: PoolUsage]>
    /// Bytes whose names are gone but which an open handle still holds, per pool.
    private let pending = Mutex<[EntryID: Int64]>([:])

    init(_ initial: [EntryID: PoolUsage]) {
        usage = Mutex(initial)
    }

    func usage(of pool: EntryID) -> PoolUsage {
        usage.withLock { $0[pool] ?? PoolUsage() }
    }

    func pendingBytes(of pool: EntryID) -> Int64 {
        pending.withLock { $0[pool] ?? 0 }
    }

    func pendingBytesOfAllPools() -> Int64 {
        pending.withLock { $0.values.reduce(0, +) }
    }

    func all() -> [EntryID: PoolUsage] {
        usage.withLock { $0 }
    }

    func addBytes(_ delta: Int64, pool: EntryID, persistent: Bool) {
        guard delta != 0 else { return }
        usage.withLock { usage in
            if persistent {
                usage[pool, default: PoolUsage()].persistentBytes += delta
            } else {
                usage[pool, default: PoolUsage()].cachedBytes += delta
            }
        }
    }

    func addFile(_ delta: Int64, bytes: Int64, pool: EntryID, persistent: Bool) {
        usage.withLock { usage in
            if persistent {
                usage[pool, default: PoolUsage()].persistentFiles += delta
                usage[pool, default: PoolUsage()].persistentBytes += bytes
            } else {
                usage[pool, default: PoolUsage()].cachedFiles += delta
                usage[pool, default: PoolUsage()].cachedBytes += bytes
            }
        }
    }

    /// Moves one file of `bytes` between the cached and persistent figures of its pool.
    func moveFile(bytes: Int64, pool: EntryID, toPersistent: Bool) {
        addFile(-1, bytes: -bytes, pool: pool, persistent: !toPersistent)
        addFile(1, bytes: bytes, pool: pool, persistent: toPersistent)
    }

    func addPending(_ delta: Int64, pool: EntryID) {
        pending.withLock { $0[pool, default: 0] += delta }
    }

    func removePool(_ pool: EntryID) {
        usage.withLock { $0[pool] = nil }
        pending.withLock { $0[pool] = nil }
    }
}
