@testable import CachePolicy
import Testing

/// W-TinyLFU on one `SegmentedList` against the three-list implementation it replaced (kept
/// here as the reference, with the size-aware admission and waiting rule added): random
/// inserts, restores, reads, resizes, removals, pins and evictions of objects of mixed sizes
/// must give the same victims and residents.
@Suite struct WTinyLFUModelTests {
    /// Under `bytes` (each miss costs its size) a few keys are read far more often than the
    /// rest, so candidates whose counts saturate are weighed per byte.
    @Test(arguments: [CacheGoal.files, .bytes], 1...40 as ClosedRange<UInt64>)
    func tinylfuAgreesWithItsThreeListReference(goal: CacheGoal, seed: UInt64) {
        var policy = WTinyLFUPolicy(goal: goal)
        var reference = ThreeListWTinyLFU(goal: goal)
        var generator = SeededGenerator(seed: seed)
        var pinned: Set<CacheKey> = []
        let sizes: [Int64] = [1, 10, 100, 1000]
        for step in 0..<2_000 {
            let hot = goal == .bytes && Bool.random(using: &generator)
            let key = CacheKey.random(in: 0..<(hot ? 4 : 60), using: &generator)
            let size = sizes.randomElement(using: &generator)!
            let cost = goal.cost(size: size, measured: 0)
            let fingerprint = Fingerprint.mix(UInt64(key))
            switch Int.random(in: 0..<14, using: &generator) {
            case 0...3:
                policy.insert(key, fingerprint: fingerprint, size: size, cost: cost)
                reference.insert(key, fingerprint: fingerprint, size: size, cost: cost)
            case 4:
                policy.restore(key, fingerprint: fingerprint, size: size, cost: cost)
                reference.restore(key, fingerprint: fingerprint, size: size, cost: cost)
            case 5...7:
                policy.access(key)
                reference.access(key)
            case 8:
                policy.remove(key)
                reference.remove(key)
            case 9:
                policy.resize(key, size: size, cost: cost)
                reference.resize(key, size: size, cost: cost)
            case 10:
                if pinned.contains(key) { pinned.remove(key) } else { pinned.insert(key) }
            default:
                let eligible = { (candidate: CacheKey) in !pinned.contains(candidate) }
                let expected = reference.evict(isEligible: eligible)
                let victim = policy.evict(isEligible: eligible)
                #expect(victim == expected, "seed \(seed), step \(step)")
                if victim != expected { return }
            }
            #expect(policy.count == reference.count, "seed \(seed), step \(step)")
            #expect(policy.residentBytes == reference.residentBytes, "seed \(seed), step \(step)")
        }
        for key in CacheKey(0)..<60 {
            #expect(policy.size(of: key) == reference.size(of: key), "seed \(seed), key \(key)")
            #expect(policy.fingerprint(of: key) == reference.fingerprint(of: key), "seed \(seed), key \(key)")
        }
        #expect(policy.drain() == reference.drain(), "seed \(seed)")
    }

    /// The implementation W-TinyLFU had before its segments shared one list: a window,
    /// probation and protected `ResidentList` each, an object moving between them removed
    /// from one and appended to the next.
    struct ThreeListWTinyLFU {
        /// The window's share of the resident bytes (Caffeine's initial 1 % of the cache).
        static let windowShare = 0.01
        /// Protected's share of main's bytes (80 %; probation holds the rest).
        static let protectedShare = 0.80
        /// Marks a probation object that came from the window and has not competed yet.
        static let candidateMark: UInt8 = 1

        private var window = ResidentList()
        private var probation = ResidentList()
        private var protected = ResidentList()
        private var sketch = FrequencySketch()
        /// Objects moved from the window to probation and not yet judged against its victim.
        private var candidates: [CacheKey] = []
        /// The bytes of the probation objects still marked as candidates.
        private var candidateBytes: Int64 = 0
        /// Under `bytes`, a saturated candidate is weighed per byte.
        let weighsBytes: Bool

        init(goal: CacheGoal) { weighsBytes = goal == .bytes }

        var count: Int { window.count + probation.count + protected.count }

        var residentBytes: Int64 { window.bytes + probation.bytes + protected.bytes }

        func contains(_ key: CacheKey) -> Bool {
            window.slot(of: key) != nil || probation.slot(of: key) != nil || protected.slot(of: key) != nil
        }

        func fingerprint(of key: CacheKey) -> UInt64? {
            if let slot = window.slot(of: key) { return window[slot].fingerprint }
            if let slot = probation.slot(of: key) { return probation[slot].fingerprint }
            if let slot = protected.slot(of: key) { return protected[slot].fingerprint }
            return nil
        }

        func size(of key: CacheKey) -> Int64? {
            if let slot = window.slot(of: key) { return window[slot].size }
            if let slot = probation.slot(of: key) { return probation[slot].size }
            if let slot = protected.slot(of: key) { return protected[slot].size }
            return nil
        }

        mutating func insert(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
            if contains(key) {
                access(key)
                return
            }
            sketch.ensureWidth(for: count + 1)
            sketch.increment(ResidentList.canonical(fingerprint))
            let windowTarget = max(1, Int64(Double(residentBytes + size) * Self.windowShare))
            if size > windowTarget {
                // Larger than the window's share: a candidate at once.
                probation.appendNewest(key, fingerprint: fingerprint, size: size, mark: Self.candidateMark)
                candidates.append(key)
                candidateBytes += size
            } else {
                window.appendNewest(key, fingerprint: fingerprint, size: size)
            }
            // The window's overflow moves to probation as candidates (marked), as Caffeine's
            // maintenance after a write does; they compete when something must be evicted.
            while window.bytes > windowTarget {
                let moved = window.remove(window.oldest)
                probation.appendNewest(moved.key, fingerprint: moved.fingerprint, size: moved.size,
                                       mark: Self.candidateMark)
                candidates.append(moved.key)
                candidateBytes += moved.size
            }
            // The newest one always waits to be judged, however large, and if it is larger
            // than the window's share its bytes do not count against it; keys no longer
            // waiting (read since, removed) leave the front of the queue too.
            let newestSize = candidates.last.map { isCandidate($0) ? self.size(of: $0)! : 0 } ?? 0
            let largeNewestBytes = newestSize > windowTarget ? newestSize : 0
            while let oldest = candidates.first, candidates.count > 1,
                  candidateBytes - largeNewestBytes > windowTarget || !isCandidate(oldest) {
                establish(candidates.removeFirst())
            }
        }

        private func isCandidate(_ key: CacheKey) -> Bool {
            probation.slot(of: key).map { probation[$0].mark == Self.candidateMark } ?? false
        }

        /// A candidate becomes an established probation object (unknown or judged keys are ignored).
        private mutating func establish(_ key: CacheKey) {
            guard isCandidate(key), let slot = probation.slot(of: key) else { return }
            probation.setMark(0, at: slot)
            candidateBytes -= probation[slot].size
        }

        /// An object leaves probation (read, removed or evicted); a candidate's bytes no longer wait.
        @discardableResult
        private mutating func removeFromProbation(_ slot: Int32) -> ResidentList.Node {
            let node = probation.remove(slot)
            if node.mark == Self.candidateMark { candidateBytes -= node.size }
            return node
        }

        mutating func restore(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
            guard !contains(key) else { return }
            sketch.ensureWidth(for: count + 1)
            // Counted once, as its insert was: a newcomer must then be read more than it to
            // displace it, rather than flush a whole restored cache on a cold sketch.
            sketch.increment(ResidentList.canonical(fingerprint))
            probation.appendNewest(key, fingerprint: fingerprint, size: size)
        }

        /// Restored objects all go to probation. The sketch grows as before (its width decides
        /// what it remembers).
        mutating func reserveCapacity(_ residents: Int) { probation.reserveCapacity(residents) }

        mutating func resize(_ key: CacheKey, size: Int64, cost: Double) {
            if let slot = window.slot(of: key) {
                window.resize(slot, to: size)
            } else if let slot = probation.slot(of: key) {
                if probation[slot].mark == Self.candidateMark { candidateBytes += size - probation[slot].size }
                probation.resize(slot, to: size)
            } else if let slot = protected.slot(of: key) {
                protected.resize(slot, to: size)
            }
        }

        mutating func access(_ key: CacheKey) {
            if let slot = window.slot(of: key) {
                sketch.increment(window[slot].fingerprint)
                window.moveToNewest(slot)
            } else if let slot = probation.slot(of: key) {
                let node = removeFromProbation(slot)
                sketch.increment(node.fingerprint)
                protected.appendNewest(node.key, fingerprint: node.fingerprint, size: node.size)
                let protectedLimit = max(1, Int64(Double(probation.bytes + protected.bytes) * Self.protectedShare))
                // The object just promoted stays, however large.
                while protected.count > 1 && protected.bytes > protectedLimit {
                    let demoted = protected.remove(protected.oldest)
                    probation.appendNewest(demoted.key, fingerprint: demoted.fingerprint, size: demoted.size)
                }
            } else if let slot = protected.slot(of: key) {
                sketch.increment(protected[slot].fingerprint)
                protected.moveToNewest(slot)
            }
        }

        mutating func remove(_ key: CacheKey) {
            if let slot = window.slot(of: key) {
                window.remove(slot)
            } else if let slot = probation.slot(of: key) {
                removeFromProbation(slot)
            } else if let slot = protected.slot(of: key) {
                protected.remove(slot)
            }
        }

        /// As Caffeine does when the cache is full: the oldest candidate from the window and
        /// probation's least recent established object compete, and the one requested less
        /// often is the victim (a tie keeps the established one). When main holds no established
        /// object to compete with, the waiting candidates all become established first.
        mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
            while let candidate = candidates.first {
                guard let candidateSlot = probation.slot(of: candidate), probation[candidateSlot].mark == Self.candidateMark,
                      isEligible(candidate) else {
                    // Read since (now protected), removed, judged, or not to be evicted now.
                    establish(candidates.removeFirst())
                    continue
                }
                var victimSlot = oldestEligible(in: probation) { key in
                    isEligible(key) && probation[probation.slot(of: key)!].mark == 0
                }
                if victimSlot == nil, let demoted = oldestEligible(in: protected, isEligible: isEligible) {
                    let node = protected.remove(demoted)
                    victimSlot = probation.appendNewest(node.key, fingerprint: node.fingerprint, size: node.size)
                }
                guard let victimSlot else {
                    establishCandidates()
                    break
                }
                establish(candidates.removeFirst())
                if admits(probation[candidateSlot], over: victimSlot, isEligible: isEligible) {
                    return removeFromProbation(victimSlot).key
                }
                return removeFromProbation(candidateSlot).key
            }
            return evictFromMain(isEligible: isEligible)
        }

        /// The candidate is admitted when it is read more often than the established
        /// probation objects (from the victim on, at most 64) whose bytes cover its own, together.
        private func admits(_ candidate: ResidentList.Node, over victim: Int32,
                            isEligible: (CacheKey) -> Bool) -> Bool {
            var weighed: [ResidentList.Node] = []
            var slot = victim
            while slot != ResidentList.none && weighed.count < 64 {
                let node = probation[slot]
                if slot == victim || (node.mark == 0 && isEligible(node.key)) { weighed.append(node) }
                slot = node.next
            }
            let candidateFrequency = sketch.estimate(candidate.fingerprint)
            if weighsBytes && candidateFrequency >= 16 {
                // Saturated, where misses cost bytes: the candidate's reads per byte against the
                // victims' over the bytes it would take.
                var victimsReadBytes = 0.0
                var uncovered = candidate.size
                for node in weighed {
                    victimsReadBytes += Double(sketch.estimate(node.fingerprint)) * Double(min(node.size, uncovered))
                    if victimsReadBytes >= Double(candidateFrequency) * Double(candidate.size) { return false }
                    uncovered -= node.size
                    if uncovered <= 0 { return true }
                }
                return true
            }
            var frequencies = 0
            var bytes: Int64 = 0
            for node in weighed {
                frequencies += sketch.estimate(node.fingerprint)
                bytes += node.size
                if frequencies >= sketch.estimate(candidate.fingerprint) { return false }
                if bytes >= candidate.size { return true }
            }
            return true
        }

        private mutating func establishCandidates() {
            while !candidates.isEmpty { establish(candidates.removeFirst()) }
        }

        private mutating func evictFromMain(isEligible: (CacheKey) -> Bool) -> CacheKey? {
            if let slot = oldestEligible(in: probation, isEligible: isEligible) { return removeFromProbation(slot).key }
            if let slot = oldestEligible(in: protected, isEligible: isEligible) { return protected.remove(slot).key }
            if let slot = oldestEligible(in: window, isEligible: isEligible) { return window.remove(slot).key }
            return nil
        }

        /// The least recent eligible object of a list; ineligible ones keep their place.
        private func oldestEligible(in list: ResidentList, isEligible: (CacheKey) -> Bool) -> Int32? {
            var slot = list.oldest
            while slot != ResidentList.none {
                if isEligible(list[slot].key) { return slot }
                slot = list[slot].next
            }
            return nil
        }

        mutating func drain() -> [CacheKey] {
            var victims: [CacheKey] = []
            while let victim = evict(isEligible: { _ in true }) { victims.append(victim) }
            return victims
        }
    }
}
