@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Synchronization
import Testing

/// An open that moves atime answers only after the kernel was told (a `stat` right after the
/// read shows it), and never waits long for a notification thread that is stuck.
@Suite struct AtimeNotificationTests {
    /// Records attribute invalidations, each after `delay` seconds (or, with a `gate`, once
    /// the test opens it), and how many removals had been delivered before each.
    final class SlowNotifier: KernelNotifier {
        let invalidated = Mutex<[EntryID]>([])
        let deletionsBeforeInvalidation = Mutex<[Int]>([])
        private let deletions = Mutex(0)
        let delay: Double
        let deletionDelay: Double
        let gate: DispatchSemaphore?
        /// The first removal waits for it (and passes it on to the next).
        let deletionGate: DispatchSemaphore?

        init(delay: Double, deletionDelay: Double = 0, gate: DispatchSemaphore? = nil,
             deletionGate: DispatchSemaphore? = nil) {
            self.delay = delay
            self.deletionDelay = deletionDelay
            self.gate = gate
            self.deletionGate = deletionGate
        }

        func deleted(parent: EntryID, child: EntryID, name: [UInt8]) {
            if let deletionGate {
                _ = deletionGate.wait(timeout: .now() + 30)
                deletionGate.signal()
            }
            Thread.sleep(forTimeInterval: deletionDelay)
            deletions.withLock { $0 += 1 }
        }

        func attributesChanged(_ id: EntryID) {
            let delivered = deletions.withLock { $0 }
            if let gate {
                // Bounded, so a failing test ends.
                _ = gate.wait(timeout: .now() + 30)
            } else {
                Thread.sleep(forTimeInterval: delay)
            }
            deletionsBeforeInvalidation.withLock { $0.append(delivered) }
            invalidated.withLock { $0.append(id) }
        }
    }

    private let clock = ManualClock()

    private func engine(_ store: TestStore, notifier: SlowNotifier) throws -> CacheEngine {
        try CacheEngine(EngineConfiguration(storePath: store.path, clock: clock, notifier: notifier,
                                            accessFlushSeconds: 3600))
    }

    @Test func theOpenThatMovesAtimeReturnsAfterTheKernelWasTold() throws {
        let store = try TestStore()
        let notifier = SlowNotifier(delay: 0.03)
        let engine = try engine(store, notifier: notifier)
        defer { engine.shutdown() }
        let file = try engine.writeFile("f", in: try engine.pool("data"), content: Array("x".utf8))
        // Written before: relatime moves atime at the first read.
        clock.advance(seconds: 1)
        let handle = try engine.open(file, flags: O_RDONLY)
        engine.release(handle)
        #expect(notifier.invalidated.withLock { $0 } == [file])
        // The second read moves nothing, and tells nothing.
        engine.release(try engine.open(file, flags: O_RDONLY))
        #expect(notifier.invalidated.withLock { $0 } == [file])
    }

    /// An eviction queues thousands of removals; the invalidation an open waits for goes
    /// ahead of them, not after them.
    @Test func theInvalidationIsNotQueuedBehindAnEvictionsRemovals() throws {
        let store = try TestStore()
        let deletionGate = DispatchSemaphore(value: 0)
        let notifier = SlowNotifier(delay: 0, deletionGate: deletionGate)
        let engine = try engine(store, notifier: notifier)
        defer {
            deletionGate.signal()
            engine.shutdown()
        }
        let file = try engine.writeFile("f", in: try engine.pool("data"), content: Array("x".utf8))
        // 1,000 removals, the first of them held until the open has asked for its invalidation.
        let removals = 1000
        engine.notifications.enqueue((0..<removals).map { .deleted(parent: 1, child: EntryID($0 + 100), name: [0x61]) })
        clock.advance(seconds: 1)
        engine.release(try engine.open(file, flags: O_RDONLY))
        deletionGate.signal()
        #expect(Shell.waitUntil(seconds: 10) { notifier.invalidated.withLock { $0 } == [file] })
        // Only the chunk being delivered when the open came went first.
        let before = try #require(notifier.deletionsBeforeInvalidation.withLock { $0 }.first)
        #expect(before <= Tunables.notificationChunk, "\(before) removals went first")
    }

    /// The open waits for the notification `Tunables.attributeInvalidationWaitSeconds`, then
    /// answers while the notification thread is still stuck.
    @Test func aStuckNotificationThreadDelaysAnOpenOnlyByItsWait() throws {
        let store = try TestStore()
        let gate = DispatchSemaphore(value: 0)
        let notifier = SlowNotifier(delay: 0, gate: gate)
        let engine = try engine(store, notifier: notifier)
        defer {
            gate.signal()
            engine.shutdown()
        }
        let file = try engine.writeFile("f", in: try engine.pool("data"), content: Array("x".utf8))
        let started = ContinuousClock.now
        engine.release(try engine.open(file, flags: O_RDONLY))
        let waited = ContinuousClock.now - started
        #expect(waited >= .seconds(Tunables.attributeInvalidationWaitSeconds * 0.9), "\(waited)")
        #expect(notifier.invalidated.withLock { $0 }.isEmpty, "the open answered before the stuck notification ended")
    }
}
