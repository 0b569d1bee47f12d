/// A stable 64-bit hash of a name (FNV-1a, then splitmix64's finalizer so that nearby names
/// spread over all bits): the same in every process, unlike `Hasher`, so sampled keys and
/// traces mean the same across mounts.
public enum Fingerprint {
    public static func of<Bytes: Sequence>(_ bytes: Bytes) -> UInt64 where Bytes.Element == UInt8 {
        mix(fold(bytes, into: 0xcbf2_9ce4_8422_2325))
    }

    /// A file's name in its directory.
    public static func of(parent: Int64, name: some Collection<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var parentBits = UInt64(bitPattern: parent)
        for _ in 0..<8 {
            hash = (hash ^ (parentBits & 0xff)) &* 0x100_0000_01b3
            parentBits >>= 8
        }
        // Through the bytes' buffer when they have one (a `Data` does): iterating a `Data`
        // byte by byte showed in the profile of a hit, which fingerprints the file's name.
        if let folded = name.withContiguousStorageIfAvailable({ fold($0, into: hash) }) { return mix(folded) }
        return mix(fold(name, into: hash))
    }

    private static func fold(_ bytes: some Sequence<UInt8>, into start: UInt64) -> UInt64 {
        var hash = start
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    static func mix(_ value: UInt64) -> UInt64 {
        var hash = value
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        return hash ^ (hash >> 31)
    }
}
