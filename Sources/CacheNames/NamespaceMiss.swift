import CacheModel
/// What a hold of the namespace reached that memory does not hold yet. ``Names`` answers it
/// by loading outside the lock and running the hold again, so no hold waits for the index.
enum NamespaceMiss: Error, Equatable {
    /// A directory whose names are not loaded.
    case directory(EntryID)
    /// An entry known by id alone, whose directory may not be loaded.
    case entry(EntryID)
}
