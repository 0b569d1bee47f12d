import Foundation

/// Why cachefs removed a file, or what happened to a pool.
public enum CacheEventKind: String, Sendable, Codable {
    /// Removed to bring a pool within max_size or max_files.
    case evicted
    /// Removed because it was older than its max age.
    case expired
    /// Removed because the store's filesystem had less than min_free free.
    case pressure
    /// Removed by `user.cache.clear`.
    case cleared
    /// Removed by a user (`rm`).
    case deleted
    /// A cached file that alone exceeded its pool's max_size was refused and removed.
    case refused
    /// A file being fetched from the pool's origin failed (after retries) and was dropped.
    case fetchFailed = "fetch_failed"
    /// A fetched file's origin has another version of it (or no longer has it), found when
    /// the file was opened past its pool's `revalidate`: the copy was dropped.
    case changedAtOrigin = "changed_at_origin"
    /// A fetched file past its pool's `revalidate` was served as it is, because its origin
    /// could not be asked (within the pool's `stale_if_error`).
    case servedStale = "served_stale"
    /// A file of the pool's origin was fetched for its readers and not kept (`admit_*`): dropped
    /// once its fetch ended, its bytes kept only for the handles that had it open.
    case notAdmitted = "not_admitted"
    /// A pool went over one of its limits.
    case overLimit = "over_limit"
    /// An `auto` pool switched to the policy its simulations say would have hit most.
    case policyChanged = "policy-changed"
    /// Stored bytes of an encrypted store failed authentication (changed, moved, cut or
    /// torn); reads of them answer EIO. The path is the entry id: such a log names no file.
    case tampered
    /// A pool's shared tier failed (down, slow, refusing, a certificate that does not verify,
    /// a corrupt value): the lookup was a miss or the write stayed local. At most one per
    /// 10 s for the whole mount, its reason counting the failures left out since the last.
    case sharedTierFailed = "shared_tier_failed"
}

/// One line of `STORE/events.jsonl`.
public struct CacheEvent: Sendable, Codable, Equatable {
    public var time: String
    public var event: CacheEventKind
    public var pool: String
    public var path: String
    public var size: Int64
    public var reason: String
    /// How many files an event of a unit (`user.cache.unit`) covers; nil for one file.
    public var files: Int?

    public init(time: Timestamp, event: CacheEventKind, pool: String, path: String, size: Int64, reason: String,
                files: Int? = nil) {
        self.files = files
        self.time = ValueParsing.formatRFC3339(time)
        self.event = event
        self.pool = pool
        self.path = path
        self.size = size
        self.reason = reason
    }

    /// The event as one line of JSON (keys sorted, no newline), the same text `JSONEncoder`
    /// makes with `.sortedKeys` and `.withoutEscapingSlashes`.
    public var jsonLine: String {
        var bytes: [UInt8] = []
        appendJSONLine(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``jsonLine``'s bytes. Written by hand because every removal writes one: the
    /// encoder cost each `rm` through the mount about 8 µs of the daemon's time.
    public func appendJSONLine(to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"event":"#.utf8)
        Self.appendQuoted(event.rawValue, to: &bytes)
        if let files {
            bytes.append(contentsOf: #","files":"#.utf8)
            bytes.append(contentsOf: String(files).utf8)
        }
        bytes.append(contentsOf: #","path":"#.utf8)
        Self.appendQuoted(path, to: &bytes)
        bytes.append(contentsOf: #","pool":"#.utf8)
        Self.appendQuoted(pool, to: &bytes)
        bytes.append(contentsOf: #","reason":"#.utf8)
        Self.appendQuoted(reason, to: &bytes)
        bytes.append(contentsOf: #","size":"#.utf8)
        bytes.append(contentsOf: String(size).utf8)
        bytes.append(contentsOf: #","time":"#.utf8)
        Self.appendQuoted(time, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
    }

    /// A JSON string. Only ASCII bytes need escaping, and UTF-8 never uses them inside a
    /// multi-byte character, so the text is copied byte by byte.
    package static func appendQuoted(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case 0x08: bytes.append(contentsOf: #"\b"#.utf8)
            case 0x0C: bytes.append(contentsOf: #"\f"#.utf8)
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
