import Foundation
import Synchronization

/// The evictor: its thread (`cachefs-evictor`), its schedule, one pass at a time, and the
/// kernel notifications of what cachefs removes by itself. It chooses victims from the
/// index and removes them through the engine's one removal seam (`removeFiles`), so a file
/// is never removed two ways.
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
    let notifications: KernelNotifications
    private let thread: BackgroundWorker
    /// Set at unmount: a pass ends after its current batch (the next mount enforces every
    /// pool's limits again), so a long eviction never holds the unmount up.
    private let stopping = Atomic<Bool>(false)

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    init(timing: Timing, notifier: any KernelNotifier) {
        self.timing = timing
        notifications = KernelNotifications(notifier: notifier)
        thread = BackgroundWorker(tick: min(timing.accessFlushSeconds, timing.sweepSeconds,
                                            timing.pressureCheckSeconds, 1),
                                  name: "cachefs-evictor")
    }

    /// Starts both threads. The engine is held weakly: its deinit is never delayed by them.
    func start(serving engine: CacheEngine) {
        thread.start { [weak engine, self] in
            guard let engine else { return }
            runRound(in: engine)
        }
        notifications.start()
    }

    /// Stops both threads after their current round, which ends after its current batch.
    func stop() {
        stopping.store(true, ordering: .releasing)
        thread.stop()
        notifications.stop()
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
    func runRound(in engine: CacheEngine) {
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
            engine.writer.enqueue(.setting(key: PoolCounters.settingKey, value: engine.counters.withLock { $0 }.encoded))
            engine.flushAccessTimes()
        }
        endPinLeases(in: engine)
        for pool in due.pools { enforceLimits(of: pool, in: engine) }
        if due.sweep {
            sweepExpired(in: engine)
        } else {
            // A file goes within a round of its expiry, not at the next periodic sweep.
            let expiring = poolsWithExpiryDue(in: engine)
            if !expiring.isEmpty { sweepExpired(pools: expiring, in: engine) }
        }
        if due.pressure { relievePressure(in: engine) }
        switchAutoPools(in: engine)
    }
}
