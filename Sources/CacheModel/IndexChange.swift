import Foundation

/// One change to the index, made in memory first by a request thread and committed later,
/// in order, by the index writer. Applying changes in the order memory made them keeps
/// every constraint of the schema (a name is taken only after its last owner let it go).
package enum IndexChange: Sendable {
    /// A new entry with an id the namespace handed out.
    case insert(EntryRecord)
    /// Every column of an existing entry.
    case update(EntryRecord)
    /// What writing or reading a file changes: size, allocation, times, the writing and durable flags.
    case content(EntryRecord)
    /// The entry's name is gone; its row stays, nameless, until its bytes are unlinked.
    case detach(EntryID, ctime: Int64)
    case delete(EntryID)
    /// One more name of an entry (a hard link).
    case insertLink(LinkName, entry: EntryID)
    case deleteLink(LinkName)
    /// Every hard link of an entry (its record name goes with `detach`).
    case deleteLinks(EntryID)
    /// Part of a fold: read times gathered since the last fold, written into the entries'
    /// `last_access` (never back in time).
    case accessTimes([EntryID: Int64])
    /// The end of a fold: every time the access log holds is in the entries' rows now, so its
    /// rows go.
    case accessLogFolded
    /// Read times gathered since the last append, appended to the access log as one row (a
    /// blob), not written into the entries: a crash loses none of them (the next mount folds
    /// the log), and a hit costs the log a few bytes, not an UPDATE of its row and its index.
    case accessLog([EntryID: Int64])
    /// A closed file synced to the disk, unless it changed since it was chosen.
    case markDurable(EntryID, mtime: Int64)
    /// A setting (boot id, counters, id reservations) that must commit in order with entries.
    case setting(key: String, value: String)
}
