import CacheModel
import Synchronization

/// The fields most entries share with many others (pool, owner, group, mode), kept once each
/// in a process-wide table and named in an ``Inode`` by a 2-byte number.
///
/// *Why:* a store has few distinct combinations (a pool's files are written by one user with
/// one umask), and these four fields were 14 of an inode's bytes. The table only grows, so a
/// number, once handed out, names the same profile for the life of the process; after
/// ``capacity`` distinct profiles an inode keeps the exact fields in its extras instead.
struct InodeProfile: Hashable, Sendable {
    var pool: EntryID
    var uid: UInt32
    var gid: UInt32
    var mode: UInt32
}

final class InodeProfiles: Sendable {
    /// The numbers 0 to `capacity - 1`; `UInt16.max` is left to mean "not in the table".
    static let capacity = Int(UInt16.max)

    static let shared = InodeProfiles()

    private struct Table {
        var profiles: [InodeProfile] = []
        var numbers: [InodeProfile: UInt16] = [:]
    }

    private let table = Mutex(Table())
    private let limit: Int

    /// `limit` below ``capacity`` is for tests of the full table.
    init(limit: Int = InodeProfiles.capacity) {
        self.limit = min(limit, Self.capacity)
    }

    /// The profile's number, adding it if new; nil once the table is full.
    func number(for profile: InodeProfile) -> UInt16? {
        table.withLock { table in
            if let number = table.numbers[profile] { return number }
            guard table.profiles.count < limit else { return nil }
            let number = UInt16(table.profiles.count)
            table.profiles.append(profile)
            table.numbers[profile] = number
            return number
        }
    }

    /// The profile a number from ``number(for:)`` names.
    func profile(_ number: UInt16) -> InodeProfile {
        table.withLock { $0.profiles[Int(number)] }
    }

    var count: Int { table.withLock { $0.profiles.count } }
}

extension InodeProfile {
    /// What an inode's wide values hold when its profile is in the table.
    static let zero = InodeProfile(pool: 0, uid: 0, gid: 0, mode: 0)
}
