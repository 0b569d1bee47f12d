@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// Eviction units (`user.cache.unit`): everything beneath a marked directory goes together,
/// at the time of its most recently read file, or not at all.
@Suite struct EvictionUnitTests {
    private func set(_ engine: CacheEngine, _ id: EntryID, _ name: String, _ value: String) throws {
        try engine.setxattr(id, name: "user.cache." + name, value: Array(value.utf8), flags: 0)
    }

    private func directory(_ engine: CacheEngine, _ name: String, in parent: EntryID) throws -> EntryID {
        try engine.mkdir(parent: parent, name: Array(name.utf8), mode: 0o755, caller: tester).id
    }

    /// Writes `count` files of 100 bytes named `prefix0`… into `parent`, a second apart.
    @discardableResult
    private func files(_ prefix: String, _ count: Int, in parent: EntryID, _ engine: CacheEngine,
                       _ clock: ManualClock) throws -> [EntryID] {
        try (0..<count).map { index in
            clock.advance(seconds: 1)
            return try engine.writeFile("\(prefix)\(index)", in: parent, content: Array(repeating: 1, count: 100))
        }
    }

    private func read(_ engine: CacheEngine, _ id: EntryID, _ clock: ManualClock) throws {
        clock.advance(seconds: 1)
        _ = try engine.readAll(id)
    }

    private func names(in directory: EntryID, _ engine: CacheEngine) throws -> Set<String> {
        Set(try engine.names(in: directory))
    }

    private func events(_ store: TestStore, _ kind: CacheEventKind) throws -> [CacheEvent] {
        let text = try String(contentsOfFile: store.path + "/events.jsonl", encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONDecoder().decode(CacheEvent.self, from: Data($0.utf8)) }
            .filter { $0.event == kind }
    }

    private func evict(_ engine: CacheEngine, _ data: EntryID, toSize size: Int) throws {
        try set(engine, data, "max_size", String(size))
        engine.evictor.enforceLimits(of: data, in: engine.eviction)
        engine.waitForIndex()
    }

    @Test func aUnitGoesWholeAtTheTimeOfItsNewestRead() throws {
        try withPassesOnDemand { engine, data, store, clock in
            let video = try directory(engine, "video", in: data)
            let segments = try files("seg", 5, in: video, engine, clock)
            try files("a", 10, in: data, engine, clock)
            try set(engine, video, "unit", "1")
            #expect(try engine.text(video, "user.cache.unit") == "1")
            #expect(try engine.text(video, "user.cache.unit_files") == "5")
            #expect(try engine.text(video, "user.cache.unit_usage") == "500")
            // Its oldest files are the pool's oldest, but one was read last: the unit is newest.
            try read(engine, segments[4], clock)
            try evict(engine, data, toSize: 1000)
            #expect(try names(in: video, engine).count == 5, "a unit is never half evicted")
            #expect(try names(in: data, engine) == ["video", "a6", "a7", "a8", "a9"])
            // Now every other file is read after it: the unit is the oldest, and goes whole.
            for name in ["a6", "a7", "a8", "a9"] {
                try read(engine, try engine.lookup(parent: data, name: Array(name.utf8)).id, clock)
            }
            try evict(engine, data, toSize: 500)
            #expect(try names(in: video, engine).isEmpty)
            #expect(try names(in: data, engine) == ["video", "a6", "a7", "a8", "a9"])
            let unitEvents = try events(store, .evicted).filter { $0.path.hasPrefix("data/video") }
            #expect(unitEvents.count == 1, "\(unitEvents)")
            #expect(unitEvents.first?.path == "data/video")
            #expect(unitEvents.first?.files == 5)
            #expect(unitEvents.first?.size == 500)
        }
    }

    @Test func aPinnedFileKeepsItsWholeUnit() throws {
        try withPassesOnDemand { engine, data, store, clock in
            let model = try directory(engine, "model", in: data)
            let shards = try files("shard", 4, in: model, engine, clock)
            try files("b", 4, in: data, engine, clock)
            try set(engine, model, "unit", "1")
            try set(engine, shards[2], "pinned", "1")
            try evict(engine, data, toSize: 100)
            #expect(try names(in: model, engine).count == 4)
            #expect(try names(in: data, engine) == ["model"], "the other files went as usual")
            #expect(try events(store, .evicted).allSatisfy { !$0.path.hasPrefix("data/model") })
            try set(engine, shards[2], "pinned", "0")
            engine.evictor.enforceLimits(of: data, in: engine.eviction)
            engine.waitForIndex()
            #expect(try names(in: model, engine).isEmpty)
        }
    }

    @Test func aUnitCountsAsOneFileInMaxFiles() throws {
        try withPassesOnDemand { engine, data, _, clock in
            let pack = try directory(engine, "pack", in: data)
            try files("t", 6, in: pack, engine, clock)
            try set(engine, pack, "unit", "1")
            try files("c", 2, in: data, engine, clock)
            try set(engine, data, "max_files", "3")
            engine.evictor.enforceLimits(of: data, in: engine.eviction)
            engine.waitForIndex()
            #expect(try names(in: pack, engine).count == 6, "the unit and two files are three")
            #expect(try names(in: data, engine) == ["pack", "c0", "c1"])
            try files("d", 1, in: data, engine, clock)
            engine.evictor.enforceLimits(of: data, in: engine.eviction)
            engine.waitForIndex()
            // Four over three: down to the low watermark, 90 % of 3 is 2, so the two oldest go:
            // the unit (written first) and c0.
            #expect(try names(in: pack, engine).isEmpty)
            #expect(try names(in: data, engine) == ["pack", "c1", "d0"])
        }
    }

    @Test func theOutermostUnitWins() throws {
        try withPassesOnDemand { engine, data, store, clock in
            let outer = try directory(engine, "game", in: data)
            let inner = try directory(engine, "textures", in: outer)
            try files("level", 2, in: outer, engine, clock)
            let textures = try files("tex", 3, in: inner, engine, clock)
            try files("e", 3, in: data, engine, clock)
            try set(engine, inner, "unit", "1")
            try set(engine, outer, "unit", "1")
            #expect(try engine.text(outer, "user.cache.unit_files") == "5")
            // The inner unit's newest read makes the outer unit newest too.
            try read(engine, textures[0], clock)
            try evict(engine, data, toSize: 600)
            #expect(try names(in: data, engine) == ["game"])
            try evict(engine, data, toSize: 100)
            #expect(try names(in: outer, engine) == ["textures"])
            #expect(try names(in: inner, engine).isEmpty)
            let event = try #require(try events(store, .evicted).first { $0.path == "data/game" })
            #expect(event.files == 5)
        }
    }

    @Test func renamingMovesAFileInAndOutOfAUnit() throws {
        try withPassesOnDemand { engine, data, _, clock in
            let unit = try directory(engine, "unit", in: data)
            try files("u", 3, in: unit, engine, clock)
            let outsider = try files("x", 1, in: data, engine, clock)[0]
            try files("w", 3, in: data, engine, clock)
            try set(engine, unit, "unit", "1")
            // u2 leaves the unit; x0 joins it.
            try engine.rename(parent: unit, name: Array("u2".utf8), newParent: data, newName: Array("u2".utf8), flags: [])
            try engine.rename(parent: data, name: Array("x0".utf8), newParent: unit, newName: Array("x0".utf8), flags: [])
            try read(engine, outsider, clock)
            #expect(try engine.text(unit, "user.cache.unit_files") == "3")
            // u2 is now the oldest file alone; the unit (u0, u1, x0) was read after every file.
            try evict(engine, data, toSize: 600)
            #expect(try names(in: data, engine) == ["unit", "w1", "w2"])
            let inUnit = try names(in: unit, engine)
            #expect(inUnit == ["u0", "u1", "x0"], "\(inUnit)")
            try evict(engine, data, toSize: 100)
            #expect(try names(in: unit, engine).isEmpty, "x0 went with the unit it joined")
        }
    }

    @Test func removingTheAttributeSplitsTheUnit() throws {
        try withPassesOnDemand { engine, data, store, clock in
            let unit = try directory(engine, "split", in: data)
            let members = try files("s", 4, in: unit, engine, clock)
            try set(engine, unit, "unit", "1")
            try engine.removexattr(unit, name: "user.cache.unit")
            #expect(try engine.text(unit, "user.cache.unit") == "0")
            try read(engine, members[3], clock)
            try evict(engine, data, toSize: 300)
            let left = try names(in: unit, engine)
            #expect(left == ["s2", "s3"], "file by file, oldest first: \(left)")
            #expect(try events(store, .evicted).allSatisfy { $0.files == nil })
        }
    }

    @Test func aBadValueIsRefusedAndChangesNothing() throws {
        try withPassesOnDemand { engine, data, _, clock in
            let unit = try directory(engine, "bad", in: data)
            try files("f", 1, in: unit, engine, clock)
            for value in ["2", "banana", ""] {
                #expect(throws: CacheError.invalidXattrValue(name: "user.cache.unit", reason: "expected 0 or 1")) {
                    try set(engine, unit, "unit", value)
                }
            }
            #expect(try engine.text(unit, "user.cache.unit") == "0")
            // A pool is not a unit: only directories inside one are.
            #expect(throws: CacheError.unknownCacheAttribute("user.cache.unit")) { try set(engine, data, "unit", "1") }
        }
    }

    @Test func aUnitLargerThanItsPoolIsRefused() throws {
        try withPassesOnDemand { engine, data, store, clock in
            let unit = try directory(engine, "big", in: data)
            try files("p", 8, in: unit, engine, clock)
            try set(engine, unit, "unit", "1")
            try set(engine, data, "max_size", "1000")
            let created = try engine.create(parent: unit, name: Array("last".utf8), mode: 0o644, flags: O_WRONLY,
                                            caller: tester)
            let chunk = [UInt8](repeating: 2, count: 150)
            _ = try chunk.withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
            #expect(throws: CacheError.fileTooLarge) {
                _ = try chunk.withUnsafeBytes { try engine.write(created.handle, offset: 150, bytes: $0) }
            }
            engine.release(created.handle)
            engine.waitForIndex()
            #expect(try names(in: unit, engine).count == 8, "the file that crossed the limit is refused, not its unit")
            #expect(try events(store, .refused).map(\.path) == ["data/big/last"])
        }
    }

    @Test func aUnitExpiresWhenAllOfItsFilesHave() throws {
        try withPassesOnDemand { engine, data, store, clock in
            let unit = try directory(engine, "old", in: data)
            let members = try files("o", 3, in: unit, engine, clock)
            try files("g", 1, in: data, engine, clock)
            try set(engine, unit, "unit", "1")
            try set(engine, data, "max_age", "60s")
            clock.advance(seconds: 50)
            try read(engine, members[1], clock)
            clock.advance(seconds: 30)
            engine.evictor.sweepExpired(in: engine.eviction)
            engine.waitForIndex()
            #expect(try names(in: data, engine) == ["old"], "g0 expired alone")
            #expect(try names(in: unit, engine).count == 3, "o1 was read 31 s ago: the unit stays")
            clock.advance(seconds: 40)
            engine.evictor.sweepExpired(in: engine.eviction)
            engine.waitForIndex()
            #expect(try names(in: unit, engine).isEmpty)
            #expect(try events(store, .expired).filter { $0.path == "data/old" }.map(\.files) == [3])
        }
    }

    @Test func thePreviewListsAUnitOnceAndThePassRemovesWhatItListed() throws {
        try withPassesOnDemand { engine, data, store, clock in
            let unit = try directory(engine, "clip", in: data)
            try files("c", 3, in: unit, engine, clock)
            try files("h", 6, in: data, engine, clock)
            try set(engine, unit, "unit", "1")
            let previewed = try engine.evictor.preview(of: data, .size(600), in: engine.eviction)
            #expect(previewed.first?.record.entryID == unit)
            #expect(previewed.first?.files == 3)
            #expect(previewed.first?.size == 300)
            let listed = try String(decoding: engine.getxattr(data, name: "user.cache.preview?next=2"), as: UTF8.self)
            #expect(listed.hasPrefix("data/clip/\t300\t"), "\(listed)")
            try evict(engine, data, toSize: 600)
            let evicted = try events(store, .evicted).map(\.path)
            let expected = previewed.map { victim in
                "data/" + (victim.record.entryID == unit ? "clip" : String(decoding: victim.record.name, as: UTF8.self))
            }
            #expect(evicted == expected)
        }
    }
}
