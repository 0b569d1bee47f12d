import CacheModel
import Foundation
import GRDB
import Glibc
import Logging
import Synchronization

/// The one thread that writes entries to the index. Request threads change memory, hand
/// the matching ``IndexChange`` here and go on; the writer commits what has gathered in one
/// transaction every `commitWindow` (or at once when someone waits, or the queue is long).
///
/// Rule: changes are committed in the order they were handed over. *Why:* the namespace
/// hands them over under its lock, so that order is the order memory changed in, and every
/// commit is a state memory was in. *If not:* a rename and a create of the same name could
/// commit the other way round and break the unique name index.
///
/// Rule: nothing but `flush` waits for SQLite. `fsync` and `fsyncdir` flush durably: the
/// WAL is synced after the commit, so a power loss keeps what they asked for.
final class IndexWriter: Sendable {
    enum Item: Sendable {
        case change(IndexChange)
        /// Runs inside the batch's transaction, in order; throws only what fails the whole
        /// transaction (see `perform`).
        case action(@Sendable (Database) throws -> Void)
        /// Runs on the writer thread once everything before it is committed.
        case afterCommit(@Sendable () -> Void)
    }

    private struct State {
        /// Appended by request threads, taken whole by the writer thread (swapped, not copied).
        var queue: [Item] = []
        var enqueued: UInt64 = 0
        var committed: UInt64 = 0
        var durableWanted: UInt64 = 0
        var durableCommitted: UInt64 = 0
        var waiters = 0
        var stopping = false
        /// Stopped as a crash would stop it (``abandon()``): the headroom stays, as after `kill -9`.
        var abandoned = false
        var finished = false
    }

    /// The index it commits to (its seals apply to what actions write).
    let index: IndexDatabase
    private let walPath: String
    private let logger: Logger
    private let commitWindow: Double
    private let maxBatch: Int
    private let state = ConditionLock(State())

    /// Where a write-back of a removed index file stands (see `IndexDatabase.writeBack`).
    private struct WriteBack {
        var noticed = false
        var last: Double = 0
    }

    private let warnings: StoreWarnings
    private let writeBack = Mutex(WriteBack())

    private let disk: any Disk

    init(index: IndexDatabase, walPath: String, disk: any Disk = PosixDisk(), logger: Logger, commitWindow: Double,
         maxBatch: Int = Tunables.commitBatch, warnings: StoreWarnings = StoreWarnings()) {
        self.disk = disk
        self.warnings = warnings
        self.index = index
        self.walPath = walPath
        self.logger = logger
        self.commitWindow = commitWindow
        self.maxBatch = maxBatch
    }

    func start() {
        let thread = Thread { [self] in
            var headroom = LogHeadroom(walPath: walPath, disk: disk, logger: logger)
            headroom.replenish()
            run(&headroom)
        }
        thread.name = "cachefs-index"
        thread.start()
    }

    func enqueue(_ change: IndexChange) {
        enqueue([.change(change)])
    }

    func enqueue(_ changes: [IndexChange]) {
        enqueue(changes.map { .change($0) })
    }

    func enqueue(_ items: [Item]) {
        guard !items.isEmpty else { return }
        let wake = state.withLock { state -> Bool in
            let wasEmpty = state.queue.isEmpty
            state.queue.append(contentsOf: items)
            state.enqueued += UInt64(items.count)
            return wasEmpty || state.queue.count >= maxBatch
        }
        if wake { state.broadcast() }
    }

    /// Runs `body` in the writer's next transaction, after everything handed over before,
    /// and returns its result: for rare changes whose caller needs the outcome.
    func perform<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) throws -> T {
        let outcome = ResultBox<T>()
        enqueue([.action { db in
            // A savepoint of its own: a refused change (a missing xattr, say) rolls back alone
            // and reaches the caller; a full disk fails the batch, which is retried whole.
            do {
                var value: T?
                try db.inSavepoint {
                    value = try body(db)
                    return .commit
                }
                outcome.set(.success(value!))
            } catch let error as DatabaseError where Self.isFatal(error) {
                throw error
            } catch {
                outcome.set(.failure(error))
            }
        }])
        flush()
        return try outcome.take()
    }

    /// Waits until everything handed over so far is committed; with `durable`, also synced
    /// to the disk, so it survives a power loss.
    func flush(durable: Bool = false) {
        let target = state.withLock { state -> UInt64 in
            if durable { state.durableWanted = max(state.durableWanted, state.enqueued) }
            state.waiters += 1
            return state.enqueued
        }
        state.broadcast()
        state.withLock(waitingUntil: { state in
            state.finished || (state.committed >= target && (!durable || state.durableCommitted >= target))
        }) { state in state.waiters -= 1 }
    }

    /// Commits what is left and ends the thread.
    func stop() {
        state.withLock { $0.stopping = true }
        state.broadcast()
        state.withLock(waitingUntil: { $0.finished }) { _ in }
    }

    /// Ends the thread dropping what is not committed yet, as a crash would (for tests).
    func abandon() {
        state.withLock { state in
            state.queue = []
            state.durableWanted = state.durableCommitted
            state.stopping = true
            state.abandoned = true
        }
        state.broadcast()
        state.withLock(waitingUntil: { $0.finished }) { _ in }
    }

    // MARK: - The writer thread

    private func run(_ headroom: inout LogHeadroom) {
        while true {
            let ready: (State) -> Bool = { state in
                state.stopping || !state.queue.isEmpty || state.durableWanted > state.durableCommitted
            }
            let stop = state.withLock(waitingUntil: ready) { $0.stopping && $0.queue.isEmpty }
            if stop && !durablePending() { break }
            let taken = commitNextGroup(&headroom)
            state.withLock { state in
                state.committed = taken.last
                if taken.durable { state.durableCommitted = taken.last }
            }
            state.broadcast()
        }
        // The shutdown's checkpoint moves the log into the database file, which may grow; on
        // a disk that writes filled, the headroom is the only room there is.
        if !state.withLock({ $0.abandoned }) { headroom.release() }
        state.withLock { $0.finished = true }
        state.broadcast()
    }

    /// Takes the group that gathered and commits it. The items (and the references their
    /// actions hold) are gone when this returns, before waiters are woken: a waiter that
    /// drops the last reference to the engine must not find it still alive on this thread.
    private func commitNextGroup(_ headroom: inout LogHeadroom) -> (last: UInt64, durable: Bool) {
        // Let a group gather, unless someone waits for it or it is already large.
        let deadline = Date(timeIntervalSinceNow: commitWindow)
        let taken = state.withLock(waitingUntil: { state in
            state.waiters > 0 || state.stopping || state.queue.count >= self.maxBatch
        }, deadline: deadline) { state -> (items: [Item], last: UInt64, durable: Bool) in
            let items = state.queue
            state.queue = []
            return (items, state.enqueued, state.durableWanted > state.durableCommitted)
        }
        commit(taken.items)
        headroom.replenish()
        if taken.durable { headroom.sync() }
        writeBackIfRemoved(durable: taken.durable)
        for case .afterCommit(let action) in taken.items { action() }
        return (taken.last, taken.durable)
    }

    /// Writes the open database back under the index's name when the file there is not the
    /// one SQLite has open (one `stat` per group commit when it is).
    private func writeBackIfRemoved(durable: Bool, force: Bool = false) {
        guard index.isRemoved else { return }
        let now = ProcessInfo.processInfo.systemUptime
        let (due, first) = writeBack.withLock { state -> (Bool, Bool) in
            let first = !state.noticed
            state.noticed = true
            return (first || durable || force || now - state.last >= Tunables.indexWriteBackSeconds, first)
        }
        if first {
            let warning = "the index \(index.path) was removed or replaced while mounted: cachefs writes its open copy back under that name (at once, every \(Int(Tunables.indexWriteBackSeconds)) s while changes come, at every fsync and at unmount); a crash before the next write-back loses the changes since the last"
            logger.warning("\(warning)")
            warnings.add(warning)
        }
        guard due else { return }
        do {
            try index.writeBack(disk: disk)
            writeBack.withLock { $0.last = now }
        } catch {
            logger.error("could not write the index back to \(index.path): \(error)")
            warnings.add("could not write the index back to \(index.path): \(error)")
        }
    }

    /// At unmount, after the last changes: a removed index is written back one last time.
    func writeBackIfRemovedAtStop() {
        writeBackIfRemoved(durable: false, force: true)
    }

    private func durablePending() -> Bool {
        state.withLock { $0.durableWanted > $0.durableCommitted }
    }

    /// One transaction for the whole batch. A change that fails alone (a bug, never expected)
    /// is logged and skipped; a failure of the whole transaction (disk full, I/O error) is
    /// retried until it goes through, since memory already shows these changes.
    private func commit(_ items: [Item]) {
        guard items.contains(where: { if case .afterCommit = $0 { false } else { true } }) else { return }
        let items = Self.coalesced(items)
        var attempt = 0
        while true {
            do {
                try index.write { db in
                    for item in items {
                        switch item {
                        case .change(let change):
                            do {
                                try change.apply(in: db, of: index)
                            } catch let error as DatabaseError where !Self.isFatal(error) {
                                // Memory already shows the change: say so, where status shows it too.
                                logger.error("index change \(change) failed: \(error)")
                                warnings.add("an index change failed (\(error.resultCode)): memory and the index differ until the next mount; run `cachefs verify` on the unmounted store")
                            }
                        case .action(let action):
                            try action(db)
                        case .afterCommit:
                            break
                        }
                    }
                }
                return
            } catch {
                attempt += 1
                logger.error("index commit of \(items.count) changes failed (attempt \(attempt)): \(error)")
                usleep(useconds_t(min(attempt, Tunables.commitRetryMaxSteps)) * Tunables.commitRetryStepMicroseconds)
            }
        }
    }

    /// Errors that fail a whole transaction rather than one statement.
    static func isFatal(_ error: DatabaseError) -> Bool {
        [.SQLITE_FULL, .SQLITE_IOERR, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_NOMEM].contains(error.resultCode)
    }
}

/// Carries an action's result from the writer thread back to the thread that waits for it.
private final class ResultBox<T: Sendable>: Sendable {
    private let value = Mutex<Result<T, any Error>?>(nil)

    func set(_ result: Result<T, any Error>) {
        value.withLock { $0 = result }
    }

    func take() throws -> T {
        guard let result = value.withLock({ $0 }) else { throw CacheError.io(EIO) }
        return try result.get()
    }
}
