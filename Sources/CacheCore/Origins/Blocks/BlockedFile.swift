import CacheModel
import Foundation

/// An origin file held in blocks (`block_size`): its bytes file has the origin's size, and
/// holds the blocks that were read (and read ahead), each fetched with one ranged request.
/// A block counts as held only once all its bytes are written (a reader never sees a part of
/// one), and one being read is never dropped. Held blocks count against the pool (through
/// ``Names/countBlockBytes(_:_:)``, in the hold that changes them); cold ones are dropped
/// first when the pool needs room (``BlockEviction``). Memory only: the entry stays marked
/// `writing` until it is whole, so a restart drops a file held in part, as any unfinished fetch.
///
/// Its lock is a leaf: taken inside the namespace hold (counting), never around I/O.
final class BlockedFile: Sendable {
    enum BlockState: UInt8, Sendable {
        case absent, fetching, held
        /// Its bytes are being freed: readers wait as for a fetch, then fetch it again.
        case dropping
    }

    enum Retirement: Sendable, Equatable {
        /// All held, and an ordinary cached file now: nothing more is counted or dropped.
        case whole
        /// Removed, or changed at the origin: every read that is not already served fails.
        case gone(CacheError)
    }

    struct State: Sendable {
        var blocks: [BlockState]
        /// When each block was last read or fetched (monotonic nanoseconds): cold ones go first.
        var lastUse: [UInt64]
        /// Reads in progress per block: such a block is never dropped.
        var readers: [Int32]
        /// Each block's fetch count, so a reader knows whether a failure is of the fetch it
        /// waited for.
        var attempts: [UInt32]
        var failures: [Int: (attempt: UInt32, error: CacheError)] = [:]
        /// Counted: the held blocks and those reserved (``reserve(_:)``), being written.
        var heldBytes: Int64 = 0
        var heldCount = 0
        var reserved: Set<Int> = []
        /// The version the held blocks came from (the first answer's).
        var version: OriginDelivery?
        var retired: Retirement?
        /// Where the last read ended, to tell sequential reading (read-ahead) from random.
        var lastReadEnd: Int64 = -1
    }

    /// What one look at a read's blocks decided.
    enum Look {
        /// All held, and pinned for this read until ``endRead(_:)``.
        case ready
        /// These blocks were absent and are this caller's to fetch; look again after.
        case fetch([Int])
        case failed(CacheError)
    }

    let id: EntryID
    let source: FetchSource
    let blockSize: Int64
    let blockCount: Int
    let state: ConditionLock<State>

    init(id: EntryID, source: FetchSource, blockSize: Int64) {
        self.id = id
        self.source = source
        self.blockSize = blockSize
        blockCount = Int((source.size + blockSize - 1) / blockSize)
        state = ConditionLock(State(blocks: Array(repeating: .absent, count: blockCount),
                                    lastUse: Array(repeating: 0, count: blockCount),
                                    readers: Array(repeating: 0, count: blockCount),
                                    attempts: Array(repeating: 0, count: blockCount)))
    }

    func range(ofBlock index: Int) -> Range<Int64> {
        Int64(index) * blockSize ..< min(Int64(index + 1) * blockSize, source.size)
    }

    /// The blocks holding bytes `offset..<offset + length` (clamped to the file).
    func blocks(covering offset: Int64, length: Int) -> Range<Int> {
        let end = min(offset + Int64(length), source.size)
        guard offset < end else { return 0..<0 }
        return Int(offset / blockSize) ..< Int((end - 1) / blockSize) + 1
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Waits until the `wanted` blocks are held (pinned for reading: call ``endRead(_:)``),
    /// or hands back the absent ones for the caller to fetch, or the failure of a fetch this
    /// caller waited for. `waitedFor` carries the attempts seen between calls.
    func look(at wanted: Range<Int>, waitedFor: inout [Int: UInt32]) -> Look {
        state.withLock(waitingUntilNoted: { state in
            if case .gone = state.retired { return true }
            var waits = false
            var absent = false
            for index in wanted {
                switch state.blocks[index] {
                case .held: continue
                case .fetching, .dropping:
                    if state.blocks[index] == .fetching { waitedFor[index] = state.attempts[index] }
                    waits = true
                case .absent: absent = true
                }
            }
            return absent || !waits
        }) { state -> Look in
            if case .gone(let error) = state.retired { return .failed(error) }
            var toFetch: [Int] = []
            for index in wanted where state.blocks[index] == .absent {
                if let seen = waitedFor[index], let failure = state.failures[index], failure.attempt == seen {
                    return .failed(failure.error)
                }
                toFetch.append(index)
            }
            if !toFetch.isEmpty {
                for index in toFetch { waitedFor[index] = claim(index, in: &state) }
                return .fetch(toFetch)
            }
            guard wanted.allSatisfy({ state.blocks[$0] == .held }) else { return .fetch([]) }
            let now = Self.now()
            for index in wanted {
                state.readers[index] += 1
                state.lastUse[index] = now
            }
            return .ready
        }
    }

    private func claim(_ index: Int, in state: inout State) -> UInt32 {
        state.blocks[index] = .fetching
        state.attempts[index] &+= 1
        return state.attempts[index]
    }

    /// A read of `blocks` (pinned by ``look(at:waitedFor:)``) is served.
    func endRead(_ blocks: Range<Int>) {
        state.withLock { state in
            for index in blocks { state.readers[index] -= 1 }
        }
    }

    /// Notes a read's end; for a sequential one (it starts where the last read ended, or in
    /// the same block) claims the absent blocks among the next `ahead` for read-ahead.
    func noteRead(offset: Int64, end: Int64, ahead: Int) -> [Int] {
        state.withLock { state in
            let sequential = state.lastReadEnd >= 0 && offset / blockSize <= state.lastReadEnd / blockSize + 1
                && offset >= state.lastReadEnd - blockSize
            state.lastReadEnd = end
            guard sequential, state.retired == nil, ahead > 0 else { return [] }
            let next = Int((end - 1) / blockSize) + 1
            return (next..<min(next + ahead, blockCount)).filter { state.blocks[$0] == .absent }.map { index in
                _ = claim(index, in: &state)
                return index
            }
        }
    }

    /// A fetched block is about to be written: its bytes count from now (returned, to count
    /// in the same hold), so the room made for it is not taken by another block meanwhile.
    /// 0 once retired or reserved already.
    func reserve(_ index: Int) -> Int64 {
        state.withLock { state in
            guard state.retired == nil, state.blocks[index] == .fetching, !state.reserved.contains(index) else { return 0 }
            state.reserved.insert(index)
            let length = Int64(range(ofBlock: index).count)
            state.heldBytes += length
            return length
        }
    }

    /// A fetched block's bytes are written: it is held from now (its bytes counted by
    /// ``reserve(_:)``), unless they are another version than the blocks held (then nothing
    /// changes and the caller drops the file). Nil for another version.
    func markHeld(_ index: Int, version: OriginDelivery) -> Bool? {
        let held = state.withLock { state -> Bool? in
            if let held = state.version, held.isOtherVersion(than: version) { return nil }
            if state.version == nil { state.version = version }
            guard state.blocks[index] == .fetching else { return false }
            state.blocks[index] = .held
            state.lastUse[index] = Self.now()
            state.failures[index] = nil
            guard state.reserved.remove(index) != nil else { return false }
            state.heldCount += 1
            return true
        }
        state.broadcast()
        return held
    }

    /// A block's fetch failed: absent again, and its waiting readers get `error`. Returns the
    /// bytes it had reserved (negative, to uncount in the same hold).
    @discardableResult
    func markFailed(_ index: Int, _ error: CacheError) -> Int64 {
        let released = state.withLock { state -> Int64 in
            if state.blocks[index] == .fetching { state.blocks[index] = .absent }
            state.failures[index] = (state.attempts[index], error)
            guard state.reserved.remove(index) != nil, state.retired == nil else { return 0 }
            let length = Int64(range(ofBlock: index).count)
            state.heldBytes -= length
            return -length
        }
        state.broadcast()
        return released
    }

    /// Starts dropping a held block nobody reads: returns its bytes (negative, to uncount),
    /// or 0 when it cannot go. Finish with ``endDrop(_:)`` once its bytes are freed.
    func beginDrop(_ index: Int) -> Int64 {
        state.withLock { state in
            guard state.retired == nil, state.blocks[index] == .held, state.readers[index] == 0 else { return 0 }
            state.blocks[index] = .dropping
            let length = Int64(range(ofBlock: index).count)
            state.heldBytes -= length
            state.heldCount -= 1
            return -length
        }
    }

    func endDrop(_ index: Int) {
        state.withLock { state in
            if state.blocks[index] == .dropping { state.blocks[index] = .absent }
        }
        state.broadcast()
    }

    /// The held blocks that could be dropped now, with their last use.
    func droppable() -> [(lastUse: UInt64, index: Int)] {
        state.withLock { state in
            guard state.retired == nil else { return [] }
            return state.blocks.indices.compactMap { index in
                state.blocks[index] == .held && state.readers[index] == 0 ? (state.lastUse[index], index) : nil
            }
        }
    }

    /// Leaves the table: held bytes stop counting (the caller uncounts the returned figure in
    /// the same hold). Returns 0 when it had left already.
    func retire(_ how: Retirement) -> Int64 {
        let held = state.withLock { state -> Int64 in
            guard state.retired == nil else { return 0 }
            state.retired = how
            return state.heldBytes
        }
        state.broadcast()
        return held
    }

    var heldBytes: Int64 { state.withLock { $0.retired == nil ? $0.heldBytes : 0 } }
    var isWhole: Bool { state.withLock { $0.heldCount == blockCount } }
    var version: OriginDelivery? { state.withLock { $0.version } }
    var retirement: Retirement? { state.withLock { $0.retired } }
}
