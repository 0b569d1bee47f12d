import Foundation

/// A page of a directory's rows as read from the index.
package struct ChildPage: Sendable {
    /// The rows that can be listed (an encrypted store leaves out a row whose name does not open).
    package var rows: [EntryRecord]
    /// The id of the last row read, listed or not: the next page starts after it.
    package var lastRead: EntryID?
    /// Whether `limit` rows were read: more may follow.
    package var isFull: Bool

    package init(rows: [EntryRecord], lastRead: EntryID?, isFull: Bool) {
        self.rows = rows
        self.lastRead = lastRead
        self.isFull = isFull
    }
}
