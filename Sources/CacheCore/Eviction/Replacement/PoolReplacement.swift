import CacheModel
import CachePolicy

/// One pool's replacement state: where its victims come from, and what its own requests
/// say about other policies and sizes.
struct PoolReplacement: Sendable {
    /// Where the pool's victim order lives.
    enum Residents: Sendable {
        /// LRU by read on the index's `last_access` order (`user.cache.eviction=lru`, the
        /// default): the index is the state, nothing is kept in memory.
        case index
        /// An in-memory policy not built yet: the evictor's thread builds it from the index
        /// soon (at mount, or when the pool chose it), and what happened since the choice is
        /// replayed over the result, so no read between the two is lost.
        case building(PolicyKind, pending: [ResidentChange])
        /// Built: `policy` holds it.
        case built
    }

    /// A change heard while the policy was being built. Costs are the files' own, in
    /// milliseconds (0 = unknown).
    enum ResidentChange: Sendable {
        case inserted(EntryID, fingerprint: UInt64, size: Int64, costMilliseconds: Int64)
        case accessed(EntryID)
        case resized(EntryID, size: Int64, costMilliseconds: Int64, previousCostMilliseconds: Int64)
        case removed(EntryID, costMilliseconds: Int64)
    }

    var choice: EvictionChoice
    /// `user.cache.goal`: what a miss costs for the pool's policy.
    var goal: CacheGoal
    /// The own costs of the policy's residents that have one, for the pool's mean cost:
    /// counted from the index when the policy is built, then kept by what it hears.
    var knownCosts = KnownCosts()
    var residents: Residents {
        didSet {
            if case .built = residents { return }
            policy = nil
        }
    }
    /// The built policy while `residents` is `.built`, else nil (set through `install`). Kept
    /// out of the enum so a read changes it in place: taking it out of an enum's payload and
    /// putting it back retained and released every array it holds, on each read.
    var policy: AnyReplacementPolicy?
    /// Miniature simulations of the pool's sampled requests: `auto`'s choice and the
    /// what-if curve. Nil for a pool without limits (nothing would ever be evicted).
    var advisor: PolicyAdvisor?
    /// The pool's accesses not yet written, while `user.cache.trace` is on.
    var trace: AccessTraceBuffer?

    init(settings: PoolSettings) {
        trace = settings.recordsTrace ? AccessTraceBuffer() : nil
        choice = settings.eviction
        goal = settings.goal
        residents = settings.eviction == .lru ? .index : .building(settings.activePolicy, pending: [])
        advisor = Self.advisor(for: settings)
    }

    /// How the pool's policy weighs a file now (see ``PolicyCosting``).
    var costing: PolicyCosting { PolicyCosting(goal: goal, meanCostMilliseconds: knownCosts.mean) }

    var activeKind: PolicyKind {
        switch residents {
        case .index: return .lru
        case .building(let kind, _): return kind
        case .built: return policy!.kind
        }
    }

    /// Installs a built policy.
    mutating func install(_ built: AnyReplacementPolicy) {
        policy = built
        residents = .built
    }

    /// A request the pool's simulations and its trace hear (a new file, or a read of one).
    /// `fingerprint` is asked only when the pool simulates other policies or records a trace.
    mutating func noteRequest(fingerprint: () -> UInt64, size: Int64, costMilliseconds: Int64) {
        guard advisor != nil || trace != nil else { return }
        let name = fingerprint()
        let measured = costing.measuredMilliseconds(own: costMilliseconds)
        advisor?.record(fingerprint: name, size: size, cost: measured)
        trace?.append(fingerprint: name, size: size, costMilliseconds: costMilliseconds)
    }

    /// The simulations score each candidate by the pool's goal (missed files, bytes or cost).
    static func advisor(for settings: PoolSettings) -> PolicyAdvisor? {
        guard settings.maxSize > 0 || settings.maxFiles > 0 else { return nil }
        return PolicyAdvisor(current: settings.activePolicy, goal: settings.goal, capacityBytes: settings.maxSize,
                             capacityFiles: settings.maxFiles)
    }

    /// A policy change of the pool (`user.cache.eviction`, a limit): an in-memory policy that
    /// is built carries its residents over in its own victim order; the index's LRU order
    /// is rebuilt from the index.
    mutating func apply(_ settings: PoolSettings) {
        if settings.recordsTrace != (trace != nil) { trace = settings.recordsTrace ? AccessTraceBuffer() : nil }
        choice = settings.eviction
        let kind = settings.activePolicy
        let goalChanged = settings.goal != goal
        goal = settings.goal
        if settings.eviction == .lru {
            residents = .index
        } else if goalChanged, case .built = residents {
            // Every resident's cost changes: rebuilt from the index as at mount, with the
            // files' own costs (a build under way reads them anyway).
            residents = .building(kind, pending: [])
        } else if kind != activeKind || isIndex {
            switchPolicy(to: kind)
        }
        if settings.maxSize > 0 || settings.maxFiles > 0 {
            if advisor == nil {
                advisor = Self.advisor(for: settings)
            } else {
                advisor?.setCapacity(bytes: settings.maxSize, files: settings.maxFiles)
                advisor?.setCurrent(kind)
                advisor?.setGoal(settings.goal)
            }
        } else {
            advisor = nil
        }
    }

    /// Another policy takes over the residents: a built one hands them over in its victim
    /// order, weighed by the goal. The new policy is built from the index instead under
    /// `cost`, whose per-file costs only the index holds, and after GDSF, which keeps no
    /// fingerprints of names (what S3-FIFO's ghosts and TinyLFU's sketch remember).
    mutating func switchPolicy(to kind: PolicyKind) {
        let handsOver = goal != .cost && policy.map { $0.fingerprintsKept } ?? false
        switch residents {
        case .built where handsOver:
            let costing = costing
            install(policy!.converted(to: kind) { _, size in costing.cost(size: size, ownMilliseconds: 0) })
        case .built: residents = .building(kind, pending: [])
        case .building(_, let pending): residents = .building(kind, pending: pending)
        case .index: residents = .building(kind, pending: [])
        }
    }

    private var isIndex: Bool {
        if case .index = residents { return true }
        return false
    }

    /// Replays the changes heard while building over the policy just built from the index's
    /// rows, which may show some of them already (those made before the rows were read): what
    /// the rows showed is not inserted twice (an insert of a resident would count as a read),
    /// and a file's own cost leaves the pool's mean as the rows (`readCosts`, the residents'
    /// own costs) or an earlier replayed change counted it, not as the change says it was, so
    /// a cost set before the read is not counted twice.
    mutating func replay(_ pending: [ResidentChange], readCosts: [EntryID: Int64]) {
        var counted = readCosts
        for change in pending {
            switch change {
            case .inserted(let id, _, _, let cost):
                if policy?.contains(id) == true { continue }
                hear(change)
                counted[id] = cost
            case .resized(let id, let size, let cost, _):
                guard policy?.contains(id) == true else { continue }
                hear(.resized(id, size: size, costMilliseconds: cost, previousCostMilliseconds: counted[id] ?? 0))
                counted[id] = cost
            case .removed(let id, _):
                // Not counted unless the rows or a replayed insert had it.
                hear(.removed(id, costMilliseconds: policy?.contains(id) == true ? counted[id] ?? 0 : 0))
                counted[id] = nil
            case .accessed:
                hear(change)
            }
        }
    }

    mutating func hear(_ change: ResidentChange) {
        switch residents {
        case .index: return
        case .building(let kind, var pending):
            residents = .index
            // Past the bound only the reads' counts would be lost (the index holds which
            // files are cached and their recency): the bound keeps memory in check.
            if case .resized(let id, let size, let cost, _) = change,
               case .resized(id, _, _, let previous)? = pending.last {
                // A file written in many pieces: its last size and cost are what count.
                pending[pending.count - 1] = .resized(id, size: size, costMilliseconds: cost,
                                                      previousCostMilliseconds: previous)
            } else if pending.count < Tunables.pendingPolicyChanges {
                pending.append(change)
            }
            residents = .building(kind, pending: pending)
        case .built:
            switch change {
            case .inserted(let id, let fingerprint, let size, let cost):
                if !policy!.contains(id) { knownCosts.add(cost) }
                let weight = costing.cost(size: size, ownMilliseconds: cost)
                policy!.insert(id, fingerprint: fingerprint, size: size, cost: weight)
            case .accessed(let id): policy!.access(id)
            case .resized(let id, let size, let cost, let previous):
                guard policy!.contains(id) else { break }
                knownCosts.remove(previous)
                knownCosts.add(cost)
                let weight = costing.cost(size: size, ownMilliseconds: cost)
                policy!.resize(id, size: size, cost: weight)
            case .removed(let id, let cost):
                // An evicted file is no longer in the policy, but still counted here.
                knownCosts.remove(cost)
                policy!.remove(id)
            }
        }
    }
}

/// How a pool's policy weighs a file: the goal's cost (``CacheGoal/cost(size:measured:)``) of
/// its size and its miss cost, which is its own (`user.cache.cost`, or its fetch's time),
/// else the mean of the pool's files that have one, else 1.
struct PolicyCosting: Sendable {
    var goal: CacheGoal
    var meanCostMilliseconds: Double?

    func cost(size: Int64, ownMilliseconds: Int64) -> Double {
        goal.cost(size: size, measured: measuredMilliseconds(own: ownMilliseconds))
    }

    /// A file's miss cost: its own, else the pool's mean over files that have one, else 1.
    func measuredMilliseconds(own: Int64) -> Double {
        own > 0 ? Double(own) : meanCostMilliseconds ?? 1
    }
}

/// The own miss costs of a pool's cached files that have one (0 = unknown is not counted),
/// for their mean: counted from the index's rows when the policy is built, then kept by what
/// the pool's policy hears.
struct KnownCosts: Sendable {
    private(set) var totalMilliseconds: Int64 = 0
    private(set) var files: Int64 = 0

    var mean: Double? { files > 0 ? Double(totalMilliseconds) / Double(files) : nil }

    mutating func add(_ milliseconds: Int64) {
        guard milliseconds > 0 else { return }
        totalMilliseconds += milliseconds
        files += 1
    }

    /// Never below nothing: a file removed that was never counted (removed while its
    /// policy was being built from an index that did not hold it yet) takes nothing away.
    mutating func remove(_ milliseconds: Int64) {
        guard milliseconds > 0, files > 0 else { return }
        totalMilliseconds = max(totalMilliseconds - milliseconds, 0)
        files -= 1
    }
}
