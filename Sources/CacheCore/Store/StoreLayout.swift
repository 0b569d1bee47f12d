import CacheModel

/// Where things live inside a store directory. File bytes are named by entry id, never by
/// the user's path, so a rename is one index update and names are never parsed from disk.
public struct StoreLayout: Sendable {
    public let root: String
    /// `objects/XX/` for each fan-out folder, built once: an open of a hit's bytes builds
    /// only the id's digits onto it.
    private let objectPrefixes: [String]

    public init(root: String) {
        let root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        self.root = root
        objectPrefixes = Self.fanOutDirectories.map { root + "/objects/" + $0 + "/" }
    }

    public var indexPath: String { root + "/index.sqlite" }
    public var lockPath: String { root + "/lock" }
    /// What the daemon that holds the lock does (``DaemonRecord``).
    public var daemonRecordPath: String { root + "/daemon.state" }
    public var objectsPath: String { root + "/objects" }
    public var eventsPath: String { root + "/events.jsonl" }
    public var logPath: String { root + "/daemon.log" }
    public var reservePath: String { root + "/reserve" }
    /// Pools' access traces (`user.cache.trace`), one CSV file per pool, rotated.
    public var tracesPath: String { root + "/traces" }

    public func tracePath(ofPool name: String) -> String { tracesPath + "/" + name + ".csv" }

    /// Emptied byte files waiting for reuse (``SpareByteFiles``).
    public var sparesPath: String { root + "/spares" }

    /// 256 fan-out folders keep any one directory of the store small.
    public func objectDirectory(for id: EntryID) -> String {
        String(objectPrefixes[Int(id & 0xff)].dropLast())
    }

    public func objectPath(for id: EntryID) -> String {
        objectPrefixes[Int(id & 0xff)] + String(id)
    }

    static func fanOut(_ id: EntryID) -> String {
        let low = Int(id & 0xff)
        let digits = Array("0123456789abcdef")
        return String([digits[low >> 4], digits[low & 0xf]])
    }

    public static let fanOutDirectories: [String] = (0..<256).map { fanOut(EntryID($0)) }
}
