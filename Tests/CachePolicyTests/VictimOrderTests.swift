@testable import CachePolicy
import Testing

/// Each policy on a hand-built sequence whose victims were worked out by hand from the
/// papers' rules (the comments give the reasoning).
@Suite struct VictimOrderTests {
    @Test func lruEvictsTheLeastRecentlyReadAndSkipsWhatCannotGo() {
        var policy = LRUPolicy()
        policy.insert(1, 2, 3)
        policy.access(1)
        // Recency, oldest first: 2, 3, 1. File 2 is pinned: it keeps its place.
        #expect(policy.evict(isEligible: { $0 != 2 }) == 3)
        #expect(policy.contains(2))
        policy.remove(1)
        #expect(policy.drain() == [2])
        #expect(policy.count == 0)
    }

    @Test func s3fifoSendsReadObjectsToMainAndRemembersGhosts() {
        var policy = S3FIFOPolicy()
        // One eviction first, so the cold fill's rule (below) is over.
        policy.insert(0)
        #expect(policy.evict() == 0)
        policy.insert(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
        policy.access(3)
        policy.access(7)
        // All ten are in the small queue (main is empty); its tail goes first. 1 and 2 were
        // never read: victims (and ghosts). 3 was read: it moves to main, and 4 goes.
        #expect(policy.evict() == 1)
        #expect(policy.evict() == 2)
        #expect(policy.evict() == 4)
        // 1 comes back: its ghost sends it straight to main, behind 3.
        policy.insert(1)
        // The small queue (5...10) drains first, 7 moving to main; then main: 3, 1, 7.
        #expect(policy.drain() == [5, 6, 8, 9, 10, 3, 1, 7])
    }

    /// Until the first eviction, new objects go to main once the small queue holds its
    /// tenth of what is resident (libCacheSim's `has_evicted`). Ten unit objects: 1 enters the
    /// small queue, which then holds its share (1 of 1 to 10), so 2 to 10 go to main. Small
    /// goes first (1), then main (2, 3): victims of main leave no ghost. So 3, requested
    /// again, enters the small queue (the first eviction is past) and, unread there, goes
    /// next. Had the fill gone through the small queue, 3 would have been a ghost, come back
    /// to main, and 4 would have gone.
    @Test func s3fifoFillsMainFromColdUntilItsFirstEviction() {
        var policy = S3FIFOPolicy()
        policy.insert(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
        #expect(policy.evict() == 1)
        #expect(policy.evict() == 2)
        #expect(policy.evict() == 3)
        policy.insert(3)
        #expect(policy.evict() == 3)
        #expect(policy.drain() == [4, 5, 6, 7, 8, 9, 10])
    }

    /// A restored cache (a remount, a switch of policy) is not cold: newcomers go through the
    /// small queue, and a scan after a remount cannot join the restored files in main. 1 to 9
    /// restored, 10 to 13 new: all four wait in the small queue and go first. Were the fill
    /// rule applied, 11 and 13 would have gone to main, and main's 1 would follow 10.
    @Test func s3fifoSendsNewcomersAfterARestoreThroughTheSmallQueue() {
        var policy = S3FIFOPolicy()
        for key in CacheKey(1)...9 { policy.restore(key, fingerprint: UInt64(key), size: 1, cost: 1) }
        policy.insert(10, 11, 12, 13)
        #expect(policy.evict() == 10)
        #expect(policy.evict() == 11)
    }

    @Test func s3fifoMainGivesAReadObjectAnotherRound() {
        var policy = S3FIFOPolicy()
        for key in CacheKey(1)...3 { policy.restore(key, fingerprint: UInt64(key), size: 1, cost: 1) }
        policy.access(1)
        // Main holds 1, 2, 3 (restored: no reads counted). 1 was read since: it goes round
        // again with its count down by one, so 2 and 3 go first.
        #expect(policy.drain() == [2, 3, 1])
    }

    @Test func s3fifoSkipsPinnedObjectsWithoutLosingThem() {
        var policy = S3FIFOPolicy()
        policy.insert(1, 2, 3)
        #expect(policy.evict(isEligible: { $0 != 1 }) == 2)
        #expect(policy.contains(1))
        #expect(policy.drain(isEligible: { $0 != 1 }) == [3])
        #expect(policy.evict(isEligible: { $0 != 1 }) == nil)
        #expect(policy.drain() == [1])
    }

    /// Main holds 1 to 9 (restored, as at mount), the small queue a newcomer, 10, of 50
    /// bytes: over its 10 % share of the 140 cached. Pinned, it cannot go; the victim comes
    /// from main (its oldest, 1) instead of the step going round the small queue until the
    /// budget runs out and nothing is evicted (the pool stayed over its limit; a preview
    /// lost what was left in main).
    @Test func s3fifoEvictsFromMainWhenTheSmallQueueHoldsOnlyPinnedFiles() {
        var policy = S3FIFOPolicy()
        for key in CacheKey(1)...9 { policy.restore(key, fingerprint: UInt64(key), size: 10, cost: 1) }
        policy.insert(10, fingerprint: 10, size: 50, cost: 1)
        let unpinned = { (key: CacheKey) in key != 10 }
        #expect(policy.evict(isEligible: unpinned) == 1)
        #expect(policy.drain(isEligible: unpinned) == Array(2...9))
        #expect(policy.evict(isEligible: unpinned) == nil)
        #expect(policy.drain() == [10])
    }

    /// The other way round: main holds only pinned files (1 to 3) and the small queue is
    /// under its share (it is never, where the step goes to main first): the victims come
    /// from the small queue.
    @Test func s3fifoEvictsFromTheSmallQueueWhenMainHoldsOnlyPinnedFiles() {
        var policy = S3FIFOPolicy()
        for key in CacheKey(1)...3 { policy.restore(key, fingerprint: UInt64(key), size: 100, cost: 1) }
        policy.insert(20, fingerprint: 20, size: 1, cost: 1)
        policy.insert(21, fingerprint: 21, size: 1, cost: 1)
        let unpinned = { (key: CacheKey) in key > 3 }
        #expect(policy.drain(isEligible: unpinned) == [20, 21])
        #expect(policy.count == 3)
    }

    @Test func sieveHandClearsVisitedBitsAndStaysWhereItStopped() {
        var policy = SIEVEPolicy()
        policy.insert(1, 2, 3, 4, 5)
        policy.access(1)
        policy.access(3)
        // The hand starts at 1 (visited: cleared), evicts 2 and stays at 3; 3 is cleared, 4
        // goes; 5 goes; the hand wraps to 1 (cleared before) and then 3.
        #expect(policy.drain() == [2, 4, 5, 1, 3])
    }

    @Test func sieveSkipsPinnedObjects() {
        var policy = SIEVEPolicy()
        policy.insert(1, 2, 3)
        #expect(policy.evict(isEligible: { $0 != 1 }) == 2)
        #expect(policy.evict(isEligible: { $0 != 1 }) == 3)
        #expect(policy.evict(isEligible: { $0 != 1 }) == nil)
        #expect(policy.contains(1))
        policy.remove(1)
        #expect(policy.evict() == nil)
    }

    @Test func tinylfuKeepsFrequentlyReadObjectsThroughAScan() {
        var policy = WTinyLFUPolicy()
        var lru = LRUPolicy()
        for key in CacheKey(0)..<100 {
            policy.insert(key)
            lru.insert(key)
        }
        for _ in 0..<5 {
            for key in CacheKey(0)..<10 {
                policy.access(key)
                lru.access(key)
            }
        }
        // A scan of 1,000 new objects, each followed by an eviction: the cache stays at 100.
        for key in CacheKey(1000)..<2000 {
            policy.insert(key)
            lru.insert(key)
            _ = policy.evict()
            _ = lru.evict()
        }
        #expect(policy.count == 100)
        #expect((CacheKey(0)..<10).allSatisfy { policy.contains($0) })
        #expect((CacheKey(0)..<10).allSatisfy { !lru.contains($0) })
    }

    /// A cold fill of 50 objects (a window of 1 %: one) leaves only the last window's worth
    /// of them waiting as a candidate; the others joined probation as established objects, as
    /// Caffeine keeps what leaves the window while the cache has room. So the first eviction
    /// judges candidate 50 against probation's oldest, 1: tied (each read once), the
    /// established one stays. (Were all 50 still candidates, there would be no established
    /// object to judge them against, and 1 would go unjudged.)
    @Test func tinylfuJudgesOnlyRecentCandidatesAfterAColdFill() {
        var policy = WTinyLFUPolicy()
        for key in CacheKey(1)...51 { policy.insert(key) }
        #expect(policy.evict() == 50)
        #expect(policy.contains(1))
    }

    @Test func tinylfuSkipsPinnedObjects() {
        var policy = WTinyLFUPolicy()
        policy.insert(1, 2, 3)
        let victims = policy.drain(isEligible: { $0 != 2 })
        #expect(Set(victims) == [1, 3])
        #expect(policy.contains(2) && policy.count == 1)
    }

    @Test func aConvertedPolicyKeepsEveryResidentInTheOldVictimOrder() {
        var lru = AnyReplacementPolicy(kind: .lru, goal: .files)
        for key in CacheKey(1)...5 { lru.insert(key, fingerprint: UInt64(key), size: 1, cost: 1) }
        lru.access(2)
        var converted = lru.converted(to: .s3fifo)
        #expect(converted.kind == .s3fifo && converted.count == 5)
        var order: [CacheKey] = []
        while let key = converted.evict() { order.append(key) }
        // Restored in LRU order into main, with no reads counted: the same order.
        #expect(order == [1, 3, 4, 5, 2])
        #expect(lru.count == 5)
    }
}
