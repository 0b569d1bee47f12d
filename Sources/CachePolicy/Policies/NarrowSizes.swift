/// Sizes of a policy's slots kept in fewer bits than an `Int64`: each slot stores a narrow
/// value, and the few sizes too large for it are kept here by slot, the narrow value saying
/// so. GDSF's entries keep 32 bits, the lists' nodes 28 (4 GiB and 256 MiB).
struct NarrowSizes: Sendable {
    /// The narrow value that means "kept in the table"; every size below it is stored as is.
    let wideMark: UInt32
    private var wide: [Int32: Int64] = [:]

    init(bits: Int) {
        wideMark = bits >= 32 ? .max : UInt32(1) << UInt32(bits) - 1
    }

    func size(_ narrow: UInt32, at slot: Int32) -> Int64 {
        narrow == wideMark ? wide[slot, default: 0] : Int64(narrow)
    }

    /// The narrow value to store for `size` at `slot`, whose narrow value was `previous` (nil
    /// for a slot just taken).
    mutating func store(_ size: Int64, at slot: Int32, replacing previous: UInt32?) -> UInt32 {
        if size >= 0 && size < Int64(wideMark) {
            if previous == wideMark { wide[slot] = nil }
            return UInt32(size)
        }
        wide[slot] = size
        return wideMark
    }

    /// A slot given up.
    mutating func forget(_ narrow: UInt32, at slot: Int32) {
        if narrow == wideMark { wide[slot] = nil }
    }

    var memoryBytes: Int { MemoryBytes.of(wide) }
}
