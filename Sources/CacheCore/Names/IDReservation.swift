/// Entry ids come from a range reserved in the index before any is handed out, so after a
/// crash the only ids whose bytes may exist without a row are those of the open range:
/// recovery looks at those (a few thousand at most), never walks the store.
struct IDReservation: Sendable {
    static let settingKey = "ids_reserved_below"
    static let chunk = Tunables.idReservationChunk

    private(set) var next: EntryID
    private(set) var reservedBelow: EntryID

    /// Starts after every id ever used, including a previous mount's whole reservation
    /// (ids are never reused, so the kernel's cached pages can never show another file).
    static func afterRecovery(index: IndexStore) throws -> IDReservation {
        let start = max(try index.highestEntryID() + 1, try reservedBound(in: index))
        return IDReservation(next: start, reservedBelow: start)
    }

    static func reservedBound(in index: IndexStore) throws -> EntryID {
        EntryID(try index.setting(settingKey) ?? "") ?? 0
    }

    /// Hands out an id. When the range is used up it returns the new bound too, which the
    /// caller must have committed before it creates bytes under the id.
    mutating func take() -> (id: EntryID, newBound: EntryID?) {
        var newBound: EntryID?
        if next >= reservedBelow {
            reservedBelow = next + Self.chunk
            newBound = reservedBelow
        }
        defer { next += 1 }
        return (next, newBound)
    }
}
