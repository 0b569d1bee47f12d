@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// The preview runs the passes' own choice on a snapshot: evicting right after it removes
/// exactly what it listed, in its order, whatever the policy, and it writes nothing.
@Suite struct PreviewTests {
    /// 40 files of sizes from 100 to 3,970 bytes written a second apart; a few read since
    /// (reads not flushed to the index yet), one pinned.
    private func fill(_ engine: CacheEngine, _ data: EntryID, clock: ManualClock) throws -> [String: EntryID] {
        var ids: [String: EntryID] = [:]
        for index in 0..<40 {
            clock.advance(seconds: 1)
            ids["f\(index)"] = try engine.writeFile("f\(index)", in: data,
                                                     content: Array(repeating: 7, count: 100 + index * 97 % 3900))
        }
        for name in ["f3", "f0", "f17", "f5", "f3"] {
            clock.advance(seconds: 1)
            let id = try #require(ids[name])
            _ = try engine.lookup(parent: data, name: Array(name.utf8))
            _ = try engine.readAll(id)
            engine.forget(id, count: 1)
        }
        try engine.setxattr(try #require(ids["f1"]), name: "user.cache.pinned", value: Array("1".utf8), flags: 0)
        engine.waitForIndex()
        return ids
    }

    private func evictedPaths(_ store: TestStore) throws -> [String] {
        let events = try String(contentsOfFile: store.path + "/events.jsonl", encoding: .utf8)
        return try events.split(separator: "\n").compactMap { line in
            let event = try JSONDecoder().decode(CacheEvent.self, from: Data(line.utf8))
            return event.event == .evicted ? event.path : nil
        }
    }

    @Test(arguments: ["lru", "s3fifo", "sieve", "tinylfu", "gdsf"])
    func evictingToTheSizeRemovesExactlyWhatThePreviewListed(policy: String) throws {
        try withPassesOnDemand { engine, data, store, clock in
            try engine.setxattr(data, name: "user.cache.eviction", value: Array(policy.utf8), flags: 0)
            let ids = try fill(engine, data, clock: clock)
            let usage = try #require(Int64(try engine.text(data, "user.cache.usage")))
            let size = usage / 2
            let walPath = store.path + "/index.sqlite-wal"
            let walBefore = try FileManager.default.attributesOfItem(atPath: walPath)
            let previewed = try engine.evictor.preview(of: data, .size(size), in: engine.eviction)
            let walAfter = try FileManager.default.attributesOfItem(atPath: walPath)
            #expect(walBefore[.size] as? Int == walAfter[.size] as? Int)
            #expect(walBefore[.modificationDate] as? Date == walAfter[.modificationDate] as? Date, "the preview wrote")
            let previewedNames = previewed.map { "data/" + String(decoding: $0.record.name, as: UTF8.self) }
            #expect(!previewed.isEmpty)
            #expect(!previewedNames.contains("data/f1"), "a pinned file is no victim")
            if policy == "lru" {
                // Read since the last flush: the most recently read, not the oldest.
                #expect(!previewedNames.contains("data/f0") && !previewedNames.contains("data/f3"), "\(previewedNames)")
                #expect(previewedNames.first == "data/f2", "\(previewedNames)")
            }
            // Nothing changed: the files are all there.
            for (name, id) in ids { #expect(try engine.lookup(parent: data, name: Array(name.utf8)).id == id) }
            try engine.setxattr(data, name: "user.cache.max_size", value: Array(String(size).utf8), flags: 0)
            engine.evictor.enforceLimits(of: data, in: engine.eviction)
            engine.waitForIndex()
            #expect(try evictedPaths(store) == previewedNames)
        }
    }

    @Test func freeAndNextListInTheSameOrder() throws {
        try withPassesOnDemand { engine, data, store, clock in
            _ = try fill(engine, data, clock: clock)
            let next = try engine.evictor.preview(of: data, .next(10), in: engine.eviction)
            #expect(next.count == 10)
            let free = try engine.evictor.preview(of: data, .free(5000), in: engine.eviction)
            // The fewest victims whose sizes reach 5,000 bytes, a prefix of the same order.
            #expect(free.map(\.record.entryID) == next.prefix(free.count).map(\.record.entryID))
            #expect(free.reduce(0) { $0 + $1.record.size } >= 5000)
            #expect(free.dropLast().reduce(0) { $0 + $1.record.size } < 5000)
            // Within its limit at that size, a size pass would remove nothing.
            #expect(try engine.evictor.preview(of: data, .size(1 << 30), in: engine.eviction).isEmpty)
        }
    }

    @Test func theAttributeListsOneLineEachAndRefusesBadParameters() throws {
        try withPassesOnDemand { engine, data, store, clock in
            _ = try fill(engine, data, clock: clock)
            let lines = try engine.text(data, "user.cache.preview").split(separator: "\n")
            // 39 evictable files (one pinned), fewer than the 100 a plain preview lists.
            #expect(lines.count == 39)
            let fields = try #require(lines.first).split(separator: "\t")
            #expect(fields.count == 4 && fields[0] == "data/f2" && fields[1] == String(100 + 2 * 97), "\(fields)")
            let page = try engine.text(data, "user.cache.preview?next=3&from=1").split(separator: "\n")
            #expect(page.count == 2 && page[0].hasPrefix("data/"), "\(page)")
            #expect(Attributes.escaped("a\tb\\c\nd é") == "a\\tb\\\\c\\nd é")
            #expect(Attributes.escaped("plain/path") == "plain/path")
            for bad in ["size=banana", "free=-1", "next=x", "from=-2", "colour=blue", "size"] {
                #expect(throws: CacheError.self, "\(bad)") { try engine.getxattr(data, name: "user.cache.preview?" + bad) }
            }
        }
    }

    @Test func aLongPreviewComesInPagesOfOneSnapshot() throws {
        try withPassesOnDemand { engine, data, store, clock in
            let longName = String(repeating: "n", count: 60)
            for index in 0..<1200 {
                clock.advance(seconds: 1)
                try engine.writeFile("\(longName)-\(index)", in: data, content: [1])
            }
            engine.waitForIndex()
            var listed: [String] = []
            var from = 0
            var pages = 0
            while true {
                let value = try engine.getxattr(data, name: "user.cache.preview?free=1G&from=\(from)")
                #expect(value.count <= Tunables.attributePageBytes + 32)
                pages += 1
                var next: Int?
                for line in String(decoding: value, as: UTF8.self).split(separator: "\n") {
                    let fields = line.split(separator: "\t")
                    if fields.count == 2, fields[0] == "more" { next = Int(fields[1]) } else { listed.append(String(fields[0])) }
                }
                // A file written between pages changes nothing in this listing.
                try engine.writeFile("late-\(pages)", in: data, content: [1])
                guard let next else { break }
                from = next
            }
            #expect(pages >= 2)
            #expect(listed == (0..<1200).map { "data/\(longName)-\($0)" })
        }
    }
}
