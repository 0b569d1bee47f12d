@testable import CacheCore
@testable import CacheNames
import CacheModel
import Foundation
import Glibc
import Testing

/// A unit keeps its byte count as a pool does: one walk counts it, then every change of a
/// file in it keeps the count, so filling a unit is linear in its size.
@Suite struct UnitBytesTests {
    private func set(_ engine: CacheEngine, _ id: EntryID, _ name: String, _ value: String) throws {
        try engine.setxattr(id, name: "user.cache." + name, value: Array(value.utf8), flags: 0)
    }

    /// What the unit's files hold now, by a fresh walk of memory.
    private func walkedBytes(_ engine: CacheEngine, _ unit: EntryID) throws -> Int64 {
        try engine.names.withLoaded([]) { namespace in
            try namespace.filesBeneath(unit).reduce(Int64(0)) { $0 + ($1.persistent ? 0 : $1.size) }
        }
    }

    private func keptBytes(_ engine: CacheEngine, _ unit: EntryID) -> Int64? {
        engine.names.namespace.withLock { $0.unitBytes[unit] }
    }

    private func walks(_ engine: CacheEngine) -> Int {
        engine.names.namespace.withLock { $0.unitWalks }
    }

    @Test func aUnitOf100000FilesIsCountedByOneWalk() throws {
        try withPassesOnDemand { engine, data, _, _ in
            try set(engine, data, "max_size", "4M")
            let unit = try engine.mkdir(parent: data, name: Array("unit".utf8), mode: 0o755, caller: tester).id
            try set(engine, unit, "unit", "1")
            let content = Array(repeating: UInt8(1), count: 10)
            for index in 0..<100_000 {
                try engine.writeFile("f\(index)", in: unit, content: content)
            }
            #expect(walks(engine) == 1, "each create sized its write limit by walking the unit")
            #expect(keptBytes(engine, unit) == 1_000_000)
            #expect(try engine.text(unit, "user.cache.unit_usage") == "1000000")
            // The kept count sizes the limit: 50 bytes are left under a max_size of 1,000,050.
            try set(engine, data, "max_size", "1000050")
            let created = try engine.create(parent: unit, name: Array("last".utf8), mode: 0o644, flags: O_WRONLY,
                                            caller: tester)
            defer { engine.release(created.handle) }
            let fits = Array(repeating: UInt8(2), count: 50)
            _ = try fits.withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
            #expect(throws: CacheError.fileTooLarge) {
                _ = try [UInt8(3)].withUnsafeBytes { try engine.write(created.handle, offset: 50, bytes: $0) }
            }
        }
    }

    @Test func theKeptCountFollowsEveryChangeOfWhatItCounts() throws {
        try withPassesOnDemand { engine, data, _, _ in
            let unit = try engine.mkdir(parent: data, name: Array("unit".utf8), mode: 0o755, caller: tester).id
            let inner = try engine.mkdir(parent: unit, name: Array("inner".utf8), mode: 0o755, caller: tester).id
            var ids: [EntryID] = []
            for index in 0..<6 {
                ids.append(try engine.writeFile("f\(index)", in: index < 3 ? unit : inner,
                                                content: Array(repeating: 1, count: 100 * (index + 1))))
            }
            try engine.writeFile("outside", in: data, content: Array(repeating: 1, count: 1000))
            try set(engine, unit, "unit", "1")
            try set(engine, data, "max_size", "1M")
            // A create in the unit counts it once.
            try engine.writeFile("counted", in: unit, content: Array(repeating: 1, count: 7))
            func check(_ step: String) throws {
                let kept = try #require(keptBytes(engine, unit), "\(step): the count was dropped")
                #expect(kept == (try walkedBytes(engine, unit)), "\(step)")
            }
            try check("create")
            try engine.rename(parent: unit, name: Array("f0".utf8), newParent: data, newName: Array("f0".utf8), flags: [])
            try check("a file renamed out")
            try engine.rename(parent: data, name: Array("outside".utf8), newParent: inner, newName: Array("outside".utf8),
                              flags: [])
            try check("a file renamed in")
            try set(engine, ids[1], "persistent", "1")
            try check("a file made persistent")
            try set(engine, ids[1], "persistent", "0")
            try check("a file made cached again")
            _ = try engine.setattr(ids[4], changes: AttributeChanges(size: 5), handle: nil)
            try check("a truncation")
            let handle = try engine.open(ids[2], flags: O_WRONLY)
            _ = try Array(repeating: UInt8(9), count: 4000).withUnsafeBytes { try engine.write(handle, offset: 0, bytes: $0) }
            try engine.flush(handle)
            engine.release(handle)
            try check("a write that grows a file")
            try engine.unlink(parent: inner, name: Array("f5".utf8))
            try check("an unlink")
            _ = try engine.link(ids[3], newParent: data, newName: Array("second".utf8))
            try engine.unlink(parent: inner, name: Array("f3".utf8))
            // Its first name left the unit: the count is walked again, and right.
            _ = try engine.text(unit, "user.cache.unit_usage")
            try engine.writeFile("again", in: unit, content: [1])
            try check("a hard-linked file's first name removed")
            try engine.rename(parent: unit, name: Array("inner".utf8), newParent: data, newName: Array("inner".utf8),
                              flags: [])
            try engine.writeFile("after-move", in: unit, content: [1])
            try check("a directory moved out")
        }
    }
}
