import Foundation
import Testing

/// Two mounts (two stores, standing for two machines) whose `thumbnails` pools share the tier
/// at `url`; each is unmounted afterwards, and B's log is attached when the body fails.
func withSharedTierMounts(url: String, a argumentsA: [String] = [], b argumentsB: [String] = [],
                          _ body: (MountedStore, MountedStore) throws -> Void) throws {
    try withMountedStore(arguments: argumentsA) { a in
        let b = try MountedStore(arguments: argumentsB, mountName: "mnt-b")
        do {
            for mount in [a, b] {
                _ = try mount.mustSucceed("setfattr -n user.cache.shared -v '\(url)' thumbnails")
            }
            try body(a, b)
        } catch {
            Issue.record("log of mount B:\n\(b.daemonLog)")
            throw error
        }
    }
}

/// Waits until `mount`'s thumbnails pool has written `bytes` to the tier and has nothing queued.
func waitUntilSharedBytesWritten(_ mount: MountedStore, bytes: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let written = try Shell.waitUntil(seconds: 10) {
        try mount.xattr("thumbnails", "user.cache.shared_bytes_written") == String(bytes)
            && mount.xattr("thumbnails", "user.cache.shared_queue") == "0"
    }
    let shown = try mount.xattr("thumbnails", "user.cache.shared_bytes_written")
    try #require(written, "shared_bytes_written is \(shown), not \(bytes); log:\n\(mount.daemonLog)",
                 sourceLocation: sourceLocation)
}

/// What a `cat` of a name the tier was to answer did: whether it failed with ENOENT (a miss,
/// as a tier down or slow must give) and how long it took, in milliseconds.
struct TimedMiss: CustomStringConvertible {
    let missed: Bool
    let milliseconds: Int
    let result: CommandResult

    var description: String { "\(milliseconds) ms, \(result)" }
}

extension MountedStore {
    /// `cat RELATIVE`, timed by the shell around it.
    func timedMiss(_ relative: String) throws -> TimedMiss {
        let timed = try sh("""
            start=$(date +%s%N); cat '\(relative)'; status=$?; end=$(date +%s%N)
            echo "$status $(( (end - start) / 1000000 ))"
            """)
        let fields = timed.output.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        return TimedMiss(missed: fields.count == 2 && fields[0] != 0 && timed.error.contains("No such file"),
                         milliseconds: fields.count == 2 ? fields[1] : .max, result: timed)
    }
}
