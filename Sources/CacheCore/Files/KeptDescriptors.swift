import CacheModel
import DequeModule
import Glibc
import Synchronization

/// Read-only descriptors of stored bytes, shared by the handles that read a file and kept
/// open after the last one closes, so the next hit's OPEN costs no `open(2)` of its bytes
/// (with its close, about a tenth of a hit's daemon CPU, measured with perf).
///
/// Rules: a descriptor is closed before its bytes are unlinked or moved to the spares
/// (``drop(_:)``), at once when no handle uses it, else at its last handle's release, so no
/// descriptor ever reads another file's bytes and an unlinked file's blocks are freed. At most
/// `capacity` wait unused; beyond that the one unused longest is closed. On an encrypted store
/// a kept descriptor also keeps its file's sealing state (shared by every descriptor of the
/// file, as for readers open while a writer writes), so a hit also skips reading the header.
final class KeptDescriptors: Sendable {
    private struct Kept {
        var fd: Int32
        var users: Int
        /// Its bytes are going: closed when the last user releases it, never handed out again.
        var dropped = false
        /// When it last fell unused: its place in `unusedOrder`.
        var unusedSince: UInt64 = 0
    }

    private struct State {
        var byID: [EntryID: Kept] = [:]
        /// Descriptors as they fell unused, oldest first. One used again since keeps its old
        /// place until it is reached (then skipped: its `unusedSince` moved), so the list is
        /// compacted when it grows.
        var unusedOrder = Deque<(id: EntryID, since: UInt64)>()
        var unused = 0
        var clock: UInt64 = 0
    }

    private let state = Mutex(State())
    let capacity: Int
    private let disk: any Disk

    init(capacity: Int, disk: any Disk) {
        self.capacity = capacity
        self.disk = disk
    }

    /// `Tunables.keptDescriptors`, or fewer so that `Tunables.descriptorsLeftUnkept` of the
    /// process's open-file limit stay free. The soft limit is raised to the hard one first (a
    /// service's usual first step; systemd leaves the soft limit at 1,024 for `select()`'s
    /// sake, which the daemon never calls).
    static func capacityWithinOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let free = Int(clamping: limit.rlim_cur) - Tunables.descriptorsLeftUnkept
        return max(0, min(Tunables.keptDescriptors, free))
    }

    /// A descriptor of `id`'s bytes to read: a kept one, or one `open` makes, kept from now on.
    /// `kept` says which way it must be given back (``release(_:fd:kept:)``).
    func acquire(_ id: EntryID, open: () throws(CacheError) -> Int32) throws(CacheError) -> (fd: Int32, kept: Bool) {
        guard capacity > 0 else { return (try open(), false) }
        if let fd = state.withLock({ Self.use(id, in: &$0) }) { return (fd, true) }
        let opened = try open()
        let shared = state.withLock { state -> Int32? in
            // Another request kept the same bytes meanwhile: use that one.
            if let fd = Self.use(id, in: &state) { return fd }
            // Bytes being dropped are not kept again.
            guard state.byID[id] == nil else { return -1 }
            state.byID[id] = Kept(fd: opened, users: 1)
            return nil
        }
        switch shared {
        case nil: return (opened, true)
        case -1: return (opened, false)
        case let fd?:
            disk.close(opened)
            return (fd, true)
        }
    }

    /// A handle's descriptor given back; a private one is closed.
    func release(_ id: EntryID, fd: Int32, kept: Bool) {
        guard kept else { return disk.close(fd) }
        let closing = state.withLock { state -> [Int32] in
            guard var entry = state.byID[id], entry.fd == fd else { return [fd] }
            entry.users -= 1
            if entry.users > 0 {
                state.byID[id] = entry
                return []
            }
            if entry.dropped {
                state.byID[id] = nil
                return [fd]
            }
            state.clock += 1
            entry.unusedSince = state.clock
            state.byID[id] = entry
            state.unused += 1
            state.unusedOrder.append((id, state.clock))
            return Self.trim(&state, to: capacity)
        }
        for fd in closing { disk.close(fd) }
    }

    /// Before `ids`' bytes are unlinked or reused: unused descriptors close now, used ones at
    /// their last release.
    func drop(_ ids: [EntryID]) {
        guard capacity > 0 else { return }
        let closing = state.withLock { state -> [Int32] in
            var closing: [Int32] = []
            for id in ids {
                guard var entry = state.byID[id] else { continue }
                if entry.users == 0 {
                    state.byID[id] = nil
                    state.unused -= 1
                    closing.append(entry.fd)
                } else {
                    entry.dropped = true
                    state.byID[id] = entry
                }
            }
            return closing
        }
        for fd in closing { disk.close(fd) }
    }

    /// Closes every unused descriptor: the process ran out of descriptors (EMFILE).
    func closeUnused() {
        let closing = state.withLock { state -> [Int32] in
            let unused = state.byID.filter { $0.value.users == 0 }
            for id in unused.keys { state.byID[id] = nil }
            state.unused = 0
            state.unusedOrder.removeAll()
            return unused.values.map(\.fd)
        }
        for fd in closing { disk.close(fd) }
    }

    /// At unmount, once every handle is released.
    func closeAll() {
        let closing = state.withLock { state -> [Int32] in
            defer { state = State() }
            return state.byID.values.map(\.fd)
        }
        for fd in closing { disk.close(fd) }
    }

    /// How many descriptors are kept, used or not (for tests and figures).
    var count: Int { state.withLock { $0.byID.count } }

    private static func use(_ id: EntryID, in state: inout State) -> Int32? {
        guard var entry = state.byID[id], !entry.dropped else { return nil }
        if entry.users == 0 { state.unused -= 1 }
        entry.users += 1
        state.byID[id] = entry
        return entry.fd
    }

    /// Closes the unused descriptors beyond `capacity`, longest unused first.
    private static func trim(_ state: inout State, to capacity: Int) -> [Int32] {
        var closing: [Int32] = []
        while state.unused > capacity, let (id, since) = state.unusedOrder.popFirst() {
            guard let entry = state.byID[id], entry.users == 0, entry.unusedSince == since else { continue }
            state.byID[id] = nil
            state.unused -= 1
            closing.append(entry.fd)
        }
        if state.unusedOrder.count > 2 * capacity + 64 {
            let byID = state.byID
            state.unusedOrder.removeAll { place in
                guard let entry = byID[place.id] else { return true }
                return entry.users > 0 || entry.unusedSince != place.since
            }
        }
        return closing
    }
}
