@testable import CacheCore
import Testing

/// Plaintext and stored offsets and sizes, and the blocks a write or truncate reseals.
@Suite struct BlockLayoutTests {
    private let layout = BlockLayout(blockSize: 512)
    private let header = Int64(BlockLayout.headerSize)
    private let overhead = Int64(BlockLayout.overhead)

    @Test func storedSizesFollowTheFormat() {
        let layout = BlockLayout(blockSize: 4096)
        #expect(BlockLayout().blockSize == 16384)
        #expect(layout.storedSize(plaintextSize: 0) == header + overhead)
        #expect(layout.storedSize(plaintextSize: 1) == header + overhead + 1)
        #expect(layout.storedSize(plaintextSize: 4096) == header + overhead + 4096)
        #expect(layout.storedSize(plaintextSize: 4097) == header + 2 * overhead + 4097)
        #expect(layout.blockCount(plaintextSize: 0) == 1 && layout.blockCount(plaintextSize: 8192) == 2)
    }

    /// Every plaintext size maps to one stored size and back; every other stored size
    /// (torn, or cut mid-block) maps to none.
    @Test func storedAndPlaintextSizesMapOneToOne() {
        let maximum = Int64(4 * layout.blockSize + 3)
        var valid: [Int64: Int64] = [:]
        for size in 0...maximum { valid[layout.storedSize(plaintextSize: size)] = size }
        #expect(valid.count == Int(maximum) + 1)
        for stored in 0...layout.storedSize(plaintextSize: maximum) {
            #expect(layout.plaintextSize(storedSize: stored) == valid[stored], "stored size \(stored)")
        }
    }

    @Test func plaintextRangesMapToBlocksAndStoredRanges() {
        #expect(layout.blocks(touchingOffset: 0, length: 1) == 0..<1)
        #expect(layout.blocks(touchingOffset: 511, length: 2) == 0..<2)
        #expect(layout.blocks(touchingOffset: 512, length: 512) == 1..<2)
        #expect(layout.blocks(touchingOffset: 1000, length: 0).isEmpty)
        let size: Int64 = 3 * 512 + 10
        #expect(layout.storedRange(ofBlocks: 1..<2, plaintextSize: size)
            == header + Int64(layout.storedBlockSize) ..< header + 2 * Int64(layout.storedBlockSize))
        #expect(layout.storedRange(ofBlocks: 2..<4, plaintextSize: size).upperBound == layout.storedSize(plaintextSize: size))
        #expect(layout.plaintextLength(ofBlock: 3, plaintextSize: size) == 10)
        #expect(layout.plaintextLength(ofBlock: 4, plaintextSize: size) == 0)
    }

    private func change(_ index: Int64, kept: Int, wasLast: Bool, new: Int, isLast: Bool,
                        written: Range<Int> = 0..<0) -> BlockChange {
        BlockChange(index: index, keptLength: kept, wasLast: wasLast, newLength: new, isLast: isLast, written: written)
    }

    @Test func aWriteInsideTheFileReadsBackOnlyPartlyWrittenBlocks() {
        let inside = BlockPlan(layout: layout, writingAt: 600, length: 10, plaintextSize: 2048)
        #expect(Array(inside) == [change(1, kept: 512, wasLast: false, new: 512, isLast: false, written: 88..<98)])
        let whole = BlockPlan(layout: layout, writingAt: 512, length: 1024, plaintextSize: 2048)
        #expect(Array(whole) == [change(1, kept: 0, wasLast: false, new: 512, isLast: false, written: 0..<512),
                                 change(2, kept: 0, wasLast: false, new: 512, isLast: false, written: 0..<512)])
        #expect(BlockPlan(layout: layout, writingAt: 10, length: 0, plaintextSize: 2048).isEmpty)
    }

    /// Past a full last block: that block is sealed again as not last.
    @Test func extendingPastAFullLastBlockResealsIt() {
        let plan = BlockPlan(layout: layout, writingAt: 512, length: 10, plaintextSize: 512)
        #expect(Array(plan) == [change(0, kept: 512, wasLast: true, new: 512, isLast: false),
                                change(1, kept: 0, wasLast: false, new: 10, isLast: true, written: 0..<10)])
        let within = BlockPlan(layout: layout, writingAt: 100, length: 10, plaintextSize: 100)
        #expect(Array(within) == [change(0, kept: 100, wasLast: true, new: 110, isLast: true, written: 100..<110)])
    }

    /// A gap is filled with sealed zeros, and the old partial last block is zero-padded.
    @Test func aWritePastTheEndFillsTheGapWithZeroBlocks() {
        let plan = BlockPlan(layout: layout, writingAt: 3 * 512 + 5, length: 3, plaintextSize: 100)
        #expect(Array(plan) == [change(0, kept: 100, wasLast: true, new: 512, isLast: false),
                                change(1, kept: 0, wasLast: false, new: 512, isLast: false),
                                change(2, kept: 0, wasLast: false, new: 512, isLast: false),
                                change(3, kept: 0, wasLast: false, new: 8, isLast: true, written: 5..<8)])
    }

    @Test func aTruncateResealsTheNewLastBlockOrWritesZeros() {
        #expect(Array(BlockPlan(layout: layout, truncating: 1536, to: 522))
            == [change(1, kept: 10, wasLast: false, new: 10, isLast: true)])
        #expect(Array(BlockPlan(layout: layout, truncating: 1536, to: 1024))
            == [change(1, kept: 512, wasLast: false, new: 512, isLast: true)])
        #expect(Array(BlockPlan(layout: layout, truncating: 1536, to: 0))
            == [change(0, kept: 0, wasLast: false, new: 0, isLast: true)])
        #expect(Array(BlockPlan(layout: layout, truncating: 10, to: 1025))
            == [change(0, kept: 10, wasLast: true, new: 512, isLast: false),
                change(1, kept: 0, wasLast: false, new: 512, isLast: false),
                change(2, kept: 0, wasLast: false, new: 1, isLast: true)])
        #expect(BlockPlan(layout: layout, truncating: 700, to: 700).isEmpty)
    }

    /// A huge grow is planned lazily: counting it costs nothing.
    @Test func aLargeGrowIsPlannedWithoutListingItsBlocks() {
        let plan = BlockPlan(layout: BlockLayout(blockSize: 4096), truncating: 0, to: 1 << 40)
        #expect(plan.count == (1 << 40) / 4096)
        #expect(plan.last == change((1 << 40) / 4096 - 1, kept: 0, wasLast: false, new: 4096, isLast: true))
    }
}
