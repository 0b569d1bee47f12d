import CacheModel
import CacheNames
import Foundation
import Synchronization

/// What a fetch needs to know, fixed at the lookup that showed the file.
struct FetchSource: Sendable {
    let origin: any Origin
    let path: [[UInt8]]
    let pool: EntryID
    let size: Int64
    /// Set when the bytes came with the lookup: its measured time to first byte.
    var firstByteAfter: Duration?
    /// Whether the pool keeps the file once fetched (its `admit_*` settings); one not kept
    /// counts against nothing and is dropped when its fetch ends. A pin or `persistent`
    /// set meanwhile keeps it (``FetchTable/keep(_:)``).
    var kept = true
}

/// Files of origin pools whose bytes are not all stored yet, by entry id: each waits for its
/// first open (`pending`) or is being fetched (`running`). The one owner of fetch state; its
/// lock guards memory only and is never held across I/O.
///
/// A file counts against its pool only from the start of its fetch (`counted`, set when the
/// fetch took its `max_fetches` slot): one shown by a lookup, or waiting for a slot, holds no
/// bytes, so it is in no figure and frees nothing when it goes.
final class FetchTable: Sendable {
    enum Slot: Sendable {
        case pending(FetchSource)
        case running(FetchProgress, FetchSource, counted: Bool)
        /// Held in blocks, fetched as they are read (``BlockedFile``).
        case blocks(BlockedFile)
    }

    /// What ``claim(_:blockSize:)`` found or made.
    enum Claimed {
        /// A whole fetch: the one running, or a new one (with its source) the caller starts.
        case whole(FetchProgress, startWith: FetchSource?)
        case blocks(BlockedFile)
    }

    private struct State {
        var slots: [EntryID: Slot] = [:]
        /// Files whose next open is the miss's, not a hit: stored with their lookup and not
        /// opened since, or (when the kernel serves opens) fetched by a read whose close the
        /// daemon learns of later.
        var firstOpenIsMiss: Set<EntryID> = []
        var stopping = false
    }

    private let state = Mutex(State())
    /// Fetches started and not ended, so shutdown can wait for them.
    private let running = ConditionLock(0)

    func addPending(_ id: EntryID, source: FetchSource) {
        state.withLock { $0.slots[id] = .pending(source) }
    }

    /// The fetch of `id` if its bytes are not all stored: the one already running, or a new
    /// one (with its source) that the caller must start. Single-flight: of many concurrent
    /// callers exactly one gets a source. A file not claimed yet is held in blocks of
    /// `blockSize` when one is given (the caller decided its pool holds it so).
    func claim(_ id: EntryID, blockSize: Int64? = nil) -> Claimed? {
        state.withLock { state in
            switch state.slots[id] {
            case nil: return nil
            case .running(let progress, _, _): return .whole(progress, startWith: nil)
            case .blocks(let file): return .blocks(file)
            case .pending(let source):
                if let size = blockSize {
                    let file = BlockedFile(id: id, source: source, blockSize: size)
                    state.slots[id] = .blocks(file)
                    return .blocks(file)
                }
                let progress = FetchProgress(total: source.size)
                state.slots[id] = .running(progress, source, counted: false)
                return .whole(progress, startWith: source)
            }
        }
    }

    /// The source of `id` while nobody has opened it yet.
    func pendingSource(of id: EntryID) -> FetchSource? {
        state.withLock { state in
            if case .pending(let source) = state.slots[id] { return source }
            return nil
        }
    }

    /// The files of `pool` held in blocks.
    func blockedFiles(in pool: EntryID) -> [BlockedFile] {
        state.withLock { state in
            state.slots.values.compactMap { slot in
                if case .blocks(let file) = slot, file.source.pool == pool { return file }
                return nil
            }
        }
    }

    func blockedFile(_ id: EntryID) -> BlockedFile? {
        state.withLock { state in
            if case .blocks(let file) = state.slots[id] { return file }
            return nil
        }
    }

    /// The held blocks' bytes of a file held in blocks (what its pool counts), else nil.
    func heldBlockBytes(_ id: EntryID) -> Int64? {
        blockedFile(id)?.heldBytes
    }

    /// A file held in blocks that is whole now leaves the table; returns the held bytes the
    /// caller stops counting as blocks (in the hold that counts the file whole), or nil for
    /// any other file.
    func finishBlocks(_ id: EntryID) -> Int64? {
        state.withLock { state -> Int64? in
            guard case .blocks(let file) = state.slots[id] else { return nil }
            state.slots[id] = nil
            return file.retire(.whole)
        }
    }

    func progress(of id: EntryID) -> FetchProgress? {
        state.withLock { state in
            if case .running(let progress, _, _) = state.slots[id] { return progress }
            return nil
        }
    }

    /// The announced size of `id` if its fetch has not been claimed yet.
    func pendingSize(of id: EntryID) -> Int64? {
        state.withLock { state in
            if case .pending(let source) = state.slots[id] { return source.size }
            return nil
        }
    }

    /// Whether `id`'s size is in its pool's usage: true for any file but one whose fetch has
    /// not started yet.
    func countsInUsage(_ id: EntryID) -> Bool {
        state.withLock { state in
            switch state.slots[id] {
            case nil, .running(_, _, counted: true): return true
            case .pending, .running(_, _, counted: false), .blocks: return false
            }
        }
    }

    /// The fetch of `id` starts counting against its pool; false if it already did or is gone.
    func markCounted(_ id: EntryID) -> Bool {
        state.withLock { state in
            guard case .running(let progress, let source, counted: false) = state.slots[id] else { return false }
            state.slots[id] = .running(progress, source, counted: true)
            return true
        }
    }

    /// Whether the pool keeps `id` once its fetch ends; true for a file not being fetched.
    func keeps(_ id: EntryID) -> Bool {
        state.withLock { state in
            switch state.slots[id] {
            case nil: return true
            case .pending(let source), .running(_, let source, _): return source.kept
            case .blocks(let file): return file.source.kept
            }
        }
    }

    /// `id` is kept once fetched, whatever its pool admits (a pin, `persistent`).
    func keep(_ id: EntryID) {
        state.withLock { state in
            switch state.slots[id] {
            case nil: return
            case .pending(var source):
                source.kept = true
                state.slots[id] = .pending(source)
            case .running(let progress, var source, let counted):
                source.kept = true
                state.slots[id] = .running(progress, source, counted: counted)
            case .blocks:
                // Blocks are kept as they are read; making the file whole is the caller's.
                return
            }
        }
    }

    /// Forgets `id` if nobody ever opened it, it is held in blocks (its entry is leaving;
    /// its held blocks were uncounted in the same hold: ``heldBlockBytes(_:)``), or its fetch
    /// ended.
    func dropIfPending(_ id: EntryID) {
        state.withLock { state in
            switch state.slots[id] {
            case .pending?: state.slots[id] = nil
            // A failed fetch kept for the kernel's reads (see `ReadThrough.runFetch`).
            case .running(let progress, _, _)? where progress.snapshot.outcome != nil: state.slots[id] = nil
            case .blocks(let file)?:
                state.slots[id] = nil
                _ = file.retire(.gone(.stale))
            default: break
            }
            state.firstOpenIsMiss.remove(id)
        }
    }

    func noteFirstOpenIsMiss(_ id: EntryID) {
        state.withLock { _ = $0.firstOpenIsMiss.insert(id) }
    }

    /// Whether this open (or reader's close, with `kernel_hits`) is the miss's (and forgets it).
    func takeFirstOpenIsMiss(_ id: EntryID) -> Bool {
        state.withLock { $0.firstOpenIsMiss.remove(id) != nil }
    }

    /// Whether `id`'s bytes are incomplete (so it must never be marked finished).
    func isUnfinished(_ id: EntryID) -> Bool {
        state.withLock { $0.slots[id] != nil }
    }

    func remove(_ id: EntryID) {
        state.withLock { _ = $0.slots.removeValue(forKey: id) }
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// `body`, counted from now until it returns (also while it waits for a slot), so
    /// `stopAll` can wait for it.
    func counted(_ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        running.withLock { $0 += 1 }
        return { [running] in
            body()
            running.withLock { $0 -= 1 }
            running.broadcast()
        }
    }

    /// Asks every fetch to stop, runs `interrupt` (which ends the waits of fetches for their
    /// origins) and waits until their threads ended; what they fetched stays marked
    /// unfinished, so the next mount drops it.
    func stopAll(interrupting interrupt: () -> Void) {
        state.withLock { $0.stopping = true }
        interrupt()
        running.withLock(waitingUntil: { $0 == 0 }) { _ in }
    }
}

extension FetchTable: FetchState {}
