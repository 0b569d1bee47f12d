/// The names a listable origin (`file://`) adds to a directory listing: those it has that
/// the pool does not, after the pool's own. Their offsets lie above every ``ListingCursor``
/// offset, as `firstOffset + position in the origin's sorted listing`; they carry no
/// attributes, so READDIRPLUS creates no kernel entry and a `stat` looks the name up (which
/// adds it to the pool, as any lookup does).
package enum OriginListing {
    package static let firstOffset: Int64 = 1 << 62

    package static func items(_ names: [OriginName], after offset: Int64, limit: Int,
                              isCached: ([UInt8]) -> Bool) -> [DirectoryItem] {
        let start = offset >= firstOffset ? Int(offset - firstOffset) : 0
        guard start < names.count else { return [] }
        var items: [DirectoryItem] = []
        for position in start..<names.count where items.count < limit {
            let name = names[position]
            guard !isCached(name.name) else { continue }
            let next = firstOffset + Int64(position) + 1
            items.append(DirectoryItem(name: name.name, id: next, kind: name.kind, nextOffset: next))
        }
        return items
    }
}
