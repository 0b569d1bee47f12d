/// A GDSF resident in 32 bytes (a test holds it to that): what its priority needs and where
/// it sits in the heap, nothing else. Its name's fingerprint is not kept (no GDSF decision
/// uses one), its size takes 32 bits unless it does not fit (then the policy's
/// ``NarrowSizes`` holds it) and its miss cost 16 (``MissWeight``).
struct GDSFEntry: KeyedSlot, Sendable {
    var key: CacheKey
    var priority: Double
    /// When the priority was set: the tie-break, oldest first. When the sequences run out
    /// the residents are numbered again in the same order.
    var sequence: UInt32
    var heapPosition: Int32
    /// The size in bytes, or ``NarrowSizes/wideMark`` when it is 4 GiB or more.
    var narrowSize: UInt32
    /// Reads since it entered, the first included; it stops at 65,535, where a file's place
    /// among the others no longer depends on how much more it is read.
    var frequency: UInt16
    var weight: MissWeight
}

/// What a miss of a resident costs, in 16 bits. The goals `files` (1 per file) and `bytes`
/// (the file's size) are kept exactly, as codes, so their decisions are those of a cost kept
/// in full; any other cost (a measured one, in milliseconds) is kept as a half-precision
/// float: three significant digits, up to 65,504 ms (a larger cost counts as that).
struct MissWeight: Sendable, Equatable {
    let rawValue: UInt16

    /// NaN patterns of a `Float16`, which no cost rounds to.
    static let one = MissWeight(rawValue: 0xFFFF)
    static let size = MissWeight(rawValue: 0xFFFE)

    private init(rawValue: UInt16) { self.rawValue = rawValue }

    init(cost: Double, size: Int64) {
        if cost == 1 {
            self = .one
        } else if cost == Double(max(size, 1)) {
            self = .size
        } else {
            let kept = cost.isNaN ? 0 : min(max(cost, 0), Double(Float16.greatestFiniteMagnitude))
            rawValue = Float16(kept).bitPattern
        }
    }

    /// The cost as kept: what a plain transcription of GDSF is given to agree with it.
    func cost(size: Int64) -> Double {
        switch self {
        case .one: return 1
        case .size: return Double(max(size, 1))
        default: return Double(Float16(bitPattern: rawValue))
        }
    }

    /// Cost per byte: what each read adds to the priority.
    func density(size: Int64) -> Double { cost(size: size) / Double(max(size, 1)) }
}
