/// A resident object's identity inside a policy: an entry id in the engine, a trace key's
/// hash in a simulation.
public typealias CacheKey = Int64

/// The replacement policies a pool can run. `auto` is not a policy of its own: it runs one
/// of these, chosen by miniature simulations (see `PolicyAdvisor`).
public enum PolicyKind: String, CaseIterable, Sendable, Codable {
    case lru
    case s3fifo
    case sieve
    case tinylfu
    /// GreedyDual-Size-Frequency weighing each miss by the pool's goal (1, the size, or the cost).
    case gdsf
    /// GreedyDual-Size-Frequency weighing every file's miss alike, whatever the goal (Squid's
    /// `heap GDSF`, libCacheSim's GDSF): it keeps small files read often. Under `files` it is
    /// `gdsf`; under `bytes` it can still save more bytes where the popular files are the
    /// small ones.
    case gdsfFiles = "gdsf-files"

    /// The policies worth comparing for `goal`: all of them, but `gdsf-files` only under
    /// `bytes`. Under `files` it is `gdsf`; under `cost` it ignores the costs the pool asked
    /// to save, and its simulation misled `auto` where one large, costly, popular file was
    /// not sampled (0.18 of the cost lost on the bench's lognormal trace at 5 %), while it
    /// never led `gdsf` there by more than 0.002.
    public static func candidates(for goal: CacheGoal) -> [PolicyKind] {
        goal == .bytes ? allCases : allCases.filter { $0 != .gdsfFiles }
    }
}

/// A replacement policy: which resident object goes next.
///
/// Policies are value types: a copy is a snapshot (the preview and the miniature
/// simulations run copies), and they do no I/O. Every operation is O(1) amortized (GDSF's
/// O(log n)), except that `evict` skips ineligible objects one by one.
///
/// Every object comes with its size: the bytes it takes of the limit that evicts (1 in a
/// cache that counts objects). Queue proportions (S3-FIFO's small queue, W-TinyLFU's window
/// and protected segment) are shares of the resident bytes, which is the capacity once the
/// cache is full, as libCacheSim sizes them; with equal sizes that is a share of the objects.
/// The caller decides how many bytes or files must go and calls `evict` until enough has.
///
/// `cost` is what a miss of the object would cost, in the unit of the cache's goal (see
/// ``CacheGoal/cost(size:measured:)``); only size- and cost-aware policies (GDSF) use it.
public protocol ReplacementPolicy: Sendable {
    init()

    /// Resident objects.
    var count: Int { get }

    /// The sizes of the resident objects, added up.
    var residentBytes: Int64 { get }

    /// The bytes the policy's storage holds: every array's capacity (nodes or entries, free
    /// slots, the `SlotIndex`'s buckets, a heap, a sketch's counters and doorkeeper) times its
    /// element's stride, spare room included, and the elements of its deques and ghost set
    /// (see `MemoryBytes`). O(1), allocates nothing. What `user.cache.policy_memory_bytes`
    /// shows for a pool.
    var memoryBytes: Int { get }

    func contains(_ key: CacheKey) -> Bool

    /// The fingerprint a resident object was inserted with (kept so a policy can be
    /// converted into another with its residents); nil for an unknown key, and for every key
    /// of GDSF, which keeps none (``AnyReplacementPolicy/fingerprintsKept``).
    func fingerprint(of key: CacheKey) -> UInt64?

    /// A resident object's size as the policy knows it; nil for an unknown key.
    func size(of key: CacheKey) -> Int64?

    /// A new object enters the cache (a create, an origin fetch, a file that stops being
    /// persistent), `size` bytes large, whose miss costs `cost`. `fingerprint` names the
    /// object across evictions: a ghost entry or a frequency count is kept under it, so a
    /// name that comes back is recognised although its key is new. Inserting a resident key
    /// counts as an access (its size is not updated: see `resize`).
    mutating func insert(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double)

    /// An object that was resident before this policy existed (a remount, a switch of policy),
    /// given oldest first. It is placed where a long-resident object would be (S3-FIFO: the
    /// main queue with no reads counted; W-TinyLFU: probation), so a rebuild loses only the
    /// frequency history.
    mutating func restore(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double)

    /// Room for `residents` objects in all without growing: a policy built from a known count
    /// of residents allocates once, rather than growing one array after another and leaving
    /// the smaller ones behind as garbage in the allocator. Changes no decision.
    mutating func reserveCapacity(_ residents: Int)

    /// A resident object's size (and so, for the `bytes` goal, its cost) changed: a file
    /// that grew or was truncated. Not an access. Unknown keys are ignored.
    mutating func resize(_ key: CacheKey, size: Int64, cost: Double)

    /// A hit: the object was read. Unknown keys are ignored.
    mutating func access(_ key: CacheKey)

    /// The object left the cache by other means than `evict` (the user removed it, it
    /// expired, it became persistent). Unknown keys are ignored.
    mutating func remove(_ key: CacheKey)

    /// Chooses the next victim and forgets it, as an eviction does (S3-FIFO remembers its
    /// fingerprint as a ghost). Objects for which `isEligible` is false (pinned, being
    /// written) are skipped and stay resident. Nil when no resident object is eligible.
    mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey?
}

extension ReplacementPolicy {
    public mutating func evict() -> CacheKey? { evict(isEligible: { _ in true }) }
}
