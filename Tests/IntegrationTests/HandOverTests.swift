import Foundation
import Glibc
import Testing

/// `fusermount3 -u M && cachefs mount S M`: the new mount waits for the daemon that is still
/// flushing, whatever moment of its stop it looks at (issue 28).
@Suite struct HandOverTests {
    static let rounds = 50

    @Test func unmountAndMountAtOnceHandOverEveryTimeUnderLoad() throws {
        let scratch = try ScratchMount(prefix: "cachefs-handover")
        defer { scratch.finish() }
        let base = scratch.base
        let cachefs = MountedStore.executable
        let prepared = try Shell.bash("""
            set -e
            cd '\(base)'
            mkdir files
            for round in $(seq \(Self.rounds)); do head -c $((4096 + round * 997)) /dev/urandom > files/f$round; done
            '\(cachefs)' mount store mnt -o min_free=0
            """)
        try #require(prepared.succeeded, "\(prepared.error)")

        // Both cores busy: the stopping daemon and the new mount are cut anywhere by the scheduler.
        let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(quiet) }
        let load = try (0..<2).map { _ in
            try ChildProcess(["sh", "-c", "while :; do :; done"], stdin: quiet, stdout: quiet, stderr: quiet)
        }
        defer {
            for process in load {
                process.signal(SIGKILL)
                process.wait()
            }
        }

        for round in 1...Self.rounds {
            let result = try Shell.bash("""
                cd '\(base)' && cp files/f\(round) mnt/data/ \
                    && fusermount3 -u mnt && '\(cachefs)' mount store mnt -o min_free=0
                """)
            try #require(result.succeeded, "round \(round): \(result.error)")
        }
        let compared = try Shell.bash("""
            cd '\(base)' && for round in $(seq \(Self.rounds)); do cmp files/f$round mnt/data/f$round || exit 1; done
            """)
        #expect(compared.succeeded, "\(compared.output)\(compared.error)")
    }
}
