import CacheModel
import Foundation

/// `user.cache.events?from=N` on the root: the event log from byte N as `cachefs events`
/// shows it, names included, also for an encrypted store whose file holds them sealed. The
/// value is the offset to ask for next on its own line, then whole JSON lines, within
/// `Tunables.attributePageBytes`.
extension Attributes {
    static let eventsQuery = "events?from="

    func eventsPage(query: Substring) throws -> [UInt8] {
        guard let offset = Int64(query), offset >= 0 else {
            throw CacheError.invalidXattrValue(name: CacheAttribute.prefix + Self.eventsQuery, reason: "expected a byte offset")
        }
        let page: (next: Int64, lines: [UInt8])
        do {
            page = try events.page(from: offset, limit: Tunables.attributePageBytes)
        } catch CacheError.notFound {
            page = (0, [])
        }
        return Array("\(page.next)\n".utf8) + page.lines
    }
}
