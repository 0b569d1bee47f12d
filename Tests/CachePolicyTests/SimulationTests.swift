@testable import CachePolicy
import Foundation
import Testing

@Suite struct SimulationTests {
    /// Capacity 2, trace a b c a b c a. Belady: a and b are kept; c's next request (5) is
    /// farther than b's (4) and a's (3), so c is not kept; a (3) and b (4) hit; c misses
    /// again (its next: none, not kept); a hits (6). 3 hits of 7. LRU: every request
    /// evicts what comes next: 0 hits.
    @Test func beladyAndLRUOnATinyTraceMatchTheHandCount() {
        let requests = trace([1, 2, 3, 1, 2, 3, 1])
        let belady = BeladyOptimum.run(requests, capacity: 2, countsObjects: true)
        #expect(belady.hits == 3 && belady.requests == 7)
        var lru = CacheSimulator(kind: .lru, capacity: 2, countsObjects: true)
        for request in requests { lru.get(request.key, size: request.size) }
        #expect(lru.figures.hits == 0)
        // In bytes: two 4 KiB objects fit in 8 KiB, the same answer.
        #expect(BeladyOptimum.run(requests, capacity: 8192).hits == 3)
    }

    /// Admission: a hot small file beside one-time large ones. Without it, each large file
    /// flushes the small one (capacity 10 KiB, large files 8 KiB); with `admit_max_size` 4 KiB
    /// the large ones are served, not kept, and every read of the small one after its first
    /// hits. `after` 2 keeps a file from its second miss.
    @Test func admissionKeepsOneTimeLargeFilesFromFlushingAHotSmallOne() {
        var keys: [(CacheKey, Int64)] = []
        for large in 0..<50 { keys += [(1, 4096), (CacheKey(100 + large), 8192)] }
        var everything = CacheSimulator(kind: .lru, capacity: 10_240)
        var bounded = CacheSimulator(kind: .lru, capacity: 10_240)
        bounded.admission = AdmissionRule(maxSize: 4096, minSize: 0, after: 1)
        for (key, size) in keys {
            everything.get(key, size: size)
            bounded.get(key, size: size)
        }
        #expect(everything.figures.hits == 0)
        #expect(bounded.figures.hits == 49)
        var second = CacheSimulator(kind: .lru, capacity: 10_240)
        second.admission = AdmissionRule(maxSize: 0, minSize: 0, after: 2)
        for (key, size) in keys { second.get(key, size: size) }
        // Kept at its second miss (request 3), hit from its third read on.
        #expect(second.figures.hits == 48)
        #expect(!second.contains(149))
    }

    @Test func beladyIsNeverBeatenByAPolicy() {
        var generator = SeededGenerator(seed: 11)
        let zipf = ZipfKeys(objects: 500, alpha: 0.8)
        let requests = trace((0..<20_000).map { _ in zipf.next(&generator) })
        let optimum = BeladyOptimum.run(requests, capacity: 50, countsObjects: true).hits
        for kind in PolicyKind.allCases {
            var cache = CacheSimulator(kind: kind, capacity: 50, countsObjects: true)
            for request in requests { cache.get(request.key, size: request.size) }
            #expect(cache.figures.hits <= optimum, "\(kind)")
            #expect(cache.figures.hits > 0, "\(kind)")
        }
    }

    @Test func aTraceReadsItsLinesAndSaysWhichLineIsBad() throws {
        let requests = try TraceReader.parse("key,size\nphoto.jpg,100\n\nphoto.jpg,100,get\nold,5,delete\nnew,7,set\r\n")
        #expect(requests.count == 4)
        #expect(requests[0].key == requests[1].key && requests[0].size == 100)
        #expect(requests.map(\.operation) == [.get, .get, .delete, .set])
        #expect(throws: TraceReader.Problem(line: 3, reason: "size x is not a number of bytes")) {
            try TraceReader.parse("a,1\nb,2\nc,x\n")
        }
        #expect(throws: TraceReader.Problem(line: 1, reason: "expected KEY,SIZE[,OPERATION[,COST]]")) {
            try TraceReader.parse("just-a-key\n")
        }
        #expect(throws: TraceReader.Problem(line: 2, reason: "operation put is not get, set or delete")) {
            try TraceReader.parse("a,1\nb,2,put\n")
        }
    }

    @Test func aTraceReadsItsCostColumnAndRejectsABadCost() throws {
        let requests = try TraceReader.parse("key,size,op,cost\nthumb,2048,,300\nthumb,2048,get,12.5\nplain,10\nnew,7,set,\n")
        #expect(requests.map(\.cost) == [300, 12.5, 0, 0])
        #expect(requests.map(\.operation) == [.get, .get, .get, .set])
        #expect(throws: TraceReader.Problem(line: 2, reason: "cost 300ms is not a number of milliseconds (0 or more)")) {
            try TraceReader.parse("a,1,get,5\nb,2,get,300ms\n")
        }
        #expect(throws: TraceReader.Problem(line: 1, reason: "cost -1 is not a number of milliseconds (0 or more)")) {
            try TraceReader.parse("a,1,get,-1\n")
        }
        #expect(throws: TraceReader.Problem(line: 1, reason: "expected KEY,SIZE[,OPERATION[,COST]]")) {
            try TraceReader.parse("a,1,get,5,extra\n")
        }
    }

    @Test func theAdvisorsMemoryStaysBoundedWhateverTheTraffic() {
        var advisor = PolicyAdvisor(current: .lru, capacityBytes: 0, capacityFiles: 1000, maxSampledKeys: 1000,
                                    maxComparedKeys: 250)
        for key in UInt64(0)..<100_000 {
            advisor.record(fingerprint: Fingerprint.mix(key), size: 4096)
            #expect(advisor.namesHeld <= 1000)
            #expect(advisor.comparedNamesHeld <= 250)
        }
        // The curve's 8x simulation would hold 8,000 names at full rate: its rate went down
        // to 1/8; the candidates' 1x simulations 1,000: theirs to 1/4.
        #expect(advisor.samplingRate <= 0.125, "\(advisor.samplingRate)")
        #expect(advisor.comparedSamplingRate <= 0.25, "\(advisor.comparedSamplingRate)")
    }

    /// The what-if curve of a sampled pool against full simulations of the same trace at
    /// each size: within 0.03 (the issue's goal), sampled at 1/4 (the 8x simulation may hold
    /// 2,048 names of the 8,000 it would at full rate).
    @Test func theWhatIfCurveIsWithinThreeHundredthsOfAFullSimulation() {
        var generator = SeededGenerator(seed: 5)
        let zipf = ZipfKeys(objects: 20_000, alpha: 0.9)
        let keys = (0..<150_000).map { _ in zipf.next(&generator) }
        let capacity: Int64 = 1000 * 4096
        var advisor = PolicyAdvisor(current: .lru, capacityBytes: capacity, capacityFiles: 0, maxSampledKeys: 2048)
        for key in keys { advisor.record(fingerprint: Fingerprint.mix(UInt64(key)), size: 4096) }
        #expect(advisor.samplingRate < 1)
        let curve = advisor.curve()
        #expect(curve.count == PolicyAdvisor.multipliers.count)
        for point in curve {
            var full = CacheSimulator(kind: .lru, capacity: point.sizeBytes)
            // The advisor's figures decay: compare with the same recent window, the last
            // half of the trace (a Zipf trace is stationary, so both are the same ratio).
            for (index, key) in keys.enumerated() {
                if index == keys.count / 2 { full.resetFigures() }
                full.get(CacheKey(key), size: 4096)
            }
            #expect(abs(full.figures.objectHitRatio - point.hitRatio) <= 0.03,
                    "at \(point.multiplier)x: estimated \(point.hitRatio), replayed \(full.figures.objectHitRatio)")
        }
    }

    /// Zipf reads with a one-time scan in the middle (a gallery scroll): `auto` starts on
    /// LRU and must end within 0.01 of the best fixed policy.
    @Test func autoEndsNearTheBestFixedPolicyOnAScanTrace() {
        var generator = SeededGenerator(seed: 9)
        let zipf = ZipfKeys(objects: 5_000, alpha: 0.9)
        var keys = (0..<40_000).map { _ in zipf.next(&generator) }
        keys += (0..<4_000).map { 100_000 + $0 }
        keys += (0..<40_000).map { _ in zipf.next(&generator) }
        let requests = trace(keys)
        let report = ReplayReport(trace: requests, capacities: [250], countsObjects: true)
        let ratio = { (policy: String) in report.rows.first { $0.policy == policy }!.figures.objectHitRatio }
        let bestFixed = PolicyKind.candidates(for: .files).map { ratio($0.rawValue) }.max()!
        #expect(ratio("auto") >= bestFixed - 0.01, "auto \(ratio("auto")), best fixed \(bestFixed)")
        #expect(ratio("s3fifo") > ratio("lru"))
        #expect(ratio("belady") >= bestFixed)
    }
}

/// The upper bound of mixed sizes, and Belady where it is exact.
@Suite struct OptimumBoundTests {
    /// Zipf reads over keys with sizes from 1 to 1,000 and costs from 1 to 100.
    func mixedTrace(seed: UInt64) -> [TraceRequest] {
        var generator = SeededGenerator(seed: seed)
        let zipf = ZipfKeys(objects: 300, alpha: 0.8)
        let sizes = (0..<300).map { _ in Int64.random(in: 1...1_000, using: &generator) }
        let costs = (0..<300).map { _ in Double(Int.random(in: 1...100, using: &generator)) }
        return (0..<4_000).map { _ in
            let key = zipf.next(&generator)
            return TraceRequest(key: CacheKey(key), size: sizes[key], cost: costs[key])
        }
    }

    @Test(arguments: 1...6 as ClosedRange<UInt64>)
    func noPolicyBeatsTheUpperBoundOnMixedSizes(seed: UInt64) throws {
        let trace = mixedTrace(seed: seed)
        for goal in CacheGoal.allCases {
            for capacity: Int64 in [2_000, 15_000, 40_000] {
                let report = ReplayReport(trace: trace, capacities: [capacity], goal: goal, warmup: 500)
                #expect(!report.beladyIsExact)
                let bound = try #require(report.rows.first { $0.policy == ReplayReport.upperBoundRow }?.bound)
                for row in report.rows where row.bound == nil {
                    #expect(row.objectHitRatio <= bound.objectHitRatio + 1e-12, "\(row.policy) \(goal) \(capacity)")
                    #expect(row.byteHitRatio <= bound.byteHitRatio + 1e-12, "\(row.policy) \(goal) \(capacity)")
                    #expect(row.costSavedRatio <= bound.costSavedRatio + 1e-12, "\(row.policy) \(goal) \(capacity)")
                }
            }
        }
    }

    /// Equal sizes: Belady is the reference (exact) and the bound, looser, is never below it.
    @Test(arguments: 1...4 as ClosedRange<UInt64>)
    func withEqualSizesBeladyIsTheReference(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let zipf = ZipfKeys(objects: 400, alpha: 0.9)
        let requests = trace((0..<5_000).map { _ in zipf.next(&generator) })
        let report = ReplayReport(trace: requests, capacities: [40 * 4096])
        #expect(report.beladyIsExact && report.referenceRow == ReplayReport.beladyRow)
        #expect(!report.rows.contains { $0.policy == ReplayReport.upperBoundRow })
        let belady = try #require(report.rows.first { $0.policy == ReplayReport.beladyRow }).objectHitRatio
        for row in report.rows { #expect(row.objectHitRatio <= belady + 1e-12, "\(row.policy)") }
        let bound = OptimumBound.run(requests, capacity: 40 * 4096)
        #expect(bound.objectHitRatio >= belady - 1e-12)
        #expect(abs(bound.objectHitRatio - bound.byteHitRatio) < 1e-9)
    }

    /// a b c a b c a with room for two (T = 7, budget 14): four reuse intervals of length 3
    /// (space-time 3 each) fit in 12, so the bound is 4 of 7 where Belady's optimum is 3.
    /// Sizes 1, 2, 1 instead (budget 2 × 7): intervals a 3, b 6, c 3, a 3; by files the
    /// three of 3 fit (9) and b in part (5/6): 3.833 hits. By bytes (shortest first, the
    /// same order): 1 + 1 + 1 + 2 × 5/6 of 1 + 2 + 1 + 1 + 2 + 1 + 1 requested bytes.
    @Test func theBoundOnTinyTracesMatchesTheHandCount() {
        let unit = trace([1, 2, 3, 1, 2, 3, 1]).map { TraceRequest(key: $0.key, size: 1) }
        #expect(abs(OptimumBound.run(unit, capacity: 2).objectHitRatio - 4.0 / 7) < 1e-12)
        #expect(BeladyOptimum.run(unit, capacity: 2).hits == 3)
        let sizes: [CacheKey: Int64] = [1: 1, 2: 2, 3: 1]
        let mixed = unit.map { TraceRequest(key: $0.key, size: sizes[$0.key]!) }
        let bound = OptimumBound.run(mixed, capacity: 2)
        #expect(abs(bound.objectHitRatio - (3 + 5.0 / 6) / 7) < 1e-12)
        #expect(abs(bound.byteHitRatio - (3 + 2 * 5.0 / 6) / 9) < 1e-12)
    }
}

/// `auto` scores its candidates by the goal's measure.
@Suite struct AutoGoalTests {
    /// Zipf 0.9 reads over 3,000 files of lognormal sizes (median 64 KiB, 1 KiB to 64 MiB)
    /// and costs from 1 to 100 ms: `gdsf` hits the most files (it keeps the small ones), a
    /// queue policy the most bytes.
    static let mixedSizes: [TraceRequest] = {
        var generator = SeededGenerator(seed: 29)
        let zipf = ZipfKeys(objects: 3_000, alpha: 0.9)
        let sizes = (0..<3_000).map { _ in
            let normal = (-2 * log(Double.random(in: Double.ulpOfOne..<1, using: &generator))).squareRoot()
                * cos(2 * Double.pi * Double.random(in: 0..<1, using: &generator))
            return Int64(min(64 * 1_048_576, max(1_024, exp(log(65_536) + 2 * normal))))
        }
        let costs = (0..<3_000).map { _ in Double(Int.random(in: 1...100, using: &generator)) }
        return (0..<60_000).map { _ in
            let key = zipf.next(&generator)
            return TraceRequest(key: CacheKey(key), size: sizes[key], cost: costs[key])
        }
    }()

    static var capacity: Int64 {
        var sizes: [CacheKey: Int64] = [:]
        for request in mixedSizes { sizes[request.key] = request.size }
        return sizes.values.reduce(0, +) / 8
    }

    /// Each fixed policy's measure of `goal`.
    func fixedRatios(for goal: CacheGoal) -> [PolicyKind: Double] {
        let report = ReplayReport(trace: Self.mixedSizes, capacities: [Self.capacity], includingAuto: false, goal: goal)
        var ratios: [PolicyKind: Double] = [:]
        for row in report.rows { if let kind = PolicyKind(rawValue: row.policy) { ratios[kind] = row.ratio(for: goal) } }
        return ratios
    }

    func winner(_ ratios: [PolicyKind: Double]) throws -> PolicyKind {
        try #require(ratios.max { $0.value < $1.value }?.key)
    }

    /// Sampled at rate 1 and before any decay, the advisor's figure for each candidate is
    /// exactly a full replay's measure of the goal.
    @Test(arguments: CacheGoal.allCases)
    func theAdvisorScoresEachCandidateByTheGoalsMeasure(goal: CacheGoal) {
        let requests = Self.mixedSizes.prefix(8_000)
        var advisor = PolicyAdvisor(current: .lru, goal: goal, capacityBytes: Self.capacity, capacityFiles: 0,
                                    maxSampledKeys: 100_000, maxComparedKeys: 100_000)
        for request in requests {
            advisor.record(fingerprint: UInt64(bitPattern: request.key), size: request.size, cost: request.cost)
        }
        #expect(advisor.comparedSamplingRate == 1)
        let scored = advisor.hitRatios()
        #expect(Set(scored.keys) == Set(PolicyKind.candidates(for: goal)))
        for kind in PolicyKind.candidates(for: goal) {
            var full = CacheSimulator(kind: kind, capacity: Self.capacity, goal: goal)
            for request in requests { full.get(request.key, size: request.size, cost: request.cost) }
            #expect(abs(scored[kind, default: -1] - full.figures.ratio(for: goal)) < 1e-9,
                    "\(kind): scored \(scored[kind, default: -1]), replayed \(full.figures.ratio(for: goal))")
        }
    }

    /// The premise: `gdsf` wins files by far, and loses bytes.
    @Test func gdsfWinsFilesAndAnotherPolicyWinsBytes() throws {
        let files = fixedRatios(for: .files)
        let bytes = fixedRatios(for: .bytes)
        #expect(try winner(files) == .gdsf)
        #expect(try winner(bytes) != .gdsf)
        #expect(bytes[.gdsf, default: 1] < bytes[try winner(bytes), default: 0] - 0.01, "\(bytes)")
    }

    /// `auto` ends on the winner of its goal (for bytes, where queue policies tie within a
    /// few thousandths, on one of them within 0.01 of the best, never on `gdsf`), and every
    /// switch it made reports that goal and led by the margin.
    @Test(arguments: [CacheGoal.files, .bytes])
    func autoSettlesOnTheWinnerOfItsGoal(goal: CacheGoal) throws {
        let ratios = fixedRatios(for: goal)
        let best = try winner(ratios)
        var auto = AutoSimulator(capacity: Self.capacity, goal: goal)
        for request in Self.mixedSizes { auto.get(request.key, size: request.size, cost: request.cost) }
        let settled = auto.cache.policy.kind
        if goal == .files {
            #expect(settled == .gdsf, "switches: \(auto.switches.map(\.to))")
        } else {
            #expect(settled != .gdsf, "switches: \(auto.switches.map(\.to))")
        }
        #expect(ratios[settled, default: 0] >= ratios[best, default: 0] - 0.01, "\(settled) of \(ratios)")
        #expect(!auto.recommendations.isEmpty || settled == PolicyAdvisor.autoStart)
        for recommendation in auto.recommendations {
            #expect(recommendation.goal == goal)
            guard recommendation.basis == .lead else { continue }
            #expect(recommendation.lead >= recommendation.margin)
            #expect(recommendation.margin >= PolicyAdvisor.switchMargin)
        }
        #expect(auto.cache.figures.ratio(for: goal) >= ratios[best, default: 0] - 0.02,
                "auto \(auto.cache.figures.ratio(for: goal)) of \(ratios)")
    }
}

/// Where the popular files are the small ones, weighing every file alike saves the most bytes.
@Suite struct SmallHotFilesTests {
    /// Zipf 0.9 reads over 3,000 files of heavy-tailed sizes (Pareto, shape 1.2, from 2 KiB,
    /// at most 64 MiB), the smallest the most read: the bench's `pareto-small-hot` in small,
    /// in a cache of a quarter of the working set (as its 25 % row).
    static let smallHot: [TraceRequest] = {
        var generator = SeededGenerator(seed: 41)
        let zipf = ZipfKeys(objects: 3_000, alpha: 0.9)
        let sizes = (0..<3_000).map { _ in
            Int64(min(64 * 1_048_576, 2_048 * pow(Double.random(in: Double.ulpOfOne..<1, using: &generator), -1 / 1.2)))
        }.sorted()
        return (0..<60_000).map { _ in
            let key = zipf.next(&generator)
            return TraceRequest(key: CacheKey(key), size: sizes[key])
        }
    }()

    static var capacity: Int64 {
        var sizes: [CacheKey: Int64] = [:]
        for request in smallHot { sizes[request.key] = request.size }
        return sizes.values.reduce(0, +) / 4
    }

    /// Under `bytes`, `gdsf-files` saves more bytes than every other policy, `gdsf` (LFU with
    /// aging there) among them, and `auto` ends on it within 0.01 of its figure.
    @Test func underGoalBytesGDSFFilesSavesTheMostBytesAndAutoFindsIt() throws {
        let report = ReplayReport(trace: Self.smallHot, capacities: [Self.capacity], goal: .bytes)
        let ratio = { (policy: String) in report.rows.first { $0.policy == policy }?.byteHitRatio ?? -1 }
        let others = PolicyKind.candidates(for: .bytes).filter { $0 != .gdsfFiles }
        let bestOther = try #require(others.max { ratio($0.rawValue) < ratio($1.rawValue) })
        #expect(ratio("gdsf-files") > ratio(bestOther.rawValue) + 0.005,
                "gdsf-files \(ratio("gdsf-files")), \(bestOther) \(ratio(bestOther.rawValue))")
        #expect(ratio("gdsf-files") > ratio("gdsf") + 0.02)
        let auto = try #require(report.rows.first { $0.policy == "auto" })
        #expect(auto.switches.last?.to == .gdsfFiles, "switches: \(auto.switches.map(\.to))")
        #expect(auto.byteHitRatio >= ratio("gdsf-files") - 0.01, "auto \(auto.byteHitRatio)")
    }

    /// Under `files` the two are one policy, so `gdsf-files` is not simulated twice; under
    /// `cost` it would ignore the costs.
    @Test func gdsfFilesIsACandidateUnderBytesOnly() {
        #expect(!PolicyKind.candidates(for: .files).contains(.gdsfFiles))
        #expect(PolicyKind.candidates(for: .bytes).contains(.gdsfFiles))
        #expect(!PolicyKind.candidates(for: .cost).contains(.gdsfFiles))
        var advisor = PolicyAdvisor(current: .lru, goal: .files, capacityBytes: 1_000, capacityFiles: 0)
        #expect(!advisor.candidates.contains(.gdsfFiles))
        advisor.setGoal(.bytes)
        #expect(advisor.candidates.contains(.gdsfFiles))
    }

    /// An `auto` pool running `gdsf-files` whose goal leaves `bytes` runs a policy that is a
    /// candidate again: the one no longer simulated scores nothing, so the first look that
    /// may switch does.
    @Test func aGoalThatLeavesBytesMovesAutoOffGDSFFiles() throws {
        var advisor = PolicyAdvisor(current: .gdsfFiles, goal: .bytes, capacityBytes: AutoGoalTests.capacity,
                                    capacityFiles: 0)
        advisor.setGoal(.files)
        var recommendations: [PolicyRecommendation] = []
        for request in AutoGoalTests.mixedSizes.prefix(4_096) {
            advisor.record(fingerprint: UInt64(bitPattern: request.key), size: request.size, cost: request.cost)
            if let recommendation = advisor.recommendation() { recommendations.append(recommendation) }
        }
        let first = try #require(recommendations.first)
        #expect(first.from == .gdsfFiles && first.goal == .files)
        #expect(PolicyKind.candidates(for: .files).contains(first.kind), "\(first.kind)")
    }
}

/// Where sizes vary and the goal counts files or cost, `auto` starts from GDSF at its first
/// look, instead of waiting for its simulation to lead (which takes as long as the pool takes
/// to fill); where sizes are equal, or the goal is bytes, it does not.
@Suite struct SizeAwareStartTests {
    /// The first switch an `auto` replay of `requests` made, with the requests seen by then.
    func firstSwitch(_ requests: [TraceRequest], capacity: Int64, countsObjects: Bool = false,
                     goal: CacheGoal) -> (recommendation: PolicyRecommendation, afterRequests: Int64)? {
        var auto = AutoSimulator(capacity: capacity, countsObjects: countsObjects, goal: goal)
        for request in requests {
            auto.get(request.key, size: request.size, cost: request.cost)
            if let first = auto.recommendations.first { return (first, auto.switches[0].afterRequests) }
        }
        return nil
    }

    @Test(arguments: [CacheGoal.files, .cost])
    func withSizesThatVaryAutoStartsFromGDSFAtItsFirstLook(goal: CacheGoal) throws {
        let first = try #require(firstSwitch(AutoGoalTests.mixedSizes, capacity: AutoGoalTests.capacity, goal: goal))
        #expect(first.recommendation.from == PolicyAdvisor.autoStart)
        #expect(first.recommendation.kind == .gdsf)
        guard case .sizesVary(let spread) = first.recommendation.basis else {
            Issue.record("the first switch rests on \(first.recommendation.basis)")
            return
        }
        // ln sizes of a lognormal with sigma 2 (clipped at 1 KiB and 64 MiB): close to 2.
        #expect(spread > 1.5 && spread < 2.1, "spread \(spread)")
        // The first look: the advisor's minimum of sampled requests, every request sampled here.
        #expect(first.afterRequests <= 512, "after \(first.afterRequests) requests")
    }

    @Test func withSizesThatVaryAndTheGoalBytesAutoWaitsForALead() {
        let first = firstSwitch(AutoGoalTests.mixedSizes, capacity: AutoGoalTests.capacity, goal: .bytes)
        #expect(first.map { $0.recommendation.basis == .lead } ?? true, "\(String(describing: first))")
    }

    @Test func withEqualSizesAutoStaysOnS3FIFOUntilALead() {
        var generator = SeededGenerator(seed: 3)
        let zipf = ZipfKeys(objects: 2_000, alpha: 0.9)
        let requests = (0..<20_000).map { _ in TraceRequest(key: CacheKey(zipf.next(&generator)), size: 4_096) }
        let first = firstSwitch(requests, capacity: 200, countsObjects: true, goal: .files)
        #expect(first.map { $0.recommendation.basis == .lead } ?? true, "\(String(describing: first))")
    }

    /// A pool that ran another policy when it chose `auto` keeps it: the start is S3-FIFO's only.
    @Test func anAdvisorOnAnotherPolicyDoesNotStartFromGDSF() {
        var advisor = PolicyAdvisor(current: .tinylfu, goal: .files, capacityBytes: AutoGoalTests.capacity,
                                    capacityFiles: 0)
        var recommendations: [PolicyRecommendation] = []
        for request in AutoGoalTests.mixedSizes.prefix(2_048) {
            advisor.record(fingerprint: UInt64(bitPattern: request.key), size: request.size, cost: request.cost)
            if let recommendation = advisor.recommendation() { recommendations.append(recommendation) }
        }
        #expect(recommendations.allSatisfy { $0.basis == .lead }, "\(recommendations)")
    }

    @Test func theSpreadIsTheStandardDeviationOfTheSizesLogarithms() {
        var equal = SizeSpread()
        for _ in 0..<10 { equal.add(size: 4_096) }
        #expect(equal.spread == 0)
        // As many of 2 and 8 bytes: the logarithms lie ln 4 apart, each ln 4 / 2 from their mean.
        var twoSizes = SizeSpread()
        for _ in 0..<50 {
            twoSizes.add(size: 2)
            twoSizes.add(size: 8)
        }
        #expect(abs(twoSizes.spread - log(4.0) / 2) < 1e-9, "\(twoSizes.spread)")
    }
}

/// The lead `auto` needs grows with the noise the goal's weights add to it.
@Suite struct SwitchMarginTests {
    /// Zipf 0.9 reads over 3,000 files of Pareto sizes (shape 1.2, 2 KiB to 256 MiB), the
    /// most read the smallest: by bytes the queue policies end within 0.01 of each other, and
    /// which one leads the recent window turns on a few large files.
    static let smallFilesHot: [TraceRequest] = {
        var generator = SeededGenerator(seed: 1)
        let zipf = ZipfKeys(objects: 3_000, alpha: 0.9)
        let sizes = (0..<3_000).map { _ in
            let uniform = Double.random(in: Double.ulpOfOne..<1, using: &generator)
            return Int64(min(256 * 1_048_576, 2_048 * pow(uniform, -1 / 1.2)))
        }.sorted()
        return (0..<60_000).map { _ in
            let key = zipf.next(&generator)
            return TraceRequest(key: CacheKey(key), size: sizes[key])
        }
    }()

    static func capacity(percent: Int64) -> Int64 {
        var sizes: [CacheKey: Int64] = [:]
        for request in smallFilesHot { sizes[request.key] = request.size }
        return sizes.values.reduce(0, +) * percent / 100
    }

    static func bestFixedByteRatio(capacity: Int64) -> Double {
        let report = ReplayReport(trace: smallFilesHot, capacities: [capacity], includingAuto: false, goal: .bytes)
        return report.rows.filter { PolicyKind(rawValue: $0.policy) != nil }.map { $0.ratio(for: .bytes) }.max() ?? 1
    }

    static func runAuto(capacity: Int64, startingWith kind: PolicyKind) -> AutoSimulator {
        var auto = AutoSimulator(capacity: capacity, goal: .bytes, startingWith: kind)
        for request in smallFilesHot { auto.get(request.key, size: request.size) }
        return auto
    }

    /// At 25 %, with a lead of 0.005 enough, `auto` went to sieve, gdsf, then sieve again
    /// (0.482 of bytes against the best fixed policy's 0.485).
    @Test func aNoisyByteLeadSwitchesAtMostOnce() {
        let capacity = Self.capacity(percent: 25)
        let auto = Self.runAuto(capacity: capacity, startingWith: PolicyAdvisor.autoStart)
        #expect(auto.switches.count <= 1, "switches: \(auto.switches.map(\.to))")
        let best = Self.bestFixedByteRatio(capacity: capacity)
        let ratio = auto.cache.figures.ratio(for: .bytes)
        #expect(ratio >= best - 0.01, "auto \(ratio), best \(best)")
    }

    /// At 10 % `lru` is 0.045 of bytes behind the best: `auto` started on it still leaves it.
    @Test func aClearByteLeadStillSwitches() throws {
        let capacity = Self.capacity(percent: 10)
        let auto = Self.runAuto(capacity: capacity, startingWith: .lru)
        let first = try #require(auto.recommendations.first)
        #expect(first.from == .lru && first.lead >= first.margin)
        #expect(auto.cache.policy.kind != .lru)
        let best = Self.bestFixedByteRatio(capacity: capacity)
        let ratio = auto.cache.figures.ratio(for: .bytes)
        #expect(ratio >= best - 0.01, "auto \(ratio), best \(best)")
    }

    /// Sampled at rate 1 and before any decay, the margin between two candidates is what
    /// full replays of both give: the standard error of the lead from the requests one hit
    /// and the other missed, by their bytes, less the same counting files, times two. Under
    /// `files` it is the floor; with lognormal sizes (`AutoGoalTests.mixedSizes`) and
    /// `bytes` it grows well past it.
    @Test(arguments: [CacheGoal.files, .bytes])
    func theMarginIsWhatTheCandidatesDisagreementsGive(goal: CacheGoal) {
        let requests = AutoGoalTests.mixedSizes.prefix(8_000)
        let capacity = AutoGoalTests.capacity
        var advisor = PolicyAdvisor(current: .lru, goal: goal, capacityBytes: capacity, capacityFiles: 0,
                                    maxSampledKeys: 100_000, maxComparedKeys: 100_000)
        let candidates = PolicyKind.candidates(for: goal)
        var full = candidates.map { CacheSimulator(kind: $0, capacity: capacity, goal: goal) }
        var hitsByKind = Array(repeating: [Bool](), count: full.count)
        for request in requests {
            advisor.record(fingerprint: UInt64(bitPattern: request.key), size: request.size)
            for index in full.indices { hitsByKind[index].append(full[index].get(request.key, size: request.size)) }
        }
        #expect(advisor.comparedSamplingRate == 1)
        let weights = requests.map { goal.cost(size: $0.size, measured: 0) }
        var largest = 0.0
        for (first, leader) in candidates.enumerated() {
            for (second, current) in candidates.enumerated() where first != second {
                let disagreed = weights.indices.filter { hitsByKind[first][$0] != hitsByKind[second][$0] }
                let weighted = disagreed.map { weights[$0] * weights[$0] }.reduce(0, +).squareRoot()
                    / weights.reduce(0, +)
                let counted = Double(disagreed.count).squareRoot() / Double(weights.count)
                let expected = max(PolicyAdvisor.switchMargin,
                                   PolicyAdvisor.marginInAddedStandardErrors * (weighted - counted))
                let margin = advisor.requiredLead(of: leader, over: current)
                #expect(abs(margin - expected) < 1e-9, "\(leader) over \(current): \(margin), expected \(expected)")
                largest = max(largest, margin)
            }
        }
        if goal == .files {
            #expect(largest == PolicyAdvisor.switchMargin)
        } else {
            #expect(largest > 2 * PolicyAdvisor.switchMargin, "largest margin \(largest)")
        }
    }
}
