@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Synchronization
import Testing

/// The state of a file held in blocks, without FUSE or an origin: single-flight per block,
/// failures reaching exactly the readers that waited for them, no drop of a block being read,
/// read-ahead only for a sequential reader, and one version per file.
@Suite struct BlockedFileTests {
    /// 10 blocks of 100 bytes, the last one 50.
    func file() -> BlockedFile {
        let source = FetchSource(origin: FileOrigin(root: "/nonexistent"), path: [Array("a".utf8)], pool: 2, size: 950)
        return BlockedFile(id: 42, source: source, blockSize: 100)
    }

    @Test func blocksCoverTheirBytesAndTheLastIsShort() {
        let blocked = file()
        #expect(blocked.blockCount == 10)
        #expect(blocked.range(ofBlock: 9) == 900..<950)
        #expect(blocked.blocks(covering: 150, length: 100) == 1..<3)
        #expect(blocked.blocks(covering: 940, length: 100) == 9..<10)
        #expect(blocked.blocks(covering: 2000, length: 10).isEmpty)
    }

    @Test func ofManyConcurrentReadersOfABlockExactlyOneFetchesIt() {
        let blocked = file()
        let fetchers = Atomic(0)
        let served = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            var waitedFor: [Int: UInt32] = [:]
            while true {
                switch blocked.look(at: 3..<4, waitedFor: &waitedFor) {
                case .ready:
                    blocked.endRead(3..<4)
                    served.add(1, ordering: .relaxed)
                    return
                case .fetch(let blocks):
                    if blocks == [3] {
                        fetchers.add(1, ordering: .relaxed)
                        Thread.sleep(forTimeInterval: 0.05)
                        #expect(blocked.reserve(3) == 100)
                        #expect(blocked.markHeld(3, version: OriginDelivery(bytes: 100, etag: "v1")) == true)
                    }
                case .failed(let error):
                    Issue.record("a reader failed: \(error)")
                    return
                }
            }
        }
        #expect(fetchers.load(ordering: .relaxed) == 1)
        #expect(served.load(ordering: .relaxed) == 16)
        #expect(blocked.heldBytes == 100)
    }

    @Test func aFailedFetchFailsItsWaitersAndTheNextReaderFetchesAgain() {
        let blocked = file()
        var first: [Int: UInt32] = [:]
        guard case .fetch([0]) = blocked.look(at: 0..<1, waitedFor: &first) else {
            Issue.record("the first reader did not get the block to fetch")
            return
        }
        let waiter = DispatchSemaphore(value: 0)
        let waiterSaw = Mutex<CacheError?>(nil)
        Thread.detachNewThread {
            var waited: [Int: UInt32] = [:]
            if case .failed(let error) = blocked.look(at: 0..<1, waitedFor: &waited) {
                waiterSaw.withLock { $0 = error }
            }
            waiter.signal()
        }
        #expect(waiter.wait(timeout: .now() + 0.2) == .timedOut)
        #expect(blocked.reserve(0) == 100)
        #expect(blocked.markFailed(0, .io(EIO)) == -100)
        #expect(waiter.wait(timeout: .now() + 5) == .success)
        #expect(waiterSaw.withLock { $0 } == .io(EIO))
        guard case .failed(.io(EIO)) = blocked.look(at: 0..<1, waitedFor: &first) else {
            Issue.record("the fetching reader did not learn its failure")
            return
        }
        var later: [Int: UInt32] = [:]
        guard case .fetch([0]) = blocked.look(at: 0..<1, waitedFor: &later) else {
            Issue.record("a later reader did not fetch the block again")
            return
        }
        #expect(blocked.heldBytes == 0)
    }

    @Test func aBlockBeingReadIsNeverDropped() {
        let blocked = file()
        var waited: [Int: UInt32] = [:]
        _ = blocked.look(at: 0..<2, waitedFor: &waited)
        for index in 0..<2 {
            #expect(blocked.reserve(index) == 100)
            #expect(blocked.markHeld(index, version: OriginDelivery(bytes: 100)) == true)
        }
        guard case .ready = blocked.look(at: 1..<2, waitedFor: &waited) else {
            Issue.record("a held block was not ready")
            return
        }
        #expect(blocked.droppable().map(\.index) == [0])
        #expect(blocked.beginDrop(1) == 0)
        #expect(blocked.beginDrop(0) == -100)
        blocked.endDrop(0)
        blocked.endRead(1..<2)
        #expect(blocked.droppable().map(\.index) == [1])
        #expect(blocked.heldBytes == 100)
    }

    @Test func onlyASequentialReaderHasBlocksReadAhead() {
        let blocked = file()
        #expect(blocked.noteRead(offset: 500, end: 510, ahead: 3) == [])
        #expect(blocked.noteRead(offset: 120, end: 130, ahead: 3) == [])
        #expect(blocked.noteRead(offset: 130, end: 200, ahead: 3) == [2, 3, 4])
        // Claimed already: not again.
        #expect(blocked.noteRead(offset: 200, end: 260, ahead: 3) == [5])
        #expect(blocked.noteRead(offset: 260, end: 950, ahead: 3) == [])
    }

    @Test func aBlockOfAnotherVersionIsRefusedAndARetiredFileCountsNothing() {
        let blocked = file()
        var waited: [Int: UInt32] = [:]
        _ = blocked.look(at: 0..<2, waitedFor: &waited)
        #expect(blocked.reserve(0) == 100 && blocked.reserve(1) == 100)
        #expect(blocked.markHeld(0, version: OriginDelivery(bytes: 100, etag: "\"a\"")) == true)
        #expect(blocked.markHeld(1, version: OriginDelivery(bytes: 100, etag: "\"b\"")) == nil)
        // The block of another version is still reserved: retiring uncounts both.
        #expect(blocked.retire(.gone(.io(EIO))) == 200)
        #expect(blocked.retire(.gone(.io(EIO))) == 0)
        #expect(blocked.heldBytes == 0)
        guard case .failed(.io(EIO)) = blocked.look(at: 0..<1, waitedFor: &waited) else {
            Issue.record("a read of a retired file did not fail")
            return
        }
    }
}
