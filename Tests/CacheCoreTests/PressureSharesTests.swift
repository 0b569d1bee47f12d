@testable import CacheCore
import CacheModel
import Testing

/// The floor arithmetic of a disk-pressure pass, against answers worked out by hand.
@Suite struct PressureSharesTests {
    private func shares(_ needed: Int64, _ pools: [(EntryID, usage: Int64, floor: Int64)]) -> PressureShares {
        PressureShares(needed: needed, pools: pools.map { PressureShares.Pool(id: $0.0, usage: $0.usage, floor: $0.floor) })
    }

    @Test func poolsAboveTheirFloorsGiveInProportionToHowFarAbove() {
        // Above: 100, 20 and 0; 60 needed of 120 above: 60 × 100/120 = 50 and 60 × 20/120 = 10.
        let result = shares(60, [(1, 100, 0), (2, 50, 30), (3, 20, 20)])
        #expect(result.bytes == [1: 50, 2: 10])
        #expect(result.basis == [1: 100, 2: 20])
        #expect(!result.belowFloors)
    }

    @Test func needingMoreThanIsAboveTheFloorsTakesAllOfThatFirst() {
        let result = shares(200, [(1, 100, 0), (2, 50, 30), (3, 20, 20)])
        #expect(result.bytes == [1: 100, 2: 20])
        #expect(!result.belowFloors)
    }

    @Test func whenEveryPoolIsAtItsFloorTheyGiveInProportionToWhatTheyHold() {
        // Nothing above a floor (10 at 10, 30 under 50): 8 × 10/40 = 2 and 8 × 30/40 = 6.
        let result = shares(8, [(1, 10, 10), (2, 30, 50)])
        #expect(result.bytes == [1: 2, 2: 6])
        #expect(result.basis == [1: 10, 2: 30])
        #expect(result.belowFloors)
    }

    @Test func withoutFloorsPoolsGiveInProportionToTheirUsage() {
        // 30 × 300/400 = 22.5 → 22 and 30 × 100/400 = 7.5 → 7; the byte left goes to the
        // larger remainder (equal here: the pool listed first).
        let result = shares(30, [(1, 300, 0), (2, 100, 0)])
        #expect(result.bytes == [1: 23, 2: 7])
        #expect(result.bytes.values.reduce(0, +) == 30)
    }

    @Test func leftoverBytesGoToTheLargestRemainders() {
        // 2 × 1/3 each: 0 with remainder 2 each; the two bytes go to the first two pools.
        #expect(shares(2, [(1, 1, 0), (2, 1, 0), (3, 1, 0)]).bytes == [1: 1, 2: 1])
        // 5 × 2/7 = 1 r3, 5 × 4/7 = 2 r6, 5 × 1/7 = 0 r5: shares 1, 2, 0, two bytes left for
        // the remainders 6 and 5.
        #expect(shares(5, [(1, 2, 0), (2, 4, 0), (3, 1, 0)]).bytes == [1: 1, 2: 3, 3: 1])
    }

    @Test func nothingNeededOrNothingHeldGivesNothing() {
        #expect(shares(0, [(1, 100, 0)]).bytes.isEmpty)
        #expect(shares(-5, [(1, 100, 0)]).bytes.isEmpty)
        #expect(shares(10, [(1, 0, 0), (2, 0, 40)]).bytes.isEmpty)
        #expect(shares(10, []).bytes.isEmpty)
    }

    @Test func largeDisksDoNotOverflow() {
        let result = shares(1 << 50, [(1, 1 << 60, 0), (2, 1 << 60, 0)])
        #expect(result.bytes == [1: 1 << 49, 2: 1 << 49])
    }
}
