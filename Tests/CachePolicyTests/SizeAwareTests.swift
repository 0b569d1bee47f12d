@testable import CachePolicy
import Testing

/// GDSF on hand-computed sequences, against a plain transcription, and the byte-measured
/// queue shares of S3-FIFO and W-TinyLFU.
@Suite struct SizeAwareTests {
    @Test func gdsfEvictsALargeOnceReadFileBeforeSmallHotOnes() {
        var policy = GDSFPolicy()
        // Files goal: cost 1 each. H = 0 + 1/size: the video 1/1,000,000, the avatars 1/2,000.
        policy.insert(1, fingerprint: 1, size: 2_000, cost: 1)
        policy.insert(2, fingerprint: 2, size: 1_000_000, cost: 1)
        policy.insert(3, fingerprint: 3, size: 2_000, cost: 1)
        policy.access(1)
        policy.access(3)
        #expect(policy.residentBytes == 1_004_000)
        #expect(policy.evict() == 2)
        #expect(policy.residentBytes == 4_000)
        // The clock rose to the video's priority.
        #expect(policy.clock == 1.0 / 1_000_000)
    }

    /// Sizes 1, 2 and 4, cost 1. H: a 1, b 0.5, c 0.25. c goes, L = 0.25. d (size 4) enters
    /// at 0.25 + 0.25 = 0.5, equal to b: b was set first and goes, L = 0.5. a is read: its
    /// frequency is 2, H = 0.5 + 2/1 = 2.5. Then d (0.5), L stays 0.5, then a.
    @Test func gdsfClockRisesToEachVictimAndAReadSetsThePriorityFromIt() {
        var policy = GDSFPolicy()
        policy.insert(1, fingerprint: 1, size: 1, cost: 1)
        policy.insert(2, fingerprint: 2, size: 2, cost: 1)
        policy.insert(3, fingerprint: 3, size: 4, cost: 1)
        #expect(policy.evict() == 3)
        #expect(policy.clock == 0.25)
        policy.insert(4, fingerprint: 4, size: 4, cost: 1)
        #expect(policy.priority(of: 4) == 0.5)
        #expect(policy.evict() == 2)
        #expect(policy.clock == 0.5)
        policy.access(1)
        #expect(policy.frequency(of: 1) == 2)
        #expect(policy.priority(of: 1) == 2.5)
        #expect(policy.evict() == 4)
        #expect(policy.clock == 0.5)
        #expect(policy.evict() == 1)
        #expect(policy.clock == 2.5)
        #expect(policy.count == 0 && policy.residentBytes == 0)
    }

    /// Costs in milliseconds, sizes equal: a file slow to make outlives one fast to make that
    /// was read more often, until that one's reads add up (H = L + frequency × cost / size).
    @Test func gdsfWeighsCostAgainstFrequency() {
        var policy = GDSFPolicy()
        policy.insert(1, fingerprint: 1, size: 100, cost: 300) // H = 3
        policy.insert(2, fingerprint: 2, size: 100, cost: 10) // H = 0.1
        policy.access(2)
        policy.access(2) // H = 0.3
        #expect(policy.evict() == 2)
    }

    @Test func gdsfSkipsPinnedObjectsAndKeepsTheirPriority() {
        var policy = GDSFPolicy()
        policy.insert(1, fingerprint: 1, size: 8, cost: 1) // 0.125
        policy.insert(2, fingerprint: 2, size: 4, cost: 1) // 0.25
        policy.insert(3, fingerprint: 3, size: 2, cost: 1) // 0.5
        #expect(policy.evict(isEligible: { $0 != 1 }) == 2)
        #expect(policy.contains(1) && policy.priority(of: 1) == 0.125)
        #expect(policy.clock == 0.25)
        #expect(policy.evict(isEligible: { $0 == 2 }) == nil)
        #expect(policy.count == 2)
        // Unpinned, it goes first, and the clock does not fall back.
        #expect(policy.evict() == 1)
        #expect(policy.clock == 0.25)
        #expect(policy.drain() == [3])
    }

    /// A file that grows keeps the clock its priority was set at; only the frequency ×
    /// cost / size part changes.
    @Test func gdsfResizeChangesOnlyTheSizePartOfThePriority() {
        var policy = GDSFPolicy()
        policy.insert(1, fingerprint: 1, size: 1, cost: 1)
        policy.insert(2, fingerprint: 2, size: 4, cost: 1)
        #expect(policy.evict() == 2) // L = 0.25
        policy.insert(3, fingerprint: 3, size: 1, cost: 1) // 1.25
        policy.resize(3, size: 4, cost: 1) // 0.25 + 0.25
        #expect(policy.priority(of: 3) == 0.5)
        #expect(policy.residentBytes == 5)
        #expect(policy.evict() == 3)
    }

    /// GDSF as its definition reads, with arrays: H = L + frequency × (cost / size), and the
    /// lowest (priority, set order) goes.
    struct ReferenceGDSF {
        struct Resident {
            var key: CacheKey
            var size: Int64
            var cost: Double
            var frequency: Int
            var priority: Double
            var order: Int
        }
        var residents: [Resident] = []
        var clock = 0.0
        var order = 0

        mutating func nextOrder() -> Int {
            order += 1
            return order
        }

        mutating func insert(_ key: CacheKey, size: Int64, cost: Double) {
            if residents.contains(where: { $0.key == key }) { return access(key) }
            residents.append(Resident(key: key, size: size, cost: cost, frequency: 1,
                                      priority: clock + cost / Double(max(size, 1)), order: nextOrder()))
        }

        mutating func access(_ key: CacheKey) {
            guard let index = residents.firstIndex(where: { $0.key == key }) else { return }
            residents[index].frequency += 1
            let resident = residents[index]
            residents[index].priority = clock + Double(resident.frequency) * (resident.cost / Double(max(resident.size, 1)))
            residents[index].order = nextOrder()
        }

        mutating func resize(_ key: CacheKey, size: Int64, cost: Double) {
            guard let index = residents.firstIndex(where: { $0.key == key }) else { return }
            let old = residents[index]
            let base = old.priority - Double(old.frequency) * (old.cost / Double(max(old.size, 1)))
            residents[index].size = size
            residents[index].cost = cost
            residents[index].priority = base + Double(old.frequency) * (cost / Double(max(size, 1)))
        }

        mutating func remove(_ key: CacheKey) { residents.removeAll { $0.key == key } }

        mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
            let eligible = residents.filter { isEligible($0.key) }
            guard let victim = eligible.min(by: { ($0.priority, $0.order) < ($1.priority, $1.order) }) else { return nil }
            clock = max(clock, victim.priority)
            remove(victim.key)
            return victim.key
        }
    }

    @Test(arguments: 1...40 as ClosedRange<UInt64>)
    func gdsfAgreesWithItsReference(seed: UInt64) {
        compareGDSF(GDSFPolicy(), seed: seed, keys: 30)
    }

    /// Sequences (the tie-break) limited to 40 with up to 30 residents: they run out every
    /// few operations and are numbered again, and no victim may change.
    @Test(arguments: 1...20 as ClosedRange<UInt64>)
    func gdsfAgreesWithItsReferenceWhenItsSequencesRunOut(seed: UInt64) {
        compareGDSF(GDSFPolicy(sequenceLimit: 40), seed: seed, keys: 30)
    }

    /// Many residents: the entry array's free slots and the index's growth and removals.
    @Test(arguments: 1...5 as ClosedRange<UInt64>)
    func gdsfAgreesWithItsReferenceOverManyKeys(seed: UInt64) {
        compareGDSF(GDSFPolicy(), seed: seed, keys: 400, steps: 3_000)
    }

    /// Costs as the 16-bit weight keeps them: 1 and the size exactly, whatever the size;
    /// another cost to three significant digits, at most 65,504 ms; none below 0.
    @Test func gdsfKeepsCostsAsTheirWeightSays() {
        let big: Int64 = 5 << 30
        #expect(MissWeight(cost: 1, size: big) == .one && MissWeight(cost: 1, size: big).density(size: big) == 1 / Double(big))
        #expect(MissWeight(cost: Double(big), size: big) == .size && MissWeight(cost: Double(big), size: big).density(size: big) == 1)
        #expect(MissWeight(cost: 300, size: 10).cost(size: 10) == 300)
        #expect(MissWeight(cost: 123.456, size: 10).cost(size: 10) == 123.4375)
        #expect(MissWeight(cost: 1e9, size: 10).cost(size: 10) == 65_504)
        #expect(MissWeight(cost: -5, size: 10).cost(size: 10) == 0)
        #expect(MissWeight(cost: .nan, size: 10).cost(size: 10) == 0)
        var policy = GDSFPolicy()
        policy.insert(1, fingerprint: 1, size: 10, cost: 123.456)
        #expect(policy.priority(of: 1) == 123.4375 / 10)
    }

    /// A file of 4 GiB or more keeps its exact size (beside its entry), through a resize to a
    /// narrow size and back, its removal, and the reuse of its slot by a small file.
    @Test func gdsfKeepsSizesOf4GiBAndMoreExactly() {
        var policy = GDSFPolicy()
        let huge: Int64 = (4 << 30) + 7
        policy.insert(1, fingerprint: 1, size: huge, cost: 1)
        policy.insert(2, fingerprint: 2, size: 10, cost: 1)
        #expect(policy.size(of: 1) == huge && policy.residentBytes == huge + 10)
        policy.resize(1, size: 100, cost: 1)
        #expect(policy.size(of: 1) == 100 && policy.residentBytes == 110)
        policy.resize(1, size: Int64(UInt32.max), cost: 1)
        #expect(policy.size(of: 1) == Int64(UInt32.max) && policy.residentBytes == Int64(UInt32.max) + 10)
        #expect(policy.evict() == 1)
        #expect(policy.residentBytes == 10)
        policy.insert(3, fingerprint: 3, size: 20, cost: 1)
        #expect(policy.size(of: 3) == 20 && policy.residentBytes == 30)
    }

    /// The read count stops at 65,535: more reads still set the priority from the clock.
    @Test func gdsfFrequencyStopsAt65535() {
        var policy = GDSFPolicy()
        policy.insert(1, fingerprint: 1, size: 1, cost: 1)
        for _ in 0..<65_540 { policy.access(1) }
        #expect(policy.frequency(of: 1) == 65_535)
        #expect(policy.priority(of: 1) == 65_535)
    }

    /// The entry's layout is the policy's memory per file (see `GDSFPolicy`).
    @Test func gdsfKeepsItsEntryAt32Bytes() {
        #expect(MemoryLayout<GDSFEntry>.stride == 32)
    }

    /// `gdsf-files` is the same reference with every cost 1, whatever cost it is given.
    @Test(arguments: 1...20 as ClosedRange<UInt64>)
    func gdsfFilesAgreesWithItsReferenceGivenCostOne(seed: UInt64) {
        compareGDSF(GDSFPolicy(weighsEveryFileAlike: true), seed: seed, keys: 30, referenceCost: { _, _ in 1 })
    }

    /// Under `bytes` (cost = size) `gdsf` keeps a large file read twice over a small one read
    /// once (H = 2 against 1); `gdsf-files` weighs both misses as 1 and keeps the small one
    /// (H = 1/10 against 2/1,000).
    @Test func gdsfFilesIgnoresTheGoalsCost() {
        for (policy, victim) in [(GDSFPolicy(), CacheKey(2)), (GDSFPolicy(weighsEveryFileAlike: true), 1)] {
            var policy = policy
            policy.insert(1, fingerprint: 1, size: 1_000, cost: 1_000)
            policy.insert(2, fingerprint: 2, size: 10, cost: 10)
            policy.access(1)
            #expect(policy.evict() == victim, "\(policy.weighsEveryFileAlike)")
        }
        var files = GDSFPolicy(weighsEveryFileAlike: true)
        files.insert(1, fingerprint: 1, size: 1_000, cost: 1_000)
        #expect(files.priority(of: 1) == 1.0 / 1_000)
        files.resize(1, size: 500, cost: 500)
        #expect(files.priority(of: 1) == 1.0 / 500)
    }

    /// The reference is given each cost as the policy keeps it (``MissWeight``): 1 and the
    /// size exactly, any other cost rounded to a half-precision float. Sizes include one of
    /// 5 GiB (kept beside the entry) and costs one that does not round exactly.
    func compareGDSF(_ policy: GDSFPolicy, seed: UInt64, keys: CacheKey, steps: Int = 500,
                     referenceCost: (Double, Int64) -> Double = { MissWeight(cost: $0, size: $1).cost(size: $1) }) {
        var policy = policy
        var model = ReferenceGDSF()
        var generator = SeededGenerator(seed: seed)
        var pinned: Set<CacheKey> = []
        let sizes: [Int64] = [1, 2, 4, 8, 1000, 5 << 30]
        let costs: [Double] = [1, 3, 300, 123.456]
        for step in 0..<steps {
            let key = CacheKey.random(in: 0..<keys, using: &generator)
            let size = sizes.randomElement(using: &generator)!
            let cost = costs.randomElement(using: &generator)!
            switch Int.random(in: 0..<12, using: &generator) {
            case 0...3:
                policy.insert(key, fingerprint: UInt64(key), size: size, cost: cost)
                model.insert(key, size: size, cost: referenceCost(cost, size))
            case 4...5:
                policy.access(key)
                model.access(key)
            case 6:
                policy.remove(key)
                model.remove(key)
            case 7:
                policy.resize(key, size: size, cost: cost)
                model.resize(key, size: size, cost: referenceCost(cost, size))
            case 8:
                if pinned.contains(key) { pinned.remove(key) } else { pinned.insert(key) }
            default:
                let eligible = { (candidate: CacheKey) in !pinned.contains(candidate) }
                let expected = model.evict(isEligible: eligible)
                let victim = policy.evict(isEligible: eligible)
                #expect(victim == expected, "seed \(seed), step \(step)")
                if victim != expected { return }
                #expect(policy.clock == model.clock, "seed \(seed), step \(step)")
            }
            #expect(policy.count == model.residents.count, "seed \(seed), step \(step)")
            #expect(policy.residentBytes == model.residents.reduce(0) { $0 + $1.size }, "seed \(seed), step \(step)")
        }
        for resident in model.residents {
            #expect(policy.size(of: resident.key) == resident.size, "seed \(seed)")
            #expect(policy.fingerprint(of: resident.key) == nil, "seed \(seed)")
        }
    }

    /// Every policy keeps the sum of its residents' sizes through inserts, resizes,
    /// removals and evictions.
    @Test(arguments: PolicyKind.allCases)
    func everyPolicyKeepsItsResidentBytes(kind: PolicyKind) {
        var policy = AnyReplacementPolicy(kind: kind, goal: .files)
        var sizes: [CacheKey: Int64] = [:]
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<2_000 {
            let key = CacheKey.random(in: 0..<50, using: &generator)
            let size = Int64.random(in: 1...10_000, using: &generator)
            switch Int.random(in: 0..<5, using: &generator) {
            case 0, 1:
                if sizes[key] == nil { sizes[key] = size }
                policy.insert(key, fingerprint: UInt64(key), size: size, cost: 1)
            case 2:
                if sizes[key] != nil { sizes[key] = size }
                policy.resize(key, size: size, cost: 1)
            case 3:
                sizes[key] = nil
                policy.remove(key)
            default:
                if let victim = policy.evict() { sizes[victim] = nil }
            }
            #expect(policy.residentBytes == sizes.values.reduce(0, +), "\(kind)")
            #expect(policy.count == sizes.count, "\(kind)")
        }
    }

    /// Reserving room (as a build from the index does, or later, on a policy that holds
    /// residents) changes no victim: the same random sequence with and without.
    @Test(arguments: PolicyKind.allCases)
    func reservingCapacityChangesNoDecision(kind: PolicyKind) {
        func victims(reserving: Bool) -> [CacheKey?] {
            var policy = AnyReplacementPolicy(kind: kind, goal: .files)
            var generator = SeededGenerator(seed: 11)
            var victims: [CacheKey?] = []
            if reserving { policy.reserveCapacity(100) }
            for step in 0..<3_000 {
                if reserving && step == 1_000 { policy.reserveCapacity(700) }
                let key = CacheKey.random(in: 0..<300, using: &generator)
                let size = Int64.random(in: 1...100, using: &generator)
                switch Int.random(in: 0..<6, using: &generator) {
                case 0, 1: policy.insert(key, fingerprint: UInt64(key), size: size, cost: 1)
                case 2: policy.restore(key, fingerprint: UInt64(key), size: size, cost: 1)
                case 3: policy.access(key)
                case 4: policy.remove(key)
                default: victims.append(policy.evict())
                }
            }
            while let victim = policy.evict() { victims.append(victim) }
            return victims
        }
        #expect(victims(reserving: true) == victims(reserving: false), "\(kind)")
    }

    /// Main holds eight restored objects of 100 bytes, the small queue two of 1 byte. By
    /// objects the small queue is over its 10 % (2 of 10) and its tail would go; by bytes it
    /// holds 2 of 802, under its 81, so main's oldest goes.
    @Test func s3fifoMeasuresItsSmallQueueInBytes() {
        var policy = S3FIFOPolicy()
        for key in CacheKey(1)...8 { policy.restore(key, fingerprint: UInt64(key), size: 100, cost: 1) }
        policy.insert(20, fingerprint: 20, size: 1, cost: 1)
        policy.insert(21, fingerprint: 21, size: 1, cost: 1)
        #expect(policy.evict() == 1)
        // Main keeps going first while the small queue holds under 10 % of the bytes: all
        // of it, then the small queue's tail.
        for key in CacheKey(2)...8 { #expect(policy.evict() == key) }
        #expect(policy.evict() == 20)
    }

    /// A window of 1 % of the bytes: a newcomer of 50 bytes beside 9 of 10 bytes overflows
    /// it (50 of 140, over 1) and competes as a candidate (tied with probation's oldest, it
    /// loses). By objects (1 of 10) it would have stayed in the window and probation's
    /// oldest gone.
    @Test func tinylfuMeasuresItsWindowInBytes() {
        var policy = WTinyLFUPolicy()
        for key in CacheKey(1)...9 { policy.restore(key, fingerprint: UInt64(key), size: 10, cost: 1) }
        policy.insert(500, fingerprint: 500, size: 50, cost: 1)
        #expect(policy.evict() == 500)
        #expect(policy.residentBytes == 90)
    }

    /// The aggregated-victims admission, by hand. Nine established files of 10 bytes, each
    /// counted once in the sketch (1); a candidate of 30 bytes would displace the three
    /// oldest (1, 2 and 3), 3 together. Requested twice or three times, it is refused (its
    /// 2 or 3 is not above theirs), though it beats the first victim alone as W-TinyLFU would
    /// judge it; requested four times it is admitted, and the oldest goes.
    @Test(arguments: [(requests: 2, admitted: false), (requests: 3, admitted: false), (requests: 4, admitted: true)])
    func tinylfuWeighsALargeCandidateAgainstAllItDisplaces(requests: Int, admitted: Bool) {
        var policy = WTinyLFUPolicy()
        for key in CacheKey(1)...9 { policy.restore(key, fingerprint: UInt64(key), size: 10, cost: 1) }
        // Earlier requests of the candidate, each a miss the sketch counts.
        for _ in 1..<requests {
            policy.insert(500, fingerprint: 500, size: 30, cost: 1)
            policy.remove(500)
        }
        policy.insert(500, fingerprint: 500, size: 30, cost: 1)
        #expect(policy.evict() == (admitted ? 1 : 500))
        #expect(policy.contains(500) == admitted)
    }

    /// A candidate read more often than the sketch counts, under `bytes`, is weighed per
    /// byte. Forty established files of 10 bytes, each counted once; a candidate of 300 bytes
    /// would displace thirty of them, 30 together. Requested 16 times its count saturates
    /// (15 and the doorkeeper's 1): under `bytes` it is admitted, being read more often per
    /// byte than they are (16 against 1), where the sum of their counts (16 after sixteen of
    /// them) would refuse it for good, as it still does under `files` and for a count of 15.
    @Test(arguments: [(goal: CacheGoal.bytes, requests: 16, admitted: true), (goal: .bytes, requests: 15, admitted: false),
                      (goal: .files, requests: 16, admitted: false)])
    func tinylfuWeighsASaturatedCandidatePerByteUnderBytes(goal: CacheGoal, requests: Int, admitted: Bool) {
        var policy = WTinyLFUPolicy(goal: goal)
        for key in CacheKey(1)...40 {
            policy.restore(key, fingerprint: UInt64(key), size: 10, cost: goal.cost(size: 10, measured: 0))
        }
        let cost = goal.cost(size: 300, measured: 0)
        for _ in 1..<requests {
            policy.insert(500, fingerprint: 500, size: 300, cost: cost)
            policy.remove(500)
        }
        policy.insert(500, fingerprint: 500, size: 300, cost: cost)
        #expect(policy.evict() == (admitted ? 1 : 500))
        #expect(policy.contains(500) == admitted)
    }

    /// A newcomer larger than the window's share does not send the candidates waiting
    /// before it to main unjudged. 40 established files of 100 bytes, 10 small newcomers of
    /// 10 bytes (four wait as candidates, four stay in the window), then one of 2,000 bytes,
    /// which moves the window's four out behind the waiting ones. Each eviction judges the
    /// oldest waiting candidate first (the first key it asks about): the small ones still
    /// waiting, then the large one. Were its bytes counted against the window's share, every
    /// small one would have joined main unjudged and the first eviction would have judged
    /// the large one.
    @Test func tinylfuKeepsCandidatesWaitingBehindALargeNewcomer() {
        var policy = WTinyLFUPolicy()
        for key in CacheKey(1)...40 { policy.restore(key, fingerprint: UInt64(key), size: 100, cost: 1) }
        let small = CacheKey(1_001)...1_010
        for key in small { policy.insert(key, fingerprint: UInt64(key), size: 10, cost: 1) }
        policy.insert(5_000, fingerprint: 5_000, size: 2_000, cost: 1)
        var judgedFirst: [CacheKey] = []
        while judgedFirst.last != 5_000 && judgedFirst.count < 20 {
            var asked: [CacheKey] = []
            let victim = policy.evict { asked.append($0); return true }
            guard victim != nil, let first = asked.first else {
                Issue.record("no victim, or none judged, after \(judgedFirst)")
                return
            }
            judgedFirst.append(first)
        }
        #expect(judgedFirst.count > 1 && judgedFirst.last == 5_000, "\(judgedFirst)")
        #expect(judgedFirst.dropLast().allSatisfy { small.contains($0) }, "\(judgedFirst)")
    }
}
