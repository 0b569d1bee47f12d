import CacheModel
import CacheNames
import CachePolicy
import Synchronization

/// Every pool's replacement policy, and the requests that feed them. Request threads tell
/// it of inserts, accesses and removals (from inside the namespace hold that made the
/// change, so the order it hears is the namespace's); the evictor asks it for victims.
///
/// Where its two locks stand in the lock order: docs/ARCHITECTURE.md, "Threads and locks".
/// No I/O happens under either of them: a build reads the index first and installs the
/// result after.
final class ReplacementTable: Sendable {
    /// One pool's state behind its own lock, so an eviction in one pool never holds up the
    /// reads of another.
    final class Pool: Sendable {
        let state: Mutex<PoolReplacement>
        init(_ replacement: PoolReplacement) { state = Mutex(replacement) }
    }

    private let pools: Mutex<[EntryID: Pool]>

    init(settings: [EntryID: PoolSettings]) {
        pools = Mutex(settings.mapValues { Pool(PoolReplacement(settings: $0)) })
    }

    private func pool(_ id: EntryID) -> Pool? {
        pools.withLock { $0[id] }
    }

    /// A pool was created, or its policy changed.
    func apply(_ settings: PoolSettings, to pool: EntryID) {
        let existing = pools.withLock { pools -> Pool? in
            guard let existing = pools[pool] else {
                pools[pool] = Pool(PoolReplacement(settings: settings))
                return nil
            }
            return existing
        }
        existing?.state.withLock { $0.apply(settings) }
    }

    func removePool(_ pool: EntryID) {
        _ = pools.withLock { $0.removeValue(forKey: pool) }
    }

    // MARK: - What requests tell it

    /// A new cached file (a create, a fetch, a file that stops being persistent). `size` may
    /// be an estimate (a create's file is empty yet).
    func inserted(_ id: EntryID, fingerprint: UInt64, size: Int64, costMilliseconds: Int64, pool: EntryID) {
        self.pool(pool)?.state.withLock { state in
            state.hear(.inserted(id, fingerprint: fingerprint, size: size, costMilliseconds: costMilliseconds))
            state.noteRequest(fingerprint: { fingerprint }, size: size, costMilliseconds: costMilliseconds)
        }
    }

    /// An open for reading of a cached file: an access for the policy.
    func accessed(_ id: EntryID, fingerprint: () -> UInt64, size: Int64, costMilliseconds: Int64, pool: EntryID) {
        self.pool(pool)?.state.withLock { state in
            state.hear(.accessed(id))
            state.noteRequest(fingerprint: fingerprint, size: size, costMilliseconds: costMilliseconds)
        }
    }

    /// A cached file left the pool by other means than the policy's choice (removed by a
    /// user, expired, made persistent).
    func removed(_ id: EntryID, costMilliseconds: Int64, pool: EntryID) {
        self.pool(pool)?.state.withLock { $0.hear(.removed(id, costMilliseconds: costMilliseconds)) }
    }

    /// A cached file grew, shrank or was given another cost: not an access.
    func resized(_ id: EntryID, size: Int64, costMilliseconds: Int64, previousCostMilliseconds: Int64,
                 pool: EntryID) {
        self.pool(pool)?.state.withLock {
            $0.hear(.resized(id, size: size, costMilliseconds: costMilliseconds,
                             previousCostMilliseconds: previousCostMilliseconds))
        }
    }

    /// How the pool's policy weighs a file now (its goal, its mean cost); files goal for an
    /// unknown pool.
    func costing(of pool: EntryID) -> PolicyCosting {
        self.pool(pool)?.state.withLock { $0.costing } ?? PolicyCosting(goal: .files, meanCostMilliseconds: nil)
    }

    // MARK: - What the evictor asks

    /// Whether the pool's victims come from the index's LRU order rather than from memory.
    func usesIndex(_ pool: EntryID) -> Bool {
        guard let pool = self.pool(pool) else { return true }
        return pool.state.withLock { state in
            if case .index = state.residents { return true }
            return false
        }
    }

    /// The kind the pool's in-memory policy waits to be built as, or nil (built, or on the
    /// index). Only the evictor's thread builds, one pass at a time.
    func kindToBuild(of pool: EntryID) -> PolicyKind? {
        self.pool(pool)?.state.withLock { state -> PolicyKind? in
            guard case .building(let kind, _) = state.residents else { return nil }
            return kind
        }
    }

    /// Pools whose in-memory policy waits to be built.
    func poolsToBuild() -> [EntryID] {
        let all = pools.withLock { Array($0) }
        return all.compactMap { id, pool in
            pool.state.withLock { state in
                if case .building = state.residents { return id }
                return nil
            }
        }
    }

    /// Installs a policy built from the index's cached files, oldest access first, and
    /// replays what happened since the build began.
    func finishBuild(of pool: EntryID,
                     residents: [(id: EntryID, fingerprint: UInt64, size: Int64, costMilliseconds: Int64)]) {
        self.pool(pool)?.state.withLock { state in
            guard case .building(let kind, let pending) = state.residents else { return }
            var policy = AnyReplacementPolicy(kind: kind, goal: state.goal)
            policy.reserveCapacity(AnyReplacementPolicy.reservation(forResidents: residents.count))
            state.knownCosts = KnownCosts()
            for resident in residents { state.knownCosts.add(resident.costMilliseconds) }
            let costing = state.costing
            for resident in residents {
                policy.restore(resident.id, fingerprint: resident.fingerprint, size: resident.size,
                               cost: costing.cost(size: resident.size, ownMilliseconds: resident.costMilliseconds))
            }
            state.install(policy)
            var ownCosts: [EntryID: Int64] = [:]
            for resident in residents where resident.costMilliseconds > 0 {
                ownCosts[resident.id] = resident.costMilliseconds
            }
            state.replay(pending, readCosts: ownCosts)
        }
    }

    /// Runs `body` on the pool's built policy (the evictor choosing victims, a preview on a
    /// copy). Nil when the pool has no built in-memory policy.
    func withPolicy<Result>(of pool: EntryID, _ body: (inout AnyReplacementPolicy) -> Result) -> Result? {
        self.pool(pool)?.state.withLock { state -> Result? in
            guard case .built = state.residents else { return nil }
            return body(&state.policy!)
        }
    }

    /// Every recording pool's gathered accesses, taken for the evictor's thread to write.
    func takeTraces() -> [(pool: EntryID, bytes: [UInt8], dropped: Int)] {
        let all = pools.withLock { Array($0) }
        return all.compactMap { id, pool in
            pool.state.withLock { state in
                guard let taken = state.trace?.take(), !taken.bytes.isEmpty || taken.dropped > 0 else { return nil }
                return (id, taken.bytes, taken.dropped)
            }
        }
    }

    // MARK: - auto

    /// A switch `auto` made, with the simulated hit ratios behind it.
    struct Switch: Sendable {
        var pool: EntryID
        var from: PolicyKind
        var to: PolicyKind
        var goal: CacheGoal
        var ratios: [PolicyKind: Double]
        var basis: PolicyRecommendation.Basis
    }

    /// For every `auto` pool whose simulations recommend another policy: switches it (its
    /// residents carried over in the old policy's victim order) and says so.
    func switchAutoPools() -> [Switch] {
        let all = pools.withLock { Array($0) }
        var switches: [Switch] = []
        for (id, pool) in all {
            pool.state.withLock { state in
                guard state.choice == .auto, var advisor = state.advisor else { return }
                defer { state.advisor = advisor }
                guard let recommended = advisor.recommendation(), recommended.kind != state.activeKind else { return }
                let from = state.activeKind
                state.switchPolicy(to: recommended.kind)
                advisor.setCurrent(recommended.kind)
                switches.append(Switch(pool: id, from: from, to: recommended.kind, goal: recommended.goal,
                                      ratios: recommended.ratios, basis: recommended.basis))
            }
        }
        return switches
    }

    // MARK: - Figures

    func report(of pool: EntryID) -> ReplacementReport? {
        self.pool(pool)?.state.withLock { state in
            ReplacementReport(choice: state.choice, active: state.activeKind, goal: state.goal,
                              simulatedHitRatios: state.advisor?.hitRatios() ?? [:],
                              curve: state.advisor?.curve().map {
                                  ReplacementReport.CurvePoint(multiplier: $0.multiplier, sizeBytes: $0.sizeBytes,
                                                               sizeFiles: $0.sizeFiles, hitRatio: $0.hitRatio)
                              } ?? [],
                              sampledRequests: state.advisor?.sampledRequests ?? 0,
                              policyMemoryBytes: state.policy?.memoryBytes ?? 0,
                              simulationMemoryBytes: state.advisor?.memoryBytes ?? 0)
        }
    }
}

/// What a pool's replacement shows: `user.cache.eviction`, the curve.
public struct ReplacementReport: Sendable {
    public struct CurvePoint: Sendable {
        public var multiplier: Double
        public var sizeBytes: Int64
        public var sizeFiles: Int64
        public var hitRatio: Double
    }

    public var choice: EvictionChoice
    public var active: PolicyKind
    public var goal: CacheGoal
    public var simulatedHitRatios: [PolicyKind: Double]
    public var curve: [CurvePoint]
    public var sampledRequests: Int
    /// The running in-memory policy's `memoryBytes`: 0 on the index (`lru`) or while it is
    /// being built.
    public var policyMemoryBytes: Int
    /// The miniature simulations' (`PolicyAdvisor.memoryBytes`); 0 for a pool without limits.
    public var simulationMemoryBytes: Int
}

extension ReplacementTable: ReplacementNotes {}
