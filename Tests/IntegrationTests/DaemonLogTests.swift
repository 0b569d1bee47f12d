import Foundation
import Glibc
import Testing

/// `STORE/daemon.log`: bounded by rotation, and more detailed at debug and trace.
@Suite struct DaemonLogTests {
    @Test func theLogIsRotatedAndTraceShowsRequestsAndDebugEvictionDecisions() throws {
        let scratch = try ScratchMount(prefix: "cachefs-log")
        defer { scratch.finish() }
        let base = scratch.base
        let limit = 65536
        let result = try Shell.bash("""
            set -e
            cd '\(base)'
            CACHEFS_LOG_ROTATE_BYTES=\(limit) '\(MountedStore.executable)' mount store mnt -o min_free=0 \
                --pool thumbnails=1M --log-level trace
            for i in $(seq 400); do echo $i > mnt/data/f$i; done
            for i in $(seq 12); do head -c 100000 /dev/zero > mnt/thumbnails/t$i; done
            for i in $(seq 50); do grep -q victims store/daemon.log store/daemon.log.1 && break; sleep 0.1; done
            fusermount3 -u mnt
            """)
        #expect(result.succeeded, "\(result.error)")
        let current = try String(contentsOfFile: base + "/store/daemon.log", encoding: .utf8)
        let previous = try String(contentsOfFile: base + "/store/daemon.log.1", encoding: .utf8)
        #expect(previous.utf8.count <= limit)
        #expect(current.utf8.count <= limit)
        let both = previous + current
        #expect(both.contains("create from pid"), "\(both.suffix(2000))")
        #expect(both.contains("lookup from pid"))
        // One line per request, named by its operation (a second line once read
        // "(_:_:_:) from pid N", the callback's #function).
        #expect(!both.contains(":_:"), "\(both.suffix(2000))")
        let requestLines = both.split(separator: "\n").filter { $0.contains(" trace cachefs: ") }
        let malformed = requestLines.filter { line in
            guard let words = line.split(separator: ":").last?.split(separator: " "), words.count == 4 else { return true }
            return words[1] != "from" || words[2] != "pid" || Int(words[3]) == nil
                || !words[0].allSatisfy { $0.isLowercase || $0 == "_" }
        }
        #expect(!requestLines.isEmpty && malformed.isEmpty, "\(malformed.prefix(5))")
        #expect(both.contains("victims, lru order"), "\(both.suffix(2000))")
    }

    @Test func infoShowsNoRequests() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > data/f && cat data/f")
            #expect(!mount.daemonLog.contains("from pid"), "\(mount.daemonLog)")
            #expect(mount.daemonLog.contains("info cachefs: mounted"), "\(mount.daemonLog)")
        }
    }
}
