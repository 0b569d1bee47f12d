import Foundation
import Glibc
import Testing

/// `user.cache.unit` on a real mount: a directory's files evicted together or not at all,
/// also across a `kill -9` in the middle of the eviction.
@Suite struct EvictionUnitTests {
    private func events(_ mount: MountedStore, _ kind: String) throws -> [[String: Any]] {
        let text = try String(contentsOfFile: mount.store + "/events.jsonl", encoding: .utf8)
        return try text.split(separator: "\n").compactMap { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return object["event"] as? String == kind ? object : nil
        }
    }

    private func count(_ mount: MountedStore, _ directory: String) throws -> Int {
        try #require(Int(try mount.mustSucceed("ls \(directory) | wc -l")))
    }

    @Test func aUnitGoesWholeAndOnlyWhenItsNewestFileIsTheOldest() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("""
                mkdir data/video
                for i in $(seq 1 20); do head -c 10240 /dev/urandom > data/video/seg$i.ts; sleep 0.01; done
                for i in $(seq 1 10); do head -c 10240 /dev/urandom > data/other$i; sleep 0.01; done
                setfattr -n user.cache.unit -v 1 data/video
                """)
            #expect(try mount.xattr("data/video", "user.cache.unit") == "1")
            #expect(try mount.xattr("data/video", "user.cache.unit_files") == "20")
            #expect(try mount.xattr("data/video", "user.cache.unit_usage") == "204800")
            // One segment read last makes the whole unit the newest.
            _ = try mount.mustSucceed("sleep 0.01; cat data/video/seg3.ts > /dev/null")
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 300000 data && setfattr -n user.cache.purge -v 1 data")
            #expect(try count(mount, "data/video") == 20, "a unit is never half evicted")
            #expect(try events(mount, "evicted").allSatisfy { ($0["path"] as? String)?.hasPrefix("data/video") == false })
            // Once every other file is read after it, the unit is the oldest and goes, whole.
            _ = try mount.mustSucceed("sleep 0.01; cat data/other* > /dev/null")
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 100000 data && setfattr -n user.cache.purge -v 1 data")
            #expect(try count(mount, "data/video") == 0)
            let unitEvents = try events(mount, "evicted").filter { ($0["path"] as? String)?.hasPrefix("data/video") == true }
            #expect(unitEvents.count == 1, "\(unitEvents)")
            #expect(unitEvents.first?["path"] as? String == "data/video")
            #expect(unitEvents.first?["files"] as? Int == 20)
            #expect(unitEvents.first?["size"] as? Int == 204800)
        }
    }

    @Test func aPinnedMemberNestedUnitsAndRenamesInAndOut() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("""
                mkdir -p data/model data/game/textures
                for i in 1 2 3; do echo shard$i > data/model/shard$i; echo level$i > data/game/level$i; done
                for i in 1 2 3; do echo tex$i > data/game/textures/tex$i; done
                echo loose > data/loose
                setfattr -n user.cache.unit -v 1 data/model
                setfattr -n user.cache.unit -v 1 data/game/textures
                setfattr -n user.cache.unit -v 1 data/game
                setfattr -n user.cache.pinned -v 1 data/model/shard2
                mv data/model/shard3 data/shard3
                mv data/loose data/model/loose
                """)
            #expect(try mount.xattr("data/game", "user.cache.unit_files") == "6", "the outer unit holds the inner one")
            #expect(try mount.xattr("data/model", "user.cache.unit_files") == "3")
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 1 data && setfattr -n user.cache.purge -v 1 data")
            // The pinned shard keeps its unit (which gained `loose`); the rest went.
            #expect(try mount.mustSucceed("ls data/model | tr '\\n' ' '") == "loose shard1 shard2")
            #expect(try mount.mustSucceed("find data -type f | sort | tr '\\n' ' '")
                    == "data/model/loose data/model/shard1 data/model/shard2")
            let paths = try events(mount, "evicted").compactMap { $0["path"] as? String }.sorted()
            #expect(paths == ["data/game", "data/shard3"], "\(paths)")
            _ = try mount.mustSucceed("setfattr -x user.cache.pinned data/model/shard2 && setfattr -n user.cache.purge -v 1 data")
            #expect(try count(mount, "data/model") == 0)
        }
    }

    @Test func aUnitLargerThanItsPoolIsRefusedAndBadValuesAreEINVAL() throws {
        try withMountedStore(arguments: ["--pool", "data=1M"]) { mount in
            _ = try mount.mustSucceed("""
                mkdir data/pack
                setfattr -n user.cache.unit -v 1 data/pack
                head -c 600000 /dev/urandom > data/pack/a
                """)
            let big = try mount.sh("head -c 600000 /dev/urandom > data/pack/b")
            #expect(!big.succeeded && big.error.contains("File too large"), "\(big.error)")
            #expect(try mount.mustSucceed("ls data/pack") == "a")
            #expect(try events(mount, "refused").compactMap { $0["path"] as? String } == ["data/pack/b"])
            for value in ["2", "banana", "-1"] {
                let bad = try mount.sh("setfattr -n user.cache.unit -v \(value) data/pack")
                #expect(!bad.succeeded && bad.error.contains("Invalid argument"), "\(value): \(bad.error)")
            }
            #expect(try mount.xattr("data/pack", "user.cache.unit") == "1")
            let onPool = try mount.sh("setfattr -n user.cache.unit -v 1 data")
            #expect(!onPool.succeeded, "a pool is not a unit")
            // Removing the attribute splits it: the second file fits as a file of its own.
            _ = try mount.mustSucceed("setfattr -x user.cache.unit data/pack && head -c 600000 /dev/urandom > data/pack/b")
            #expect(try mount.xattr("data/pack", "user.cache.unit") == "0")
        }
    }

    @Test func thePreviewListsTheUnitOnce() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("""
                mkdir data/clip
                for i in 1 2 3; do head -c 1000 /dev/zero > data/clip/c$i; done
                sleep 0.01; echo later > data/later
                setfattr -n user.cache.unit -v 1 data/clip
                """)
            let first = try #require(try mount.xattr("data", "user.cache.preview").split(separator: "\n").first)
            #expect(first.hasPrefix("data/clip/\t3000\t") && first.contains("unit of 3 files"), "\(first)")
            let shown = try Shell.run([MountedStore.executable, "preview", mount.path("data"), "--free", "1"])
            #expect(shown.succeeded && shown.output.contains("data/clip/"), "\(shown.output) \(shown.error)")
        }
    }

    /// The daemon is killed while the evictor removes a unit of 1,500 files, at several
    /// moments: after the remount each unit is there whole or gone whole, and the store
    /// verifies clean.
    @Test func aUnitKilledInTheMiddleOfItsEvictionIsAllOrNone() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            var outcomes: [Int] = []
            // From before the pass commits to after it has (the mount's --pool data=0 sets the
            // size back at each remount, so a unit the kill saved stays until a later pass).
            for (round, delay) in ["0", "0.1", "0.4", nil].enumerated() {
                _ = try mount.mustSucceed("""
                    setfattr -n user.cache.max_size -v 0 data
                    mkdir data/u\(round) && cd data/u\(round) && for i in $(seq 1 1500); do echo $i > f$i; done
                    setfattr -n user.cache.unit -v 1 .
                    """)
                // The size pass runs on the evictor's thread, after setfattr returns.
                _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 100 data; sleep \(delay ?? "0")")
                if delay == nil {
                    // The remover takes a file's bytes only once its removal has committed: with
                    // every object file gone (100 bytes hold no unit), the whole pass is durable.
                    #expect(try mount.objectFilesLeft(waitingUpTo: 60) == 0, "the last pass never committed")
                }
                try mount.crash()
                try mount.mount()
                for earlier in 0...round {
                    let left = try count(mount, "data/u\(earlier)")
                    #expect(left == 0 || left == 1500, "unit u\(earlier) half evicted: \(left) files left")
                    if earlier == round { outcomes.append(left) }
                }
                let sizes = try mount.mustSucceed("find data -type f -printf '%s\\n' | awk '{s+=$1} END {print s+0}'")
                #expect(try mount.xattr("data", "user.cache.usage") == sizes)
            }
            #expect(try mount.unmount() == 0)
            let verify = try Shell.run([MountedStore.executable, "verify", mount.store])
            #expect(verify.status == 0, "\(verify.output) \(verify.error); outcomes \(outcomes)")
            try mount.mount()
            #expect(outcomes.last == 0, "a committed pass came back after the kill: outcomes \(outcomes)")
            // What the kills saved goes now, each unit whole, in one event each.
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 100 data && setfattr -n user.cache.purge -v 1 data")
            #expect(try mount.mustSucceed("find data -type f | wc -l") == "0", "outcomes \(outcomes)")
            #expect(try events(mount, "evicted").allSatisfy { $0["files"] as? Int == 1500 })
        }
    }
}
