import DequeModule

/// W-TinyLFU (Einziger et al., ACM TOS 2017; Caffeine's policy): new objects enter a small
/// LRU window (1 % of the resident bytes); main is a segmented LRU, probation (20 %) and
/// protected (80 % of main's bytes). When the window is over its share, its least recent object competes with
/// probation's: the one read less often recently (by a `FrequencySketch` of the names'
/// requests, which remembers names no longer cached) is evicted, the other stays in
/// probation. A read in probation promotes to protected; protected's overflow goes back to
/// probation. One-time requests rarely displace objects that are read again. Where sizes
/// differ, a candidate must be read more often than all the objects its bytes would displace
/// together (``admits(_:over:isEligible:)``).
///
/// Candidates are judged only while they are recent: at most a window's worth of bytes of
/// them waits. Older ones join probation as established objects, as in Caffeine, which judges
/// a candidate in the maintenance that moves it out of the window and otherwise keeps it (the
/// cache had room for it). Without that bound, the objects that filled a cold cache stayed
/// candidates for good: each eviction judged one that left the window a cache-full earlier
/// against the few established objects, and main turned into a FIFO (0.403 against
/// libCacheSim's 0.684 on a loop beside a Zipf; see docs/eviction-policies.md).
///
/// A newcomer larger than the window's share skips the window and waits as a candidate at
/// once (libCacheSim's W-TinyLFU does not cache it at all). Through the window it pushed out
/// every recent object there, each to be judged by reads it had no time to get: where most
/// requests are first requests and sizes reach megabytes (the bench's `cdn-first`), that left
/// `tinylfu` at 0.268 of requests hit in a pool of 1 % where libCacheSim's W-TinyLFU hits
/// 0.299 (now 0.289; see docs/eviction-policies.md).
///
/// The three segments share one `SegmentedList`: a read in probation or protected relinks
/// the object and a promotion or demotion keeps its slot, where three lists of their own
/// cost up to three index probes per read and an index removal and insertion per move.
public struct WTinyLFUPolicy: ReplacementPolicy {
    /// The window's share of the resident bytes (Caffeine's initial 1 % of the cache).
    static let windowShare = 0.01
    /// Protected's share of main's bytes (80 %; probation holds the rest).
    static let protectedShare = 0.80
    /// Marks a probation object that came from the window and has not competed yet.
    static let candidateMark: UInt8 = 1
    /// The most victims weighed against one candidate: a bound on the work of one eviction.
    /// The sketch's counts are at least 1 for most residents, so a candidate (at most 16) is
    /// refused well before it, unless it is read more often than that many victims together.
    static let admissionVictimLimit = 64

    private static let window = SegmentedList.Segment.first
    private static let probation = SegmentedList.Segment.second
    private static let protected = SegmentedList.Segment.third

    private var lists = SegmentedList()
    private var sketch = FrequencySketch()
    /// Objects moved from the window to probation and not yet judged against its victim.
    private var candidates: Deque<CacheKey> = []
    /// The bytes of the probation objects still marked as candidates.
    private var candidateBytes: Int64 = 0
    /// Under the `bytes` goal a candidate read too often for the sketch to count further is
    /// weighed per byte (see ``admits(_:over:isEligible:)``).
    private let weighsSaturatedCandidatesPerByte: Bool

    public init() { self.init(goal: .files) }

    public init(goal: CacheGoal) {
        weighsSaturatedCandidatesPerByte = goal == .bytes
    }

    public var count: Int { lists.count }

    public var residentBytes: Int64 { lists.bytes }

    public var memoryBytes: Int { lists.memoryBytes + sketch.memoryBytes + MemoryBytes.of(candidates) }

    public func contains(_ key: CacheKey) -> Bool { lists.slot(of: key) != nil }

    public func fingerprint(of key: CacheKey) -> UInt64? { lists.slot(of: key).map { lists[$0].fingerprint } }

    public func size(of key: CacheKey) -> Int64? { lists.slot(of: key).map { lists[$0].size } }

    public mutating func insert(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        if contains(key) {
            access(key)
            return
        }
        sketch.ensureWidth(for: count + 1)
        sketch.increment(ResidentList.canonical(fingerprint))
        let windowTarget = max(1, Int64(Double(residentBytes + size) * Self.windowShare))
        if size > windowTarget {
            // Larger than the window's share: it waits as a candidate at once, rather than
            // push every recent object out of the window (see the type's comment).
            let slot = lists.appendNewest(key, fingerprint: fingerprint, size: size, mark: Self.candidateMark,
                                          to: Self.probation)
            candidates.append(key)
            candidateBytes += lists[slot].size
        } else {
            lists.appendNewest(key, fingerprint: fingerprint, size: size, to: Self.window)
        }
        // The window's overflow moves to probation as candidates (marked), as Caffeine's
        // maintenance after a write does; they compete when something must be evicted.
        while lists[ends: Self.window].bytes > windowTarget {
            let moved = lists[ends: Self.window].oldest
            lists.move(moved, to: Self.probation, mark: Self.candidateMark)
            candidates.append(lists[moved].key)
            candidateBytes += lists[moved].size
        }
        // The newest one always waits to be judged, however large; if it is larger than the
        // window's share its bytes do not count against it, or it would send every waiting
        // candidate to main unjudged. Keys no longer waiting (read since, removed) leave the
        // front of the queue too.
        let largeNewestBytes = candidates.last.flatMap { lists.slot(of: $0) }
            .map { isCandidate($0) && lists[$0].size > windowTarget ? lists[$0].size : 0 } ?? 0
        while let oldest = candidates.first, candidates.count > 1,
              candidateBytes - largeNewestBytes > windowTarget || !isCandidate(oldest) {
            establish(candidates.removeFirst())
        }
    }

    private func isCandidate(_ slot: Int32) -> Bool {
        lists[slot].segment == Self.probation && lists[slot].mark == Self.candidateMark
    }

    private func isCandidate(_ key: CacheKey) -> Bool {
        lists.slot(of: key).map { isCandidate($0) } ?? false
    }

    /// A candidate becomes an established probation object (unknown or judged keys are ignored).
    private mutating func establish(_ key: CacheKey) {
        guard let slot = lists.slot(of: key), isCandidate(slot) else { return }
        lists.setMark(0, at: slot)
        candidateBytes -= lists[slot].size
    }

    /// An object leaves probation for another segment, or for good when `segment` is nil;
    /// a candidate's bytes no longer wait.
    private mutating func leaveProbation(_ slot: Int32, to segment: SegmentedList.Segment?) -> SegmentedList.Node {
        let node = lists[slot]
        if node.mark == Self.candidateMark { candidateBytes -= node.size }
        if let segment {
            lists.move(slot, to: segment, mark: 0)
        } else {
            lists.remove(slot)
        }
        return node
    }

    public mutating func restore(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        guard !contains(key) else { return }
        sketch.ensureWidth(for: count + 1)
        // Counted once, as its insert was: a newcomer must then be read more than it to
        // displace it, rather than flush a whole restored cache on a cold sketch.
        sketch.increment(ResidentList.canonical(fingerprint))
        lists.appendNewest(key, fingerprint: fingerprint, size: size, to: Self.probation)
    }

    /// Restored objects all go to probation. The sketch grows as before (its width decides
    /// what it remembers).
    public mutating func reserveCapacity(_ residents: Int) { lists.reserveCapacity(residents) }

    public mutating func resize(_ key: CacheKey, size: Int64, cost: Double) {
        guard let slot = lists.slot(of: key) else { return }
        if isCandidate(slot) { candidateBytes += size - lists[slot].size }
        lists.resize(slot, to: size)
    }

    public mutating func access(_ key: CacheKey) {
        guard let slot = lists.slot(of: key) else { return }
        sketch.increment(lists[slot].fingerprint)
        guard lists[slot].segment == Self.probation else {
            lists.moveToNewest(slot)
            return
        }
        _ = leaveProbation(slot, to: Self.protected)
        let protectedLimit = max(1, Int64(Double(lists[ends: Self.probation].bytes + lists[ends: Self.protected].bytes)
                                            * Self.protectedShare))
        // The object just promoted stays, however large.
        while lists[ends: Self.protected].count > 1 && lists[ends: Self.protected].bytes > protectedLimit {
            lists.move(lists[ends: Self.protected].oldest, to: Self.probation, mark: 0)
        }
    }

    public mutating func remove(_ key: CacheKey) {
        guard let slot = lists.slot(of: key) else { return }
        if lists[slot].segment == Self.probation {
            _ = leaveProbation(slot, to: nil)
        } else {
            lists.remove(slot)
        }
    }

    /// As Caffeine does when the cache is full: the oldest candidate from the window and
    /// probation's least recent established object compete, and the one requested less
    /// often is the victim (a tie keeps the established one). When main holds no established
    /// object to compete with, the waiting candidates all become established first.
    public mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        while let candidate = candidates.first {
            guard let candidateSlot = lists.slot(of: candidate), isCandidate(candidateSlot), isEligible(candidate) else {
                // Read since (now protected), removed, judged, or not to be evicted now.
                establish(candidates.removeFirst())
                continue
            }
            var victimSlot = oldestEligible(in: Self.probation) { slot in
                isEligible(lists[slot].key) && lists[slot].mark == 0
            }
            if victimSlot == nil, let demoted = oldestEligible(in: Self.protected, where: { isEligible(lists[$0].key) }) {
                lists.move(demoted, to: Self.probation, mark: 0)
                victimSlot = demoted
            }
            guard let victimSlot else {
                establishCandidates()
                break
            }
            establish(candidates.removeFirst())
            if admits(candidateSlot, over: victimSlot, isEligible: isEligible) {
                return leaveProbation(victimSlot, to: nil).key
            }
            return leaveProbation(candidateSlot, to: nil).key
        }
        return evictFromMain(isEligible: isEligible)
    }

    /// Whether a candidate is read more often than all it would displace together: the
    /// established probation objects from `victim` on, oldest first, until their bytes cover
    /// the candidate's (the "aggregated victims" admission of Einziger et al., "Lightweight
    /// Robust Size Aware Cache Management", ACM TOS 2022). Where sizes are alike that is the
    /// one victim of W-TinyLFU; a large file read no more often than the small files it would
    /// push out stays out. A tie keeps the established objects.
    ///
    /// Where a miss costs its bytes, a candidate whose count is saturated (read more often
    /// than the sketch counts) is weighed per byte instead: it enters if it is read more often
    /// than the victims are on average over the bytes it takes. The sum shut out for good a
    /// file of a tenth of the cache, however often it was read: its count stops at 16, which
    /// the counts of 16 small files reach. Such a file stayed only if a cold fill had let it
    /// in, so a switch into `tinylfu` lost it, and 0.06 of the bytes saved for the rest of a
    /// run (docs/eviction-policies.md).
    private func admits(_ candidate: Int32, over victim: Int32, isEligible: (CacheKey) -> Bool) -> Bool {
        let frequency = sketch.estimate(lists[candidate].fingerprint)
        let candidateSize = lists[candidate].size
        let saturated = weighsSaturatedCandidatesPerByte && frequency >= FrequencySketch.maxEstimate
        var uncoveredBytes = candidateSize
        var victimsFrequency = 0
        var victimsWeight = 0.0
        var weighed = 0
        var slot = victim
        while slot != SegmentedList.none && weighed < Self.admissionVictimLimit {
            let node = lists[slot]
            if slot == victim || (node.mark == 0 && isEligible(node.key)) {
                if saturated {
                    victimsWeight += Double(sketch.estimate(node.fingerprint)) * Double(min(node.size, uncoveredBytes))
                    if victimsWeight >= Double(frequency) * Double(candidateSize) { return false }
                } else {
                    victimsFrequency += sketch.estimate(node.fingerprint)
                    if victimsFrequency >= frequency { return false }
                }
                uncoveredBytes -= node.size
                if uncoveredBytes <= 0 { return true }
                weighed += 1
            }
            slot = node.next
        }
        return true
    }

    private mutating func establishCandidates() {
        while let key = candidates.popFirst() { establish(key) }
    }

    private mutating func evictFromMain(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        if let slot = oldestEligible(in: Self.probation, where: { isEligible(lists[$0].key) }) {
            return leaveProbation(slot, to: nil).key
        }
        if let slot = oldestEligible(in: Self.protected, where: { isEligible(lists[$0].key) }) {
            return lists.remove(slot).key
        }
        if let slot = oldestEligible(in: Self.window, where: { isEligible(lists[$0].key) }) {
            return lists.remove(slot).key
        }
        return nil
    }

    /// The least recent slot of a segment that `isEligible` accepts; the others keep their place.
    private func oldestEligible(in segment: SegmentedList.Segment, where isEligible: (Int32) -> Bool) -> Int32? {
        var slot = lists[ends: segment].oldest
        while slot != SegmentedList.none {
            if isEligible(slot) { return slot }
            slot = lists[slot].next
        }
        return nil
    }
}
