import CacheModel
import CacheNames
import Foundation
import Glibc
import Logging
import Synchronization

/// The owner of extended attributes: the `user.cache.*` control surface (flags, pool
/// policy, root settings, actions, figures) and ordinary `user.*` attributes, kept in the
/// index. Other namespaces (`security.`, `trusted.`, `system.`) answer ENOTSUP from memory,
/// so `ls -l` asking for SELinux labels and ACLs costs no index read. A change commits
/// first and is applied to memory after, outside the namespace hold.
final class Attributes: Sendable {
    let names: Names
    let files: Files
    let readThrough: ReadThrough
    let eviction: EngineEvictionHost
    let index: IndexDatabase
    let writer: IndexWriter
    let evictor: Evictor
    let counters: CounterBook
    let events: EventLog
    let layout: StoreLayout
    let warnings: StoreWarnings
    let logger: Logger
    /// The last preview listed, so the pages a reader asks for after the first come from
    /// one snapshot.
    let lastPreview = Mutex<PreviewPages?>(nil)

    init(names: Names, files: Files, readThrough: ReadThrough, eviction: EngineEvictionHost, writer: IndexWriter,
         evictor: Evictor, counters: CounterBook, events: EventLog, layout: StoreLayout, warnings: StoreWarnings,
         logger: Logger) {
        self.names = names
        self.files = files
        self.readThrough = readThrough
        self.eviction = eviction
        self.index = writer.index
        self.writer = writer
        self.evictor = evictor
        self.counters = counters
        self.events = events
        self.layout = layout
        self.warnings = warnings
        self.logger = logger
    }

    /// The corresponding FUSE operation is `GETXATTR`.
    func getxattr(_ id: EntryID, name: String) throws -> [UInt8] {
        guard name.hasPrefix("user.") else { throw CacheError.unsupportedNamespace }
        let current = try names.recordAsOfNow(id)
        guard name.hasPrefix(CacheAttribute.prefix) else {
            guard let value = try index.xattr(id, name: Data(name.utf8)) else { throw CacheError.noAttribute }
            return Array(value)
        }
        // Hits the kernel served by itself (`kernel_hits`) are counted first, so figures read
        // after a read show it.
        eviction.kernelCloses.catchUp()
        let place = place(of: current)
        let key = name.dropFirst(CacheAttribute.prefix.count)
        if place == .root, key.hasPrefix(Self.eventsQuery) {
            return try eventsPage(query: key.dropFirst(Self.eventsQuery.count))
        }
        if place == .pool, key.hasPrefix(CacheAttribute.preview.rawValue + "?") {
            return try previewValue(of: current, query: key.dropFirst(CacheAttribute.preview.rawValue.count + 1))
        }
        guard let attribute = CacheAttribute(rawValue: String(name.dropFirst(CacheAttribute.prefix.count))),
              CacheAttribute.readable(at: place).contains(attribute) else { throw CacheError.noAttribute }
        return Array(try cacheAttributeValue(attribute, of: current).utf8)
    }

    /// The corresponding FUSE operation is `LISTXATTR`.
    func listxattr(_ id: EntryID) throws -> [String] {
        let current = try names.record(id)
        let cacheNames = CacheAttribute.readable(at: place(of: current)).map(\.fullName)
        // The xattr table also holds the origin's version under its user.cache.* names.
        let userNames = try index.xattrNames(id).map { String(decoding: $0, as: UTF8.self) }
            .filter { !$0.hasPrefix(CacheAttribute.prefix) }
        return cacheNames + userNames
    }

    /// The corresponding FUSE operation is `SETXATTR`. A bad value changes nothing, answers
    /// EINVAL and is logged with the reason.
    func setxattr(_ id: EntryID, name: String, value: [UInt8], flags: Int32) throws {
        guard name.hasPrefix("user.") else { throw CacheError.unsupportedNamespace }
        guard name.hasPrefix(CacheAttribute.prefix) else {
            _ = try names.record(id)
            let (key, bytes) = (Data(name.utf8), Data(value))
            try writer.perform { [index] db in
                try index.setXattr(id, name: key, value: bytes, mustExist: flags & XattrFlags.replace != 0,
                                        mustNotExist: flags & XattrFlags.create != 0, in: db)
            }
            try touchChangeTime(id)
            return
        }
        do {
            try setCacheAttribute(id, name: name, text: String(decoding: value, as: UTF8.self))
        } catch let error as CacheError {
            switch error {
            case .invalidXattrValue(let attribute, let reason):
                // The value (an origin's URL, say) is sealed in an encrypted store's log; a
                // shared tier's URL refused for holding a password never shows it.
                var shown = String(decoding: value.prefix(64), as: UTF8.self)
                if attribute == CacheAttribute.shared.fullName { shown = SharedTierURL.withoutCredentials(shown) }
                logger.warning("refused \(attribute)=\(events.shown(shown)): \(events.shown(reason))")
            case .unknownCacheAttribute(let attribute):
                logger.warning("refused unknown attribute \(attribute)")
            case .readOnlyAttribute(let attribute):
                logger.warning("refused write to read-only attribute \(attribute)")
            default: break
            }
            throw error
        }
    }

    /// The corresponding FUSE operation is `REMOVEXATTR`; on a `user.cache.*` setting it
    /// restores the default.
    func removexattr(_ id: EntryID, name: String) throws {
        guard name.hasPrefix("user.") else { throw CacheError.unsupportedNamespace }
        guard name.hasPrefix(CacheAttribute.prefix) else {
            _ = try names.record(id)
            let key = Data(name.utf8)
            try writer.perform { [index] db in try index.removeXattr(id, name: key, in: db) }
            try touchChangeTime(id)
            return
        }
        let current = try names.record(id)
        guard let attribute = CacheAttribute(rawValue: String(name.dropFirst(CacheAttribute.prefix.count))) else {
            throw CacheError.unknownCacheAttribute(name)
        }
        let defaults: [CacheAttribute: String] = [.persistent: "0", .pinned: "0", .expiration: "0", .unit: "0",
                                                  .cost: "0", .minFree: MinFree.defaultValue.description]
        if let text = defaults[attribute] {
            try setCacheAttribute(id, name: name, text: text)
        } else if place(of: current) == .pool, CacheAttribute.writable(at: .pool).contains(attribute) {
            try resetPoolSettings(current, attribute: attribute)
        } else {
            throw CacheError.readOnlyAttribute(name)
        }
    }
}

/// What `user.cache.state` reports for a file.
public enum FileState: String, Sendable {
    /// `origin`: shown by its pool's origin, its fetch not started (nothing stored or counted).
    case cached, pinned, persistent, pending, origin
}

/// setxattr(2) flags (from <sys/xattr.h>, which Glibc's module does not export).
public enum XattrFlags {
    public static let create: Int32 = 1
    public static let replace: Int32 = 2
}
