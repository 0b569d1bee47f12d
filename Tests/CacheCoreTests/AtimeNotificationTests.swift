@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Synchronization
import Testing

/// An open that moves atime answers only after the kernel was told (a `stat` right after the
/// read shows it), and never waits long for a notification thread that is stuck.
@Suite struct AtimeNotificationTests {
    /// Records attribute invalidations, each after `delay` seconds.
    final class SlowNotifier: KernelNotifier {
        let invalidated = Mutex<[EntryID]>([])
        let delay: Double
        let deletionDelay: Double

        init(delay: Double, deletionDelay: Double = 0) {
            self.delay = delay
            self.deletionDelay = deletionDelay
        }

        func deleted(parent: EntryID, child: EntryID, name: [UInt8]) {
            Thread.sleep(forTimeInterval: deletionDelay)
        }

        func attributesChanged(_ id: EntryID) {
            Thread.sleep(forTimeInterval: delay)
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
        let notifier = SlowNotifier(delay: 0, deletionDelay: 0.0005)
        let engine = try engine(store, notifier: notifier)
        defer { engine.shutdown() }
        let file = try engine.writeFile("f", in: try engine.pool("data"), content: Array("x".utf8))
        // 1,000 removals of 0.5 ms each: half a second of deliveries, one chunk 32 ms.
        engine.notifications.enqueue((0..<1000).map { .deleted(parent: 1, child: EntryID($0 + 100), name: [0x61]) })
        clock.advance(seconds: 1)
        let started = ContinuousClock.now
        engine.release(try engine.open(file, flags: O_RDONLY))
        let waited = ContinuousClock.now - started
        #expect(notifier.invalidated.withLock { $0 } == [file])
        #expect(waited < .milliseconds(80), "\(waited)")
    }

    @Test func aStuckNotificationThreadDelaysAnOpenByAtMostATenthOfASecond() throws {
        let store = try TestStore()
        let notifier = SlowNotifier(delay: 2)
        let engine = try engine(store, notifier: notifier)
        defer { engine.shutdown() }
        let file = try engine.writeFile("f", in: try engine.pool("data"), content: Array("x".utf8))
        let started = ContinuousClock.now
        engine.release(try engine.open(file, flags: O_RDONLY))
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(90) && waited < .seconds(1), "\(waited)")
        #expect(notifier.invalidated.withLock { $0 }.isEmpty)
    }
}
