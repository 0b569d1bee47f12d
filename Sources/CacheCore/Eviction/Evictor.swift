import CacheModel
import Foundation
import Synchronization

/// The evictor: its thread (`cachefs-evictor`), its schedule, one pass at a time, and every
/// pool's replacement policy (`replacement`). It sees the rest of the engine only through
/// ``EvictionHost``: it chooses victims from the pool's policy (or the index's LRU order)
/// and removes them through the host's one removal seam, so a file is never removed two ways.
///
/// Requests reach it without waiting: a write that crossed a pool's limit, a policy change
/// or a run of written bytes marks the schedule and wakes the thread. Only the actions a
/// user waits for (`purge`, `clear`) and a write that met ENOSPC run a pass on their own
/// thread, under the same `pass` lock.
final class Evictor: Sendable {
    static let victimBatch = Tunables.victimBatch

    struct Timing: Sendable {
        var accessFlushSeconds: Double
        var sweepSeconds: Double
        var pressureCheckSeconds: Double
    }

    struct Schedule: Sendable {
        var poolsToEnforce: Set<EntryID> = []
        var pressureRequested = false
        var lastFlush: Double = 0
        var lastSweep: Double = 0
        var lastPressureCheck: Double = 0
        /// Bytes written since free space was last looked at; past a threshold a write asks
        /// for a pressure check, so a fast writer cannot fill the disk between periodic checks.
        var bytesSincePressureCheck: Int64 = 0
    }

    let timing: Timing
    let schedule = Mutex(Schedule())
    /// One eviction pass at a time (size, age, pressure, clear): two passes deciding from
    /// the same usage figures would both evict. Held across index reads and unlinks; never
    /// taken by a request that does not evict.
    let pass = Mutex(())
    /// Each pool's replacement policy (which files go first) and its what-if simulations;
    /// request threads tell it of inserts, reads and removals.
    let replacement: ReplacementTable
    private let thread: BackgroundWorker
    /// Set at unmount: a pass ends after its current batch (the next mount enforces every
    /// pool's limits again), so a long eviction never holds the unmount up.
    private let stopping = Atomic<Bool>(false)

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    init(timing: Timing, settings: [EntryID: PoolSettings]) {
        self.timing = timing
        replacement = ReplacementTable(settings: settings)
        thread = BackgroundWorker(tick: min(timing.accessFlushSeconds, timing.sweepSeconds,
                                            timing.pressureCheckSeconds, 1),
                                  name: "cachefs-evictor")
    }

    /// Starts the thread. The host is held weakly: its deinit is never delayed by it.
    func start(serving host: any EvictionHost) {
        thread.start { [weak host, self] in
            guard let host else { return }
            runRound(in: host)
        }
    }

    /// Stops the thread after its current round, which ends after its current batch.
    /// Runs `body` as the one pass, with no directory unloaded meanwhile: a pass loads the
    /// directories of its victims and relies on them in the holds that follow.
    func inPass<T>(of host: any EvictionHost, _ body: () throws -> T) rethrows -> T {
        try host.keepingLoaded {
            var result: T?
            try pass.withLock { _ in result = try body() }
            return result!
        }
    }

    func stop() {
        stopping.store(true, ordering: .releasing)
        thread.stop()
    }

    /// Asks the thread to bring these pools within their limits now.
    func requestEnforcement(of pools: [EntryID]) {
        schedule.withLock { $0.poolsToEnforce.formUnion(pools) }
        thread.wake()
    }

    /// Asks the thread to look at free space now (`min_free` changed, say).
    func requestPressureCheck() {
        schedule.withLock { $0.pressureRequested = true }
        thread.wake()
    }

    /// Every few megabytes written, the evictor looks at free space at once.
    func noteBytesWritten(_ count: Int) {
        let due = schedule.withLock { schedule in
            schedule.bytesSincePressureCheck += Int64(count)
            guard schedule.bytesSincePressureCheck >= Tunables.pressureCheckBytes else { return false }
            schedule.bytesSincePressureCheck = 0
            schedule.pressureRequested = true
            return true
        }
        if due { thread.wake() }
    }

    /// One round of the thread: what is due by the clock, and what was asked for.
    func runRound(in host: any EvictionHost) {
        let uptime = ProcessInfo.processInfo.systemUptime
        let due = schedule.withLock { schedule -> (flush: Bool, sweep: Bool, pressure: Bool, pools: Set<EntryID>) in
            let flush = uptime - schedule.lastFlush >= timing.accessFlushSeconds
            let sweep = uptime - schedule.lastSweep >= timing.sweepSeconds
            let pressure = schedule.pressureRequested || uptime - schedule.lastPressureCheck >= timing.pressureCheckSeconds
            if flush { schedule.lastFlush = uptime }
            if sweep { schedule.lastSweep = uptime }
            if pressure { schedule.lastPressureCheck = uptime }
            schedule.pressureRequested = false
            let pools = schedule.poolsToEnforce
            schedule.poolsToEnforce = []
            return (flush, sweep, pressure, pools)
        }
        if due.flush {
            host.saveCounters()
            host.logAccessTimes()
        }
        for pool in replacement.poolsToBuild() {
            inPass(of: host) { buildPolicyIfNeeded(of: pool, in: host) }
        }
        endPinLeases(in: host)
        for pool in due.pools { enforceLimits(of: pool, in: host) }
        if due.sweep {
            sweepExpired(in: host)
        } else {
            // A file goes within a round of its expiry, not at the next periodic sweep.
            let expiring = poolsWithExpiryDue(in: host)
            if !expiring.isEmpty { sweepExpired(pools: expiring, in: host) }
        }
        if due.pressure { relievePressure(in: host) }
        switchAutoPools(in: host)
        for trace in replacement.takeTraces() {
            host.appendTrace(trace.bytes, droppedLines: trace.dropped, of: trace.pool)
        }
    }
}
