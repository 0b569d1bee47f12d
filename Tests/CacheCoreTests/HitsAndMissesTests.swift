@testable import CacheCore
import CacheModel
import Glibc
import Testing

/// One definition of a hit and a miss (docs/pools-and-files.md, "Hits, misses and the hit
/// ratio"; ``CounterBook`` in the code): the totals `user.cache.hits` and `user.cache.misses`,
/// the root's sums, the pool figures the metrics read, and `user.cache.hit_ratio` all count
/// the same requests.
@Suite struct HitsAndMissesTests {
    /// The figures of `data` as the xattrs show them, checked against the root's and against
    /// ``CacheEngine/poolFigures()``, which the daemon's metrics file reads.
    private struct Shown: Equatable, CustomStringConvertible {
        var hits: Int64
        var misses: Int64
        var ratio: Double?
        var description: String { "hits=\(hits) misses=\(misses) hit_ratio=\(ratio.map { "\($0)" } ?? "")" }
    }

    private func shown(_ engine: CacheEngine, pool: EntryID) throws -> Shown {
        let hits = try #require(Int64(try engine.text(pool, "user.cache.hits")))
        let misses = try #require(Int64(try engine.text(pool, "user.cache.misses")))
        let ratioText = try engine.text(pool, "user.cache.hit_ratio")
        let ratio = ratioText.isEmpty ? nil : Double(ratioText)
        #expect(ratioText.isEmpty || ratio != nil, "hit_ratio '\(ratioText)' is no number")
        // The only pool with requests: the root's totals are its own.
        #expect(try engine.text(WellKnownEntry.root, "user.cache.hits") == "\(hits)")
        #expect(try engine.text(WellKnownEntry.root, "user.cache.misses") == "\(misses)")
        let figures = try #require(engine.poolFigures().first { $0.pool == "data" })
        #expect(figures.hits == hits && figures.misses == misses)
        #expect(figures.recentHitRatio.map(HitRatioText.format) == (ratio == nil ? nil : ratioText))
        return Shown(hits: hits, misses: misses, ratio: ratio)
    }

    /// `hit_ratio` is hits / (hits + misses) over the pool's recent requests, each weighted by
    /// how recent it is (weights halve every `Tunables.hitRatioHalfLife` requests). On a new
    /// store every request is recent, so it equals the totals' ratio within what `requests`
    /// requests of decay and the three decimals shown can move it.
    private func expectAgreement(_ shown: Shown, requests: Int, _ comment: Comment,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        let total = shown.hits + shown.misses
        guard total > 0 else {
            #expect(shown.ratio == nil, "\(comment): \(shown)", sourceLocation: sourceLocation)
            return
        }
        let expected = Double(shown.hits) / Double(total)
        let decay = 1 - pow(1 - 0.6931 / Tunables.hitRatioHalfLife, Double(requests))
        let ratio = shown.ratio ?? -1
        #expect(abs(ratio - expected) <= decay + 0.0005, "\(comment): \(shown), expected about \(expected)",
                sourceLocation: sourceLocation)
    }

    /// What the kernel sends for `open(O_CREAT)` of a new name: a LOOKUP that finds nothing,
    /// then CREATE. The file is written, closed and forgotten.
    private func kernelCreate(_ name: String, in pool: EntryID, _ engine: CacheEngine) throws -> EntryID {
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: pool, name: Array(name.utf8)) }
        return try engine.writeFile(name, in: pool, content: Array(repeating: 7, count: 100))
    }

    private func openForReading(_ id: EntryID, _ engine: CacheEngine) throws {
        engine.release(try engine.open(id, flags: O_RDONLY))
    }

    @Test func hitsMissesAndTheHitRatioCountTheSameRequests() throws {
        try withPassesOnDemand { engine, data, _, clock in
            expectAgreement(try shown(engine, pool: data), requests: 0, "a new pool")
            #expect(try shown(engine, pool: data) == Shown(hits: 0, misses: 0, ratio: nil))

            // An app looks for `a`, misses, and writes it: one miss (the kernel's own lookup
            // before its create is part of writing, not a miss).
            #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("a".utf8)) }
            let a = try kernelCreate("a", in: data, engine)
            // A file written without looking first: no miss.
            let b = try kernelCreate("b", in: data, engine)
            var now = try shown(engine, pool: data)
            #expect(now.hits == 0 && now.misses == 1, "\(now)")
            // The ratio of one miss and no hit.
            expectAgreement(now, requests: 1, "after two creates")

            // Opens for reading are hits; opening only to write and a stat are nothing.
            try openForReading(a, engine)
            try openForReading(a, engine)
            try openForReading(b, engine)
            engine.release(try engine.open(b, flags: O_WRONLY))
            _ = try engine.getattr(a)
            now = try shown(engine, pool: data)
            #expect(now.hits == 3 && now.misses == 1, "\(now)")
            expectAgreement(now, requests: 4, "after three opens for reading")

            // Lookups of names the pool does not have, with nothing written after them.
            for name in ["x", "y", "z"] {
                #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array(name.utf8)) }
            }
            now = try shown(engine, pool: data)
            #expect(now.hits == 3 && now.misses == 4, "\(now)")
            expectAgreement(now, requests: 7, "after three lookups of absent names")

            // A persistent file is held by the pool: its open is a hit; making it cached again
            // is not a request.
            let c = try kernelCreate("c", in: data, engine)
            try engine.setxattr(c, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
            try openForReading(c, engine)
            try engine.setxattr(c, name: "user.cache.persistent", value: Array("0".utf8), flags: 0)
            now = try shown(engine, pool: data)
            #expect(now.hits == 4 && now.misses == 4, "\(now)")
            expectAgreement(now, requests: 8, "after a persistent file's open")

            // A lookup that finds an expired file answers ENOENT: the pool does not have it.
            try engine.setxattr(a, name: "user.cache.expiration", value: Array("60".utf8), flags: 0)
            clock.advance(seconds: 120)
            #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("a".utf8)) }
            now = try shown(engine, pool: data)
            #expect(now.hits == 4 && now.misses == 5, "\(now)")
            expectAgreement(now, requests: 9, "after a lookup of an expired file")
        }
    }
}
