import Foundation
import Glibc
import Testing

/// A pool whose origin is a program (`exec:`), a shell script: found, exit 44, failures
/// retried then EIO, a short delivery, early reads, and a fetch cut by kill -9.
@Suite struct ExecOriginTests {
    @Test func foundNotFoundAndFailuresAsTheProgramSays() throws {
        try withOriginMount("exec", prepare: { try $0.write("hello.txt", bytes: 12345) }) { mount, origin in
            #expect(try mount.mustSucceed("cmp data/hello.txt '\(origin.files)/hello.txt' && echo same") == "same")
            let missing = try mount.sh("cat data/missing.txt")
            #expect(!missing.succeeded && missing.error.contains("No such file"))
            // Exit 1 is retried (3 tries), then the reader gets EIO and nothing is kept.
            let broken = try mount.sh("cat data/broken.txt")
            #expect(!broken.succeeded && broken.error.contains("Input/output error"), "\(broken) \(mount.daemonLog)")
            #expect(origin.fetchCalls() == 1 + 3)
            #expect(try mount.xattr("data", "user.cache.fetch_errors") == "1")
            #expect(mount.daemonLog.contains("origin.sh: broken on purpose"))
            // Fewer bytes than announced: EIO, nothing stored, not retried.
            let short = try mount.sh("cat data/short.bin")
            #expect(!short.succeeded && short.error.contains("Input/output error"))
            #expect(origin.fetchCalls() == 1 + 3 + 1)
            #expect(try mount.xattr("data", "user.cache.fetch_errors") == "2")
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "hello.txt")
            #expect(try mount.xattr("data", "user.cache.usage") == "12345")
            let events = try String(contentsOfFile: mount.store + "/events.jsonl", encoding: .utf8)
            #expect(events.contains("\"fetch_failed\"") && events.contains("short.bin"))
        }
    }

    @Test func aReaderWaitsOnlyForItsRangeAndTheFetchShowsItsProgress() throws {
        try withOriginMount("exec", prepare: { try $0.holdSlowNames() }) {
            mount, origin in
            // The origin holds the rest back until `hold` goes: a reader that waited for the
            // whole file would be cut by `timeout` and count no bytes.
            #expect(try mount.mustSucceed("timeout 10 head -c 100 data/slow.bin | wc -c") == "100")
            // The fetch goes on to the origin's first MiB while the reader has its 100 bytes
            // (under load it was seen short of it when read at once), and stops there.
            #expect(try Shell.waitUntil(seconds: 10) {
                try mount.xattr("data/slow.bin", "user.cache.fetching") == "1048576/8388608"
            })
            try FileManager.default.removeItem(atPath: origin.hold)
            #expect(try mount.mustSucceed("timeout 20 wc -c < data/slow.bin") == "8388608")
            #expect(try mount.mustSucceed("cmp data/slow.bin <(head -c 8388608 /dev/zero) && echo same") == "same")
            #expect(try mount.xattr("data/slow.bin", "user.cache.fetching") == "")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "1")
        }
    }

    @Test func aFetchCutByKillIsNeverServedAfterRemount() throws {
        try withOriginMount("exec", prepare: { try $0.holdSlowNames() }) {
            mount, origin in
            try mount.crashWhileFetching("data/slow.bin", heldBy: origin.hold)
            #expect(try mount.objectFileCount() == 0)
            // Opened again, it is fetched whole.
            #expect(try mount.mustSucceed("timeout 20 wc -c < data/slow.bin") == "8388608")
        }
    }

    @Test func aFileBeingFetchedBecomesPersistentOnlyOnceComplete() throws {
        try withOriginMount("exec", prepare: { try $0.holdSlowNames() }) { mount, origin in
            #expect(try mount.mustSucceed("timeout 10 head -c 100 data/slow.bin | wc -c") == "100")
            // Waits for the fetch (the origin goes on after a second), so a crash can never
            // keep a torn persistent file.
            _ = try mount.mustSucceed("""
                (sleep 1; rm -f '\(origin.hold)') &
                setfattr -n user.cache.persistent -v 1 data/slow.bin; status=$?; wait; exit $status
                """)
            #expect(try mount.xattr("data/slow.bin", "user.cache.fetching") == "")
            #expect(try mount.xattr("data/slow.bin", "user.cache.state") == "persistent")
            #expect(try mount.xattr("data", "user.cache.persistent_usage") == "8388608")
        }
    }

    @Test func timeToFirstByteIsAtLeastTheOriginsDelay() throws {
        try withOriginMount("exec") { mount, _ in
            #expect(try mount.xattr("data", "user.cache.fetch_ttfb_ms") == "0")
            #expect(try mount.mustSucceed("cat data/sleepy-1.bin | wc -c") == "1000")
            #expect(try mount.mustSucceed("cat data/sleepy-2.bin | wc -c") == "1000")
            #expect(try mount.xattr("data", "user.cache.fetch_ttfb_count") == "2")
            let average = Int(try mount.xattr("data", "user.cache.fetch_ttfb_ms")) ?? -1
            let total = Int(try mount.xattr("data", "user.cache.fetch_ttfb_ms_total")) ?? -1
            #expect(average >= 500, "\(average)")
            #expect(total >= 1000 && total / 2 == average, "\(total) \(average)")
            // A hit fetches nothing, so it is not timed.
            _ = try mount.mustSucceed("cat data/sleepy-1.bin > /dev/null")
            #expect(try mount.xattr("data", "user.cache.fetch_ttfb_count") == "2")
            let metrics = try Shell.run([MountedStore.executable, "status", mount.mountpoint, "--format", "prometheus"])
            let samples = MetricsTests.parse(metrics.output)
            #expect(samples["cachefs_pool_fetch_ttfb_seconds_count{pool=\"data\"}"] == 2, "\(metrics.output)")
            #expect(samples["cachefs_pool_fetch_ttfb_seconds_sum{pool=\"data\"}"] == Double(total) / 1000)
        }
    }

    @Test func maxFetchesBoundsConcurrentFetchesPerPool() throws {
        try withOriginMount("exec", prepare: { try $0.holdSlowNames() }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.max_fetches -v 1 data")
            #expect(try mount.mustSucceed("timeout 10 head -c 100 data/slow-1.bin | wc -c") == "100")
            // The second fetch waits for the first one's slot, so even its first bytes wait.
            let waiting = try mount.sh("timeout 2 head -c 100 data/slow-2.bin")
            #expect(waiting.status == 124, "\(waiting)")
            #expect(try mount.xattr("data/slow-2.bin", "user.cache.fetching") == "0/8388608")
            try FileManager.default.removeItem(atPath: origin.hold)
            #expect(try mount.mustSucceed("timeout 20 cat data/slow-1.bin data/slow-2.bin | wc -c") == "16777216")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
        }
    }
}
