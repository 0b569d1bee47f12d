@testable import CachePolicy
import Testing

/// `SlotIndex` against a dictionary: random inserts and removals of keys chosen to share
/// buckets, every key looked up after each step.
@Suite struct SlotIndexTests {
    struct Element: KeyedSlot {
        var key: CacheKey
    }

    @Test(arguments: 1...10 as ClosedRange<UInt64>)
    func slotIndexAgreesWithADictionary(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        // Up to three quarters full, probe runs grow long and wrap round the last bucket, and
        // removals shift entries back.
        let keys = (0..<150).map { CacheKey($0 % 50) + CacheKey($0 / 50) << 40 }
        var elements: [Element] = []
        var freeSlots: [Int32] = []
        var index = SlotIndex()
        var expected: [CacheKey: Int32] = [:]
        for step in 0..<2_000 {
            let key = keys.randomElement(using: &generator)!
            if let slot = expected[key], Bool.random(using: &generator) {
                index.remove(slot, in: elements)
                expected[key] = nil
                freeSlots.append(slot)
            } else if expected[key] == nil {
                let slot: Int32
                if let reused = freeSlots.popLast() {
                    slot = reused
                    elements[Int(slot)] = Element(key: key)
                } else {
                    slot = Int32(elements.count)
                    elements.append(Element(key: key))
                }
                index.insert(slot, in: elements)
                expected[key] = slot
            }
            #expect(index.count == expected.count, "seed \(seed), step \(step)")
            let wrong = keys.filter { index.slot(of: $0, in: elements) != expected[$0] }
            #expect(wrong.isEmpty, "seed \(seed), step \(step): keys \(wrong)")
        }
    }
}
