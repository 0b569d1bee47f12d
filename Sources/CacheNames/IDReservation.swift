import CacheModel
/// Entry ids come from a range reserved in the index before any is handed out, so after a
/// crash the only ids whose bytes may exist without a row are those of the open range:
/// recovery looks at those (a few thousand at most), never walks the store.
package struct IDReservation: Sendable {
    package static let settingKey = "ids_reserved_below"
    package static let chunk = Tunables.idReservationChunk

    package private(set) var next: EntryID
    package private(set) var reservedBelow: EntryID

    package init(next: EntryID, reservedBelow: EntryID) {
        self.next = next
        self.reservedBelow = reservedBelow
    }

    /// Hands out an id. When the range is used up it returns the new bound too, which the
    /// caller must have committed before it creates bytes under the id.
    package mutating func take() -> (id: EntryID, newBound: EntryID?) {
        var newBound: EntryID?
        if next >= reservedBelow {
            reservedBelow = next + Self.chunk
            newBound = reservedBelow
        }
        defer { next += 1 }
        return (next, newBound)
    }
}
