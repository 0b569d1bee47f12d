@testable import CachePolicy
import Testing

/// Random operation sequences applied to each policy and to a plain transcription of its
/// paper's rules written here with arrays (slow, obviously right); every victim must agree.
@Suite struct ModelTests {
    protocol Reference {
        init()
        mutating func insert(_ key: CacheKey)
        mutating func access(_ key: CacheKey)
        mutating func remove(_ key: CacheKey)
        mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey?
        var keys: Set<CacheKey> { get }
    }

    struct ReferenceLRU: Reference {
        var order: [CacheKey] = []
        mutating func insert(_ key: CacheKey) {
            order.removeAll { $0 == key }
            order.append(key)
        }
        mutating func access(_ key: CacheKey) { if order.contains(key) { insert(key) } }
        mutating func remove(_ key: CacheKey) { order.removeAll { $0 == key } }
        mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
            guard let index = order.firstIndex(where: isEligible) else { return nil }
            return order.remove(at: index)
        }
        var keys: Set<CacheKey> { Set(order) }
    }

    /// SIEVE: the queue oldest first, a visited set, and the hand as an index into it.
    struct ReferenceSIEVE: Reference {
        var queue: [CacheKey] = []
        var visited: Set<CacheKey> = []
        var hand: Int?
        mutating func insert(_ key: CacheKey) {
            if queue.contains(key) { visited.insert(key) } else { queue.append(key) }
        }
        mutating func access(_ key: CacheKey) { if queue.contains(key) { visited.insert(key) } }
        mutating func remove(_ key: CacheKey) {
            guard let index = queue.firstIndex(of: key) else { return }
            queue.remove(at: index)
            visited.remove(key)
            if let current = hand {
                if index < current { hand = current - 1 }
                if hand == queue.count { hand = nil }
            }
        }
        mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
            var budget = 2 * queue.count + 1
            var index = hand ?? 0
            while budget > 0, !queue.isEmpty {
                budget -= 1
                if index >= queue.count { index = 0 }
                let key = queue[index]
                if !isEligible(key) || visited.contains(key) {
                    if isEligible(key) { visited.remove(key) }
                    index += 1
                    continue
                }
                queue.remove(at: index)
                hand = index < queue.count ? index : nil
                return key
            }
            hand = index < queue.count ? index : nil
            return nil
        }
        var keys: Set<CacheKey> { Set(queue) }
    }

    /// S3-FIFO: small and main oldest first, counters, and the ghost as an array.
    struct ReferenceS3FIFO: Reference {
        var small: [CacheKey] = []
        var main: [CacheKey] = []
        var reads: [CacheKey: Int] = [:]
        var ghost: [CacheKey] = []
        var evictedOnce = false
        var count: Int { small.count + main.count }
        mutating func insert(_ key: CacheKey) {
            if small.contains(key) || main.contains(key) { return access(key) }
            reads[key] = 0
            if let index = ghost.firstIndex(of: key) {
                ghost.remove(at: index)
                main.append(key)
            } else if !evictedOnce && small.count >= max(1, Int((Double(count) * 0.1).rounded(.up))) {
                // A cold fill: small holds its tenth, so main takes the rest.
                main.append(key)
            } else {
                small.append(key)
            }
        }
        mutating func access(_ key: CacheKey) {
            if reads[key] != nil { reads[key] = min(reads[key]! + 1, 3) }
        }
        mutating func remove(_ key: CacheKey) {
            small.removeAll { $0 == key }
            main.removeAll { $0 == key }
            reads[key] = nil
        }
        mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
            var budget = 5 * count + 5
            while budget > 0, count > 0 {
                budget -= 1
                // A queue whose objects are all ineligible leaves the step to the other one.
                let smallStuck = small.allSatisfy { !isEligible($0) }
                let mainStuck = main.allSatisfy { !isEligible($0) }
                if smallStuck && mainStuck { return nil }
                let target = max(1, Int((Double(count) * 0.1).rounded(.up)))
                if !smallStuck && (small.count >= target || mainStuck) {
                    let key = small.removeFirst()
                    if !isEligible(key) {
                        small.append(key)
                        continue
                    }
                    if reads[key]! >= 1 {
                        reads[key] = 0
                        main.append(key)
                        continue
                    }
                    reads[key] = nil
                    ghost.removeAll { $0 == key }
                    ghost.append(key)
                    while ghost.count > max(count, 1) { ghost.removeFirst() }
                    evictedOnce = true
                    return key
                }
                let key = main.removeFirst()
                if !isEligible(key) {
                    main.append(key)
                    continue
                }
                if reads[key]! > 0 {
                    reads[key]! -= 1
                    main.append(key)
                    continue
                }
                reads[key] = nil
                evictedOnce = true
                return key
            }
            return nil
        }
        var keys: Set<CacheKey> { Set(small + main) }
    }

    /// Applies one random sequence to both and compares every victim and the resident set.
    func compare<Policy: ReplacementPolicy, Model: Reference>(_ policy: Policy, _ model: Model, seed: UInt64) {
        var policy = policy
        var model = model
        var generator = SeededGenerator(seed: seed)
        var pinned: Set<CacheKey> = []
        for step in 0..<400 {
            let key = CacheKey.random(in: 0..<40, using: &generator)
            switch Int.random(in: 0..<10, using: &generator) {
            case 0...3:
                policy.insert(key, fingerprint: UInt64(key), size: 1, cost: 1)
                model.insert(key)
            case 4...5:
                policy.access(key)
                model.access(key)
            case 6:
                policy.remove(key)
                model.remove(key)
            case 7:
                if pinned.contains(key) { pinned.remove(key) } else { pinned.insert(key) }
            default:
                let eligible = { (candidate: CacheKey) in !pinned.contains(candidate) }
                let expected = model.evict(isEligible: eligible)
                let victim = policy.evict(isEligible: eligible)
                #expect(victim == expected, "seed \(seed), step \(step)")
                if victim != expected { return }
            }
            #expect(policy.count == model.keys.count, "seed \(seed), step \(step)")
        }
        #expect(Set(model.keys.filter { policy.contains($0) }) == model.keys, "seed \(seed)")
    }

    @Test(arguments: 1...60 as ClosedRange<UInt64>)
    func policiesAgreeWithTheirReferences(seed: UInt64) {
        compare(LRUPolicy(), ReferenceLRU(), seed: seed)
        compare(SIEVEPolicy(), ReferenceSIEVE(), seed: seed)
        compare(S3FIFOPolicy(), ReferenceS3FIFO(), seed: seed)
    }
}
