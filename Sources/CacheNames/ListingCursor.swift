import CacheModel
/// Where a directory listing resumes: after the names of entry `id` of which
/// `namesListed` (in name order) were listed. Ids are never reused, so a listing resumes
/// correctly across changes; an entry with two names in one directory (hard links) needs
/// the count too.
///
/// As a FUSE offset it is `id << 16 | namesListed`; "." and ".." take offsets 1 and 2,
/// below any entry's.
public struct ListingCursor: Sendable, Equatable {
    public var id: EntryID = 0
    public var namesListed: Int = 0

    public init(id: EntryID = 0, namesListed: Int = 0) {
        self.id = id
        self.namesListed = namesListed
    }

    public init(offset: Int64) {
        id = offset >> 16
        namesListed = Int(offset & 0xFFFF)
    }

    /// More than 65,535 names of one entry in one directory share the last offset.
    public var offset: Int64 { id << 16 | Int64(min(namesListed, 0xFFFF)) }
}
