import struct Foundation.Data

/// One name of an entry: the directory it is in and the name there.
package struct LinkName: Sendable, Hashable {
    package var parent: EntryID
    package var name: Data

    package init(parent: EntryID, name: Data) {
        self.parent = parent
        self.name = name
    }
}
