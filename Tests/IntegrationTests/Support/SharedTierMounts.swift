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
