/// The path of an entry below the mount ("data/photos/a.jpg"), built by walking parents.
package enum EntryPath {
    package static func of(_ entry: EntryRecord, directory: (EntryID) -> EntryRecord?) -> String {
        var components = [String(decoding: entry.name, as: UTF8.self)]
        var parent = entry.parent
        while let id = parent, id != WellKnownEntry.root, id != 0, components.count < 4096,
              let next = directory(id) {
            components.append(String(decoding: next.name, as: UTF8.self))
            parent = next.parent
        }
        return components.reversed().joined(separator: "/")
    }
}
