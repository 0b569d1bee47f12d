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
        case built(AnyReplacementPolicy)
    }

    /// A change heard while the policy was being built.
    enum ResidentChange: Sendable {
        case inserted(EntryID, fingerprint: UInt64, size: Int64)
        case accessed(EntryID)
        case removed(EntryID)
    }

    var choice: EvictionChoice
    var residents: Residents
    /// Miniature simulations of the pool's sampled requests: `auto`'s choice and the
    /// what-if curve. Nil for a pool without limits (nothing would ever be evicted).
    var advisor: PolicyAdvisor?
    /// The pool's accesses not yet written, while `user.cache.trace` is on.
    var trace: AccessTraceBuffer?

    init(settings: PoolSettings) {
        trace = settings.recordsTrace ? AccessTraceBuffer() : nil
        choice = settings.eviction
        residents = settings.eviction == .lru ? .index : .building(settings.activePolicy, pending: [])
        advisor = Self.advisor(for: settings)
    }

    var activeKind: PolicyKind {
        switch residents {
        case .index: return .lru
        case .building(let kind, _): return kind
        case .built(let policy): return policy.kind
        }
    }

    static func advisor(for settings: PoolSettings) -> PolicyAdvisor? {
        guard settings.maxSize > 0 || settings.maxFiles > 0 else { return nil }
        return PolicyAdvisor(current: settings.activePolicy, capacityBytes: settings.maxSize,
                             capacityFiles: settings.maxFiles)
    }

    /// A policy change of the pool (`user.cache.eviction`, a limit): an in-memory policy that
    /// is built carries its residents over in its own victim order; the index's LRU order
    /// is rebuilt from the index.
    mutating func apply(_ settings: PoolSettings) {
        if settings.recordsTrace != (trace != nil) { trace = settings.recordsTrace ? AccessTraceBuffer() : nil }
        choice = settings.eviction
        let kind = settings.activePolicy
        if settings.eviction == .lru {
            residents = .index
        } else if kind != activeKind || isIndex {
            switch residents {
            case .built(let current): residents = .built(current.converted(to: kind))
            case .building(_, let pending): residents = .building(kind, pending: pending)
            case .index: residents = .building(kind, pending: [])
            }
        }
        if settings.maxSize > 0 || settings.maxFiles > 0 {
            if advisor == nil {
                advisor = Self.advisor(for: settings)
            } else {
                advisor?.setCapacity(bytes: settings.maxSize, files: settings.maxFiles)
                advisor?.setCurrent(kind)
            }
        } else {
            advisor = nil
        }
    }

    private var isIndex: Bool {
        if case .index = residents { return true }
        return false
    }

    /// Replays a change heard while building: what the index already showed is not inserted
    /// twice (an insert of a resident would count as a read).
    mutating func replay(_ change: ResidentChange) {
        if case .inserted(let id, _, _) = change, case .built(let policy) = residents, policy.contains(id) { return }
        hear(change)
    }

    mutating func hear(_ change: ResidentChange) {
        switch residents {
        case .index: return
        case .building(let kind, var pending):
            residents = .index
            // Past the bound only the reads' counts would be lost (the index holds which
            // files are cached and their recency): the bound keeps memory in check.
            if pending.count < Tunables.pendingPolicyChanges { pending.append(change) }
            residents = .building(kind, pending: pending)
        case .built(var policy):
            residents = .index
            switch change {
            case .inserted(let id, let fingerprint, let size): policy.insert(id, fingerprint: fingerprint, size: size, cost: 1)
            case .accessed(let id): policy.access(id)
            case .removed(let id): policy.remove(id)
            }
            residents = .built(policy)
        }
    }
}
