import CacheModel

/// What a preview asks for (`cachefs preview`, `user.cache.preview`).
public enum PreviewRequest: Sendable, Hashable {
    /// The next victims, this many, whatever the pool's limits.
    case next(Int)
    /// What a size pass would remove if the pool's `max_size` were this (down to its low
    /// watermark of it, as a real pass frees); nothing if the pool is within it.
    case size(Int64)
    /// The victims that free this many bytes.
    case free(Int64)

    /// `user.cache.preview` without parameters.
    static let attributeDefault = PreviewRequest.next(Tunables.previewVictims)
}

/// One file (or unit) the evictor would remove, in the order it would.
struct PreviewVictim: Sendable {
    /// The file, or a unit's root directory.
    let record: EntryRecord
    /// The bytes it frees: a unit's, all its files'.
    let size: Int64
    /// 1 for a file; a unit's number of files.
    let files: Int
    /// Its last read as the pass would see it (reads not flushed yet included).
    let lastAccess: Int64
    /// Why it is eligible and comes this early: the pool's policy's reason.
    let reason: String
}
