@testable import CacheCore
@testable import CacheNames
import CacheModel
import CachePolicy
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

/// A pool's replacement state against what races it and what fails under it: `auto`'s
/// switch beside a setfattr of the same pool, an index error while a policy chooses.
@Suite struct ReplacementStateTests {
    private static let data = PoolOverride(name: "data", maxSize: 0, maxAgeSeconds: nil)

    private func set(_ name: String, _ value: String, on id: EntryID, in engine: CacheEngine) throws {
        try engine.setxattr(id, name: name, value: Array(value.utf8), flags: 0)
    }

    /// The setfattr lands between the switch's read of the pool's policy and its write, when
    /// nothing keeps it out; otherwise it runs on a thread of its own, at the same moment.
    @Test func anAutoSwitchAndASetfattrOfTheSamePoolBothSurvive() throws {
        let store = try TestStore()
        let data: EntryID
        let switched: PolicyKind
        do {
            let engine = try store.open(overrides: [Self.data])
            data = try engine.pool("data")
            try set("user.cache.max_files", "20", on: data, in: engine)
            try set("user.cache.eviction", "auto", on: data, in: engine)
            #expect(try engine.text(data, "user.cache.eviction_active") == "s3fifo")
            // Only this test's calls switch the pool (the evictor's thread would on its own rounds).
            engine.evictor.stop()

            let setterDone = DispatchSemaphore(value: 0)
            let setterError = Mutex<CacheError?>(nil)
            let setMaxSize: @Sendable () -> Void = {
                do {
                    try engine.setxattr(data, name: "user.cache.max_size", value: Array("1000000".utf8), flags: 0)
                } catch {
                    setterError.withLock { $0 = error as? CacheError ?? .io(EIO) }
                }
                setterDone.signal()
            }
            let switchedTo = Mutex<PolicyKind?>(nil)
            let host = ForwardingEvictionHost(engine.eviction)
            host.afterNextPoolSettings.withLock {
                $0 = {
                    switchedTo.withLock { $0 = engine.evictor.replacement.report(of: data)?.active }
                    if engine.names.poolChanges.withLockIfAvailable({ _ in true }) == true {
                        setMaxSize()
                    } else {
                        Thread(block: setMaxSize).start()
                    }
                }
            }
            // A loop over 30 names through a pool of 20: W-TinyLFU keeps part of it, S3-FIFO none.
            var rounds = 0
            while switchedTo.withLock({ $0 }) == nil && rounds < 1000 {
                for key in 1...30 {
                    engine.evictor.replacement.accessed(EntryID(key), fingerprint: { UInt64(key) }, size: 64,
                                                        costMilliseconds: 0, pool: data)
                }
                engine.evictor.switchAutoPools(in: host)
                rounds += 1
            }
            switched = try #require(switchedTo.withLock { $0 })
            #expect(switched != .s3fifo)
            #expect(setterDone.wait(timeout: .now() + 10) == .success)
            #expect(setterError.withLock { $0 } == nil)

            #expect(try engine.text(data, "user.cache.max_size") == "1000000")
            #expect(try engine.text(data, "user.cache.eviction_active") == switched.rawValue)
            #expect(engine.eviction.poolSettings()[data]?.activePolicy == switched)
            engine.shutdown()
        }

        let reopened = try store.open()
        defer { reopened.shutdown() }
        #expect(try reopened.text(data, "user.cache.max_size") == "1000000")
        #expect(try reopened.text(data, "user.cache.max_files") == "20")
        #expect(try reopened.text(data, "user.cache.eviction") == "auto")
        #expect(try reopened.text(data, "user.cache.eviction_active") == switched.rawValue)
    }

    /// Its record unreadable once, a file chosen by its policy is not taken, and not lost:
    /// the next choice still finds it.
    @Test func aFileWhoseRecordCouldNotBeReadStaysInItsPolicy() throws {
        try withPassesOnDemand { engine, data, _, _ in
            try set("user.cache.eviction", "sieve", on: data, in: engine)
            let unreadable = try engine.writeFile("a", in: data, content: [1])
            let other = try engine.writeFile("b", in: data, content: [2])
            let host = ForwardingEvictionHost(engine.eviction)
            let everything = Evictor.Need(bytes: 0, files: 2)

            host.failingLoads.withLock { $0 = [unreadable] }
            let first = try #require(engine.evictor.policyVictims(of: data, need: everything, in: host))
            #expect(first.map(\.entryID) == [other])
            // As a pass does with victims it did not remove.
            engine.evictor.giveBack(first, removed: [], pool: data, in: host)

            host.failingLoads.withLock { $0 = [] }
            let afterwards = try #require(engine.evictor.policyVictims(of: data, need: everything, in: host))
            #expect(Set(afterwards.map(\.entryID)) == [unreadable, other])
        }
    }
}
