@testable import CacheCore
@testable import CacheNames
import CacheModel
import Foundation
import Synchronization
import Testing

/// A directory nothing uses leaves memory past the memory budget and is read again from
/// the index when needed, with everything memory knew about its files.
@Suite struct DirectoryUnloadingTests {
    /// What a listing and the attributes show of one file.
    struct Seen: Equatable {
        var id: EntryID
        var size: Int64
        var attributes: [String: [UInt8]]
    }

    /// Every name in `directory` with its size and extended attributes (user ones and the
    /// `user.cache.*` a file shows), each looked up and forgotten again, as the kernel would.
    static func contents(of directory: EntryID, in engine: CacheEngine) throws -> [String: Seen] {
        var seen: [String: Seen] = [:]
        for name in try engine.names(in: directory) {
            let found = try engine.lookup(parent: directory, name: Array(name.utf8))
            defer { engine.forget(found.id, count: 1) }
            var attributes: [String: [UInt8]] = [:]
            for attribute in try engine.listxattr(found.id) where attribute != "user.cache.state" {
                attributes[attribute] = try engine.getxattr(found.id, name: attribute)
            }
            seen[name] = Seen(id: found.id, size: try engine.getattr(found.id).size, attributes: attributes)
        }
        return seen
    }

    static func isLoaded(_ directory: EntryID, in engine: CacheEngine) -> Bool {
        engine.names.namespace.withLock { $0.isLoaded(directory) }
    }

    /// An unload round whose outcome the test can judge. A round that met an operation relying
    /// on loaded directories (the evictor's pass, woken by the test's own writes, runs on its
    /// thread) put its directories off, and that pass may have used them: the round runs again
    /// until none is put off, after the idle time passes again when `idleAgain` is given (for
    /// a check that a directory idle long enough leaves; a check that a used one stays gives nil).
    static func unloadRound(_ engine: CacheEngine, idleAgain clock: ManualClock?)
        -> (directories: Int, entries: Int, deferred: Int) {
        var round = engine.names.unloadIdleDirectories()
        let deadline = ContinuousClock.now + .seconds(10)
        while round.deferred > 0 && ContinuousClock.now < deadline {
            usleep(1_000)
            clock?.advance(seconds: 61)
            round = engine.names.unloadIdleDirectories()
        }
        #expect(round.deferred == 0, "an operation relying on loaded directories ran for 10 s")
        return round
    }

    /// The pool's eviction order as its policy has it now, by name.
    static func order(of pool: EntryID, in engine: CacheEngine) throws -> [String] {
        try engine.evictor.preview(of: pool, .next(1_000), in: engine.eviction).map {
            String(decoding: $0.record.name, as: UTF8.self)
        }
    }

    @Test(arguments: ["lru", "s3fifo"])
    func anIdleDirectoryLeavesMemoryAndComesBackWithTheSameNamesSizesXattrsAndOrder(policy: String) throws {
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try store.open(clock: clock, memoryBudget: MemoryBudget(bytes: 0, idleSeconds: 60))
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try engine.setxattr(data, name: "user.cache.eviction", value: Array(policy.utf8), flags: 0)
        let sub = try engine.mkdir(parent: data, name: Array("sub".utf8), mode: 0o755, caller: tester).id
        // While the files are made, changed and read, unloads run all the time (the directory
        // is idle between requests: nothing but its names holds its files).
        let stop = Atomic<Bool>(false)
        let unloader = Thread {
            while !stop.load(ordering: .acquiring) { engine.names.unloadIdleDirectories() }
        }
        unloader.start()
        /// As the kernel does: a request on a file comes after a lookup of its name.
        func onFile<T>(_ number: Int, _ body: (EntryID) throws -> T) throws -> T {
            let id = try engine.lookup(parent: sub, name: Array("f\(number)".utf8)).id
            defer { engine.forget(id, count: 1) }
            return try body(id)
        }
        for number in 0..<300 {
            try engine.writeFile("f\(number)", in: sub, content: [UInt8](repeating: 7, count: number * 3))
            clock.advance(seconds: 61)
        }
        for number in stride(from: 0, to: 300, by: 7) {
            try onFile(number) { try engine.setxattr($0, name: "user.note", value: Array("note \(number)".utf8), flags: 0) }
        }
        try onFile(5) { try engine.setxattr($0, name: "user.cache.pinned", value: Array("1".utf8), flags: 0) }
        try onFile(6) { try engine.setxattr($0, name: "user.cache.persistent", value: Array("1".utf8), flags: 0) }
        // Reads move files in the pool's order: every tenth, newest read last.
        for number in stride(from: 293, through: 3, by: -10) {
            clock.advance(seconds: 61)
            _ = try onFile(number) { try engine.readAll($0) }
        }
        stop.store(true, ordering: .releasing)
        while !unloader.isFinished { usleep(1_000) }
        engine.names.flushAccessTimes()
        let orderBefore = try Self.order(of: data, in: engine)
        let before = try Self.contents(of: sub, in: engine)
        #expect(before.count == 300 && before["f14"]?.attributes["user.note"] == Array("note 14".utf8))
        #expect(orderBefore.count == 298, "every file but the pinned and the persistent one may go; missing: \(Set(before.keys).subtracting(orderBefore).sorted())")
        let loadedBefore = engine.names.loadedEntries

        // Used a moment ago: it stays, over the budget or not.
        #expect(Self.unloadRound(engine, idleAgain: nil).directories == 0)
        #expect(Self.isLoaded(sub, in: engine))

        clock.advance(seconds: 61)
        let unloaded = Self.unloadRound(engine, idleAgain: clock)
        #expect(unloaded.directories == 1 && unloaded.entries == 300)
        #expect(!Self.isLoaded(sub, in: engine))
        #expect(engine.names.loadedEntries == loadedBefore - 300)

        #expect(try Self.order(of: data, in: engine) == orderBefore, "the pool's order moved with the unload")
        #expect(try Self.contents(of: sub, in: engine) == before)
        #expect(Self.isLoaded(sub, in: engine))
    }

    /// 200 files with short names fit a budget of 300 entries; 200 with names of 100 bytes
    /// do not, because each name's own allocation (144 bytes) is counted too.
    @Test(arguments: [(2, true), (100, false)])
    func theBudgetCountsWhatALongNameAdds(nameBytes: Int, staysLoaded: Bool) throws {
        let store = try TestStore()
        let clock = ManualClock()
        let budget = MemoryBudget(bytes: Tunables.bytesPerLoadedEntry * 300, idleSeconds: 60)
        let engine = try store.open(clock: clock, memoryBudget: budget)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let sub = try engine.mkdir(parent: data, name: Array("sub".utf8), mode: 0o755, caller: tester).id
        func name(_ number: Int) -> String {
            let suffix = String(number, radix: 36)
            return String(repeating: "n", count: max(0, nameBytes - suffix.count)) + suffix
        }
        for number in 0..<200 { _ = try engine.writeFile(name(number), in: sub, content: [1, 2, 3]) }
        let entries = engine.names.loadedEntries
        let counted = engine.names.loadedBytes
        let perName = nameBytes > StoredName.inlineCapacity ? HeapSize.allocation(16 + 8 + nameBytes) : 0
        #expect(perName == (nameBytes > 14 ? 144 : 0))
        #expect(counted == Int64(entries) * Tunables.bytesPerLoadedEntry + Int64(200 * perName))
        #expect((counted > budget.bytes) == !staysLoaded)

        clock.advance(seconds: 61)
        let round = Self.unloadRound(engine, idleAgain: clock)
        #expect(Self.isLoaded(sub, in: engine) == staysLoaded)
        #expect(round.entries == (staysLoaded ? 0 : 200))
        #expect(engine.names.loadedBytes == counted - Int64(round.entries) * (Tunables.bytesPerLoadedEntry + Int64(perName)))
        #expect(try engine.lookup(parent: sub, name: Array(name(199).utf8)).size == 3)
    }

    /// Listings count the names they served; once that many names as a big directory's
    /// load were listed, the memory check returns what they freed to the kernel, and counts
    /// again from zero. (The engine's own check may run in between, on its thread: then it
    /// is the one that trimmed, and the count is zero all the same.)
    @Test func theMemoryCheckReturnsWhatManyListedNamesFreed() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        for number in 0..<100 { _ = try engine.writeFile("f\(number)", in: data, content: [1]) }
        func listed() -> Int { engine.names.namespace.withLock { $0.listedSinceTrim } }
        func listAll() throws -> Int {
            let items = try engine.readdir(data, offset: 0, limit: 1_000)
            return items.count { $0.name != Array(".".utf8) && $0.name != Array("..".utf8) }
        }
        #expect(try listAll() == 100)
        let before = listed()
        #expect(before >= 100)
        var served = 0
        while before + served + 100 < Tunables.trimAfterLoadingEntries { served += try listAll() }
        #expect(listed() == before + served)
        #expect(!engine.names.returnMemoryFreedByListings())
        #expect(listed() == before + served)
        served += try listAll()
        #expect(listed() >= Tunables.trimAfterLoadingEntries || listed() == 0)
        engine.names.returnMemoryFreedByListings()
        #expect(listed() == 0)
    }

    @Test func aDirectoryStaysWhileAFileInItIsOpenOrHeldByTheKernel() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try store.open(clock: clock, memoryBudget: MemoryBudget(bytes: 0, idleSeconds: 60))
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let sub = try engine.mkdir(parent: data, name: Array("sub".utf8), mode: 0o755, caller: tester).id
        let open = try engine.writeFile("open", in: sub, content: Array("kept open".utf8))
        try engine.writeFile("other", in: sub, content: Array("other".utf8))
        let held = try engine.lookup(parent: sub, name: Array("open".utf8)).id
        #expect(held == open)
        let handle = try engine.open(open, flags: O_RDONLY)
        clock.advance(seconds: 61)
        #expect(Self.unloadRound(engine, idleAgain: nil).directories == 0)
        #expect(Self.isLoaded(sub, in: engine))
        #expect(try engine.read(handle, offset: 0, size: 100) == Array("kept open".utf8))

        // Closed, but the kernel still holds the name.
        engine.release(handle)
        clock.advance(seconds: 61)
        #expect(Self.unloadRound(engine, idleAgain: nil).directories == 0)
        #expect(Self.isLoaded(sub, in: engine))

        // Forgotten: nothing holds it any more.
        engine.forget(open, count: 1)
        clock.advance(seconds: 61)
        #expect(Self.unloadRound(engine, idleAgain: clock).directories == 1)
        #expect(!Self.isLoaded(sub, in: engine))
        #expect(try engine.readAll(try engine.lookup(parent: sub, name: Array("open".utf8)).id)
            == Array("kept open".utf8))
    }

    /// A table whose positions an unload freed is packed: the inodes left keep their names.
    @Test func theInodeTableIsPackedAfterABigUnloadAndEveryNameStillResolves() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try store.open(clock: clock, memoryBudget: MemoryBudget(bytes: 0, idleSeconds: 60))
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let big = try engine.mkdir(parent: data, name: Array("big".utf8), mode: 0o755, caller: tester).id
        let small = try engine.mkdir(parent: data, name: Array("small".utf8), mode: 0o755, caller: tester).id
        for number in 0..<(Tunables.compactAfterVacantInodes + 100) {
            try engine.writeFile("f\(number)", in: big, content: [])
        }
        for number in 0..<50 { try engine.writeFile("s\(number)", in: small, content: [UInt8(number)]) }
        clock.advance(seconds: 61)
        // The small directory is used now: only the big one is idle.
        _ = try engine.names(in: small)
        #expect(Self.unloadRound(engine, idleAgain: clock).directories == 1)
        #expect(engine.names.namespace.withLock { $0.inodes.vacantCount } == 0, "not packed")
        for number in 0..<50 {
            let id = try engine.lookup(parent: small, name: Array("s\(number)".utf8)).id
            #expect(try engine.readAll(id) == [UInt8(number)])
            engine.forget(id, count: 1)
        }
        #expect(try engine.names(in: big).count == Tunables.compactAfterVacantInodes + 100)
    }

    /// Unloads racing with lookups, reads, listings, creations, removals, renames and the
    /// policy's choice of victims: no request fails, and every directory lists what was made.
    @Test func unloadsRacingWithRequestsLoseNothing() throws {
        let store = try TestStore()
        let engine = try store.open(memoryBudget: MemoryBudget(bytes: 0, idleSeconds: 0))
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try engine.setxattr(data, name: "user.cache.eviction", value: Array("s3fifo".utf8), flags: 0)
        var expected: [EntryID: Set<String>] = [:]
        for directory in 0..<6 {
            let id = try engine.mkdir(parent: data, name: Array("d\(directory)".utf8), mode: 0o755, caller: tester).id
            engine.forget(id, count: 1)
            expected[id] = []
            for number in 0..<150 {
                try engine.writeFile("f\(number)", in: id, content: Array("d\(directory) f\(number)".utf8))
                expected[id]?.insert("f\(number)")
            }
        }
        let directories = expected.keys.sorted()
        let stop = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let unloads = Mutex(0)
        let unloader = Thread {
            while !stop.load(ordering: .acquiring) {
                let round = engine.names.unloadIdleDirectories()
                unloads.withLock { $0 += round.directories }
            }
        }
        let chooser = Thread {
            while !stop.load(ordering: .acquiring) {
                do {
                    _ = try engine.evictor.preview(of: data, .next(40), in: engine.eviction)
                } catch {
                    failures.withLock { $0.append("preview: \(error)") }
                }
                // A pass keeps directories loaded while it runs: unloads come in between.
                usleep(2_000)
            }
        }
        unloader.start()
        chooser.start()
        var generator = SystemRandomNumberGenerator()
        for round in 0..<1_500 {
            let directory = directories.randomElement(using: &generator)!
            do {
                switch round % 5 {
                case 0:
                    let listed = Set(try engine.names(in: directory))
                    if listed != expected[directory] { failures.withLock { $0.append("listing of \(directory)") } }
                case 1:
                    guard let name = expected[directory]?.randomElement(using: &generator) else { continue }
                    let id = try engine.lookup(parent: directory, name: Array(name.utf8)).id
                    _ = try engine.readAll(id)
                    engine.forget(id, count: 1)
                case 2:
                    try engine.writeFile("new\(round)", in: directory, content: Array("new".utf8))
                    expected[directory]?.insert("new\(round)")
                case 3:
                    guard let name = expected[directory]?.randomElement(using: &generator) else { continue }
                    try engine.unlink(parent: directory, name: Array(name.utf8))
                    expected[directory]?.remove(name)
                default:
                    guard let name = expected[directory]?.randomElement(using: &generator) else { continue }
                    let target = directories.randomElement(using: &generator)!
                    guard expected[target]?.contains("moved\(round)") == false else { continue }
                    try engine.rename(parent: directory, name: Array(name.utf8), newParent: target,
                                      newName: Array("moved\(round)".utf8), flags: [])
                    expected[directory]?.remove(name)
                    expected[target]?.insert("moved\(round)")
                }
            } catch {
                failures.withLock { $0.append("round \(round): \(error)") }
            }
        }
        stop.store(true, ordering: .releasing)
        while !unloader.isFinished || !chooser.isFinished { usleep(1_000) }
        #expect(failures.withLock { $0 } == [])
        #expect(unloads.withLock { $0 } > 50, "\(unloads.withLock { $0 }) directories unloaded while the requests ran")
        for directory in directories {
            #expect(Set(try engine.names(in: directory)) == expected[directory])
        }
    }
}
