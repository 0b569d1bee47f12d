@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Synchronization
import Testing

/// Single-flight and range waits of read-through pools, without FUSE.
@Suite struct FetchTests {
    @Test func aReaderWaitsOnlyForItsRangeAndAnotherForTheEnd() throws {
        let progress = FetchProgress(total: 1000)
        let early = DispatchSemaphore(value: 0)
        let whole = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? progress.waitForBytes(before: 100)
            early.signal()
        }
        Thread.detachNewThread {
            try? progress.waitForBytes(before: 5000)
            whole.signal()
        }
        #expect(early.wait(timeout: .now() + 0.2) == .timedOut)
        progress.advance(to: 150)
        #expect(early.wait(timeout: .now() + 5) == .success)
        #expect(whole.wait(timeout: .now() + 0.2) == .timedOut)
        progress.advance(to: 1000)
        #expect(whole.wait(timeout: .now() + 5) == .success)
    }

    @Test func aFailedFetchFailsEveryWaiterAndLaterReads() throws {
        let progress = FetchProgress(total: 1000)
        progress.advance(to: 500)
        progress.finish(.failed(.io(EIO)))
        #expect(throws: CacheError.io(EIO)) { try progress.waitForBytes(before: 100) }
        #expect(throws: CacheError.io(EIO)) { try progress.waitForCompletion() }
    }

    @Test func ofManyConcurrentClaimsExactlyOneStartsTheFetch() throws {
        let table = FetchTable()
        let source = FetchSource(origin: FileOrigin(root: "/nonexistent"), path: [Array("a".utf8)], pool: 2, size: 10)
        table.addPending(42, source: source)
        let starters = Atomic(0)
        let progresses = Mutex(Set<ObjectIdentifier>())
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            guard case .whole(let progress, let startWith)? = table.claim(42) else { return }
            if startWith != nil { starters.add(1, ordering: .relaxed) }
            progresses.withLock { _ = $0.insert(ObjectIdentifier(progress)) }
        }
        #expect(starters.load(ordering: .relaxed) == 1)
        #expect(progresses.withLock { $0.count } == 1)
        table.remove(42)
        #expect(table.claim(42) == nil)
    }

    @Test func eightOpensOfAnOriginFileCauseOneFetchAndReadTheOriginsBytes() throws {
        let origin = try TestStore()
        let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(FileManager.default.createFile(atPath: origin.path + "/big", contents: Data(bytes)))
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try engine.setxattr(data, name: "user.cache.origin", value: Array("file://\(origin.path)".utf8), flags: 0)
        let found = try engine.lookup(parent: data, name: Array("big".utf8))
        #expect(found.size == Int64(bytes.count))
        let reads = Mutex([[UInt8]]())
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            guard let handle = try? engine.open(found.id, flags: O_RDONLY),
                  let head = try? engine.read(handle, offset: 1 << 20, size: 4096) else { return }
            reads.withLock { $0.append(head) }
            engine.release(handle)
        }
        #expect(reads.withLock { $0.count } == 8)
        #expect(reads.withLock { $0.allSatisfy { $0 == Array(bytes[(1 << 20)..<((1 << 20) + 4096)]) } })
        #expect(engine.attributes.figure(.originRequests, pools: [data]) == 1)
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("absent".utf8)) }
    }

    /// A store whose pool `data` has a file:// origin with one file, looked up (shown) but
    /// never opened; `end` closes the engine (cleanly or as a crash).
    private func storeShowingAnOriginFile(end: (CacheEngine) -> Void) throws -> (origin: TestStore, store: TestStore) {
        let origin = try TestStore()
        #expect(FileManager.default.createFile(atPath: origin.path + "/never-read", contents: Data(count: 5000)))
        let store = try TestStore()
        let engine = try store.open()
        let data = try engine.pool("data")
        try engine.setxattr(data, name: "user.cache.origin", value: Array("file://\(origin.path)".utf8), flags: 0)
        _ = try engine.lookup(parent: data, name: Array("never-read".utf8))
        end(engine)
        return (origin, store)
    }

    @Test func aFileShownButNotFetchedIsGoneAfterACrash() throws {
        let (origin, store) = try storeShowingAnOriginFile { engine in
            engine.waitForIndex()
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        defer { withExtendedLifetime(origin) {} }
        try store.releaseLockOfCrashedEngine()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        // The origin still lists the name, but the pool holds no entry for it.
        #expect(try engine.readdir(data, offset: 0, limit: 100).allSatisfy { $0.attributes == nil })
        #expect(engine.names.usage(of: data).cachedBytes == 0)
    }

    @Test func aFileShownButNotFetchedIsNotKeptByACleanUnmount() throws {
        let (origin, store) = try storeShowingAnOriginFile { $0.shutdown() }
        defer { withExtendedLifetime(origin) {} }
        #expect(try StoreVerifier(storePath: store.path).run(repair: false).problems.isEmpty)
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try engine.setxattr(data, name: "user.cache.origin", value: [], flags: 0)
        #expect(try engine.readdir(data, offset: 0, limit: 100).count == 2)
        #expect(engine.names.usage(of: data).cachedBytes == 0)
    }
}
