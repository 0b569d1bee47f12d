@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import GRDB
import Testing

/// The index cut at every record boundary of the writer's log and recovered: a seeded run of
/// namespace and flag operations, each committed on its own, then for every commit in the log
/// a store whose WAL ends there, opened (which recovers it), compared with the model after
/// the operation that commit belongs to, and checked by `cachefs verify` (`StoreVerifier`).
///
/// How the cut is made. SQLite in WAL mode appends every commit to `index.sqlite-wal` as
/// frames (a 24-byte header and a page), the last frame of a commit carrying the database size
/// in its header; when the database is opened without its `-shm`, SQLite rebuilds the WAL
/// index by reading frames up to the last valid commit and ignores the rest. So a WAL
/// truncated at the end of commit k *is* the index as a crash right after commit k leaves it.
/// For that the frames must stay in the WAL: a checkpoint would move them into the main file
/// and then restart the WAL from its start, overwriting them. So the test turns SQLite's
/// automatic checkpoint off on the writer's connection (`PRAGMA wal_autocheckpoint = 0`;
/// GRDB's pool has one writer connection and GRDB never checkpoints by itself), runs one
/// `TRUNCATE` checkpoint before the first operation (the main file then holds the store as
/// it was created, and the WAL starts empty), and checks at the end that the main file did
/// not change. The background worker is stopped (its rounds flush the writer) and the commit
/// window is an hour, so commits happen only in the waits after each operation: the
/// operation's own group, then maybe a commit deleting the rows whose bytes that group's
/// after-commit action unlinked (the first wait may or may not include it). The test parses
/// the log, finds every commit frame, gives each to the operation whose waits made it, and
/// checks that each operation's last commit ends at the length recorded after its waits.
///
/// Which object files exist at the cut. Bytes are not in the WAL. A crash right after a
/// commit can leave the objects folder in any state it passed through before the next one:
/// at least what it held after the operation (unlinks only happen after the commit that left
/// the rows nameless), and at most, for a cut before the operation's last commit, also the
/// bytes its after-commit unlinks removed, or, for a cut at its last commit, also the bytes the
/// next operation created before its commit (a new file's bytes and content exist before its
/// row commits; their id lies in the open reserved range). Both ends are built and
/// recovered. States outside them are not reachable and are not made: e.g. bytes still there
/// after the commit that deleted their row (their unlink came first).
/// Rewrites and truncations of existing files are left out here: they commit a `writing` mark
/// inside the operation (covered by RecoveryTests and NamespaceModelTests).
@Suite struct IndexCutTests {
    @Test(arguments: [UInt64(21), 22, 23])
    func everyCommitOfTheLogRecoversToTheModelAtThatCommit(seed: UInt64) throws {
        let store = try TestStore()
        var random = SplitMix(seed: seed)
        var model = FlaggedModel()
        var boundaries: [Boundary] = []
        var steps: [String] = []  // what each step did, for messages
        let base: Data
        let log: Data
        do {
            let engine = try Self.openQuietly(store.path, commitWindow: 3600)
            engine.evictor.stop()
            engine.files.durability.stop()
            try engine.index.pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
                #expect(try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") == 0)
            }
            // Reserves the id range now, so no operation below commits a reservation of its own.
            _ = try engine.mkdir(parent: try engine.pool("thumbnails"), name: Array("warm-up".utf8), mode: 0o755,
                                 caller: tester)
            engine.waitForIndex()
            try engine.index.checkpoint()
            base = try Data(contentsOf: URL(fileURLWithPath: store.indexPath))
            #expect(try store.logLength() == 0)
            let data = try engine.pool("data")
            boundaries.append(Boundary(length: 0, model: model, objects: store.objects))
            for step in 0..<80 {
                let operation = model.randomOperation(&random)
                let expected = model.apply(operation)
                steps.append("\(operation) → \(expected)")
                let actual = NamespaceModelTests.errno { try operation.run(on: engine, pool: data) }
                #expect(actual == expected, "step \(step): \(operation) answered \(actual), the model \(expected)")
                // Twice: bytes removed by a commit are unlinked after it and their rows are
                // deleted by a commit of their own (see `CacheEngine.discardBytes`), which the
                // first wait may or may not include. After the second the writer is idle, so
                // the log's length is the end of a commit.
                engine.waitForIndex()
                engine.waitForIndex()
                boundaries.append(Boundary(length: try store.logLength(), model: model, objects: store.objects))
            }
            #expect(try Self.state(of: engine) == model.state, "the live engine left the model")
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
            log = try Data(contentsOf: URL(fileURLWithPath: store.indexPath + "-wal"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.indexPath)) == base,
                "a checkpoint ran during the test: the WAL no longer holds every commit")
        let commits = try WriteAheadLog.commitEnds(log)
        #expect(commits.last == log.count, "the log does not end with a commit")
        #expect(commits.count >= 25, "too few commits to be a test: \(commits.count)")

        // Every commit of the log belongs to one step: its own group, then maybe the deletion
        // of rows whose bytes that group removed. A cut at either shows the model after the step.
        var tested = 0
        var stepsWithTwoCommits = 0
        for step in 1..<boundaries.count {
            let (before, after) = (boundaries[step - 1], boundaries[step])
            let own = commits.filter { $0 > before.length && $0 <= after.length }
            #expect(own.isEmpty == (before.length == after.length), "step \(steps[step - 1]): its last commit is not at the recorded length")
            #expect(own.isEmpty || own.last == after.length, "step \(steps[step - 1]): recorded length \(after.length) is no commit's end")
            #expect(own.count <= 2, "step \(steps[step - 1]) made \(own.count) commits")
            if own.count == 2 { stepsWithTwoCommits += 1 }
            if own.isEmpty {
                #expect(before.model.state == after.model.state, "step \(steps[step - 1]): no commit, yet the model moved")
            }
            for (position, end) in own.enumerated() {
                // Bytes at the cut: at least those present after the step; at most, also those
                // the step's later after-commit unlinks removed (cut before the last commit),
                // or the next step's new bytes (cut at the last commit, before the next one).
                let extra: [String: Data]
                if position < own.count - 1 {
                    extra = before.objects
                } else {
                    extra = step + 1 < boundaries.count ? boundaries[step + 1].objects : [:]
                }
                let fullest = after.objects.merging(extra) { kept, _ in kept }
                for objects in [after.objects, fullest] {
                    try Self.recover(base: base, log: log.prefix(end), objects: objects, expecting: after.model,
                                     cut: "step \(step - 1) (\(steps[step - 1])), commit ending at byte \(end)")
                }
                tested += 1
            }
        }
        #expect(tested == commits.count, "some commits of the log were not cut at")
        #expect(stepsWithTwoCommits > 0, "no step removed bytes: the cut between a detach and its row's deletion is untested")
    }

    struct Boundary {
        var length: Int
        var model: FlaggedModel
        var objects: [String: Data]
    }

    /// Builds a store from the main file, a WAL prefix and object files, opens it (recovery
    /// runs), compares it with the model, then checks it with `cachefs verify`.
    static func recover(base: Data, log: Data, objects: [String: Data], expecting model: FlaggedModel,
                        cut: String) throws {
        let store = try TestStore()
        try base.write(to: URL(fileURLWithPath: store.indexPath))
        if !log.isEmpty { try log.write(to: URL(fileURLWithPath: store.indexPath + "-wal")) }
        for (path, bytes) in objects {
            let url = URL(fileURLWithPath: store.path + "/objects/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try bytes.write(to: url)
        }
        weak var released: CacheEngine?
        do {
            let engine = try openQuietly(store.path, commitWindow: 0.005)
            released = engine
            defer { engine.shutdown() }
            let recovered = try state(of: engine)
            #expect(recovered == model.state, "\(cut): the recovered store is not the model at that commit")
            #expect(engine.names.usage(of: try engine.pool("data")) == model.usage, "\(cut): usage")
            engine.waitForIndex()
            engine.waitForIndex()
            #expect(store.objectFiles.count == model.fileCount, "\(cut): bytes without a name, or names without bytes")
        }
        // The engine is gone (and its store lock with it): `cachefs verify` may take the store.
        #expect(released == nil, "\(cut): the engine outlived its scope")
        try TestStore.waitUntilUnlocked(store.path)
        let report = try StoreVerifier(storePath: store.path).run(repair: false)
        #expect(report.problems.isEmpty, "\(cut): verify found \(report.problems)")
    }

    /// Path below the data pool → "d" or "f:" + content, with "+p" (persistent) and "+n" (pinned).
    static func state(of engine: CacheEngine) throws -> [String: String] {
        let data = try engine.pool("data")
        var result: [String: String] = [:]
        var pending: [(EntryID, String)] = [(data, "")]
        while let (directory, prefix) = pending.popLast() {
            for item in try engine.readdir(directory, offset: 0, limit: 100_000).dropFirst(2) {
                let path = prefix + String(decoding: item.name, as: UTF8.self)
                let record = try engine.names.record(item.id)
                var value = item.kind == .directory ? "d" : "f:" + String(decoding: try engine.readAll(item.id), as: UTF8.self)
                if record.persistent { value += "+p" }
                if record.pinnedUntil != 0 { value += "+n" }
                result[path] = value
                if item.kind == .directory { pending.append((item.id, path + "/")) }
            }
        }
        return result
    }

    /// An engine whose background work never runs by itself (every interval an age), on a
    /// store where no free-space pressure can remove files.
    static func openQuietly(_ path: String, commitWindow: Double) throws -> CacheEngine {
        try CacheEngine(EngineConfiguration(
            storePath: path, minFree: MinFree.parse("0"), clock: ManualClock(), accessFlushSeconds: 1e9,
            sweepSeconds: 1e9, pressureCheckSeconds: 1e9, durabilitySeconds: 1e9, commitWindowSeconds: commitWindow))
    }
}

/// Reads SQLite's write-ahead log format (https://sqlite.org/fileformat2.html#walformat).
enum WriteAheadLog {
    /// The byte offset just past each commit frame, in order. Fails unless the log is a
    /// whole number of frames of one salt (one generation: no restart since the header).
    static func commitEnds(_ log: Data) throws -> [Int] {
        guard log.count >= 32 else { return [] }
        let bytes = [UInt8](log)
        func word(_ offset: Int) -> UInt32 {
            bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        #expect(word(0) & 0xFFFF_FFFE == 0x377F_0682, "not a WAL header")
        let frameSize = 24 + Int(word(8))
        #expect((bytes.count - 32) % frameSize == 0, "the log ends inside a frame")
        var ends: [Int] = []
        var offset = 32
        while offset + frameSize <= bytes.count {
            #expect(word(offset + 8) == word(16) && word(offset + 12) == word(20), "a frame of another generation")
            if word(offset + 4) != 0 { ends.append(offset + frameSize) }
            offset += frameSize
        }
        return ends
    }
}

extension TestStore {
    var indexPath: String { path + "/index.sqlite" }

    /// The WAL's length; a missing WAL is an error, not an empty log.
    func logLength() throws -> Int {
        let size = try FileManager.default.attributesOfItem(atPath: indexPath + "-wal")[.size] as? Int
        guard let size else { throw CocoaError(.fileReadUnknown) }
        return size
    }

    /// Every object file ("XX/ID") with its bytes.
    var objects: [String: Data] {
        var result: [String: Data] = [:]
        for name in objectFiles {
            result[name] = FileManager.default.contents(atPath: path + "/objects/" + name)
        }
        return result
    }
}
