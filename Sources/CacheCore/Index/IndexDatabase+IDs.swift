import CacheModel
import CacheNames

/// The id reservation as the index keeps it (its bound is a setting), and the one
/// ``IndexDatabase`` reads for ``DirectorySource``.
extension IDReservation {
    /// Starts after every id ever used, including a previous mount's whole reservation
    /// (ids are never reused, so the kernel's cached pages can never show another file).
    static func afterRecovery(index: IndexDatabase) throws -> IDReservation {
        let start = max(try index.highestEntryID() + 1, try reservedBound(in: index))
        return IDReservation(next: start, reservedBelow: start)
    }

    static func reservedBound(in index: IndexDatabase) throws -> EntryID {
        EntryID(try index.setting(settingKey) ?? "") ?? 0
    }
}

extension IndexDatabase: DirectorySource {}
