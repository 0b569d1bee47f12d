import struct Foundation.Data

/// What an allocation costs in the daemon's memory, for the memory budget: glibc's malloc
/// hands out chunks of the request plus its 8-byte header, in 16-byte steps, 32 at least.
enum HeapSize {
    static func allocation(_ requested: Int) -> Int {
        max(32, (requested + 8 + 15) & ~15)
    }

    /// A `Data` keeps up to 14 bytes inline; a longer one is a storage object and its bytes.
    static func data(_ data: Data?) -> Int {
        guard let data, data.count > StoredName.inlineCapacity else { return 0 }
        return allocation(64) + allocation(data.count)
    }
}
