/// The attributes the mount reports for an entry (what `stat` shows).
public struct FileAttributes: Sendable, Equatable {
    public var id: EntryID
    public var kind: EntryKind
    /// Permission bits including set-user-ID, set-group-ID and sticky; no type bits.
    public var permissions: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: Int64
    public var linkCount: UInt32
    /// `st_blocks`: the bytes' allocation in 512-byte units.
    public var blocks: Int64
    /// `st_rdev` of a device node.
    public var device: UInt64
    public var accessTime: Timestamp
    public var modificationTime: Timestamp
    public var changeTime: Timestamp
    /// How long the kernel may keep this name and these attributes at most, in seconds: until
    /// the file expires (`max_age`, a file's `expiration`), so that the kernel asks again then
    /// and learns it is gone; nil for a file that does not expire. Set for the kernel's replies
    /// only (``CacheEngine``), never stored.
    public var expiresIn: Double? = nil
    /// How long the kernel may keep the attributes alone, when shorter: 0 while a read the
    /// kernel serves by itself (`kernel_hits`) would move the file's atime (it was written
    /// since it was last read), so a `stat` asks the daemon, which counts the reader's close
    /// first and answers with the moved atime, as on ext4.
    public var attributesExpireIn: Double? = nil

    /// The attribute timeout for the kernel, within the mount's `limit`.
    public func attributeSeconds(within limit: Double) -> Double {
        min(limit, expiresIn ?? .infinity, attributesExpireIn ?? .infinity)
    }
}

/// Nanoseconds since the Unix epoch: times keep nanoseconds, as on ext4.
public struct Timestamp: Sendable, Equatable, Comparable, Hashable {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public init(seconds: Int64, nanoseconds: Int64) {
        self.nanoseconds = seconds * 1_000_000_000 + nanoseconds
    }

    public var seconds: Int64 { nanoseconds.floorDiv(1_000_000_000) }
    public var subsecondNanoseconds: Int64 { nanoseconds - seconds * 1_000_000_000 }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

extension Int64 {
    func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
