import CacheModel
import Synchronization

/// Memory for one block's bytes on their way from the origin to the store. Its storage comes
/// from a small process-wide set of idle buffers and goes back to it when the block is
/// stored, so that a block read does not fault in fresh pages: a new 4 MiB buffer costs 1,024
/// page faults, a fifth of the daemon's CPU while it fetched blocks from a loopback origin.
/// At most ``Tunables/idleBlockBuffers`` stay idle (pages kept resident, 16 MiB with 4 MiB blocks).
public final class BlockBuffer: @unchecked Sendable {
    // @unchecked: one owner at a time (the event loop that fills it, then the thread that
    // stores it), handed over through a lock; `storage` is never shared.
    private let storage: UnsafeMutableRawBufferPointer
    /// The most bytes it takes (its storage may be larger, when reused).
    public let capacity: Int
    public private(set) var count = 0

    /// Room for `capacity` bytes, empty.
    public init(capacity: Int) {
        self.capacity = capacity
        storage = Self.idle.withLock { $0.take(atLeast: capacity) }
            ?? UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 4096)
    }

    deinit {
        let kept = Self.idle.withLock { $0.keep(storage) }
        if !kept { storage.deallocate() }
    }

    /// The bytes held.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[..<count]) }

    /// Adds `part` at the end, as much as fits; the bytes added.
    @discardableResult
    public func append(_ part: UnsafeRawBufferPointer) -> Int {
        let taken = min(part.count, capacity - count)
        guard taken > 0, let source = part.baseAddress else { return 0 }
        (storage.baseAddress! + count).copyMemory(from: source, byteCount: taken)
        count += taken
        return taken
    }

    /// Fills the free room with `fill`, which answers how many bytes it wrote (a `pread`).
    public func fill(_ fill: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        let written = fill(UnsafeMutableRawBufferPointer(rebasing: storage[count..<capacity]))
        if written > 0 { count += written }
        return written
    }

    private struct Idle: @unchecked Sendable {
        // @unchecked: the storages held here belong to no buffer.
        var storages: [UnsafeMutableRawBufferPointer] = []

        /// An idle storage of at least `capacity` bytes and not more than twice that (a
        /// pool's larger blocks are not kept busy by a smaller one's reads).
        mutating func take(atLeast capacity: Int) -> UnsafeMutableRawBufferPointer? {
            guard let index = storages.firstIndex(where: { $0.count >= capacity && $0.count <= 2 * max(capacity, 1) }) else { return nil }
            return storages.remove(at: index)
        }

        mutating func keep(_ storage: UnsafeMutableRawBufferPointer) -> Bool {
            guard storages.count < Tunables.idleBlockBuffers else { return false }
            storages.append(storage)
            return true
        }
    }

    private static let idle = Mutex(Idle())
}
