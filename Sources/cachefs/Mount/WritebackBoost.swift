import Foundation

/// `-o writeback_boost`: lifts the kernel's per-mount dirty-page limits for this mount.
///
/// The kernel gives every FUSE mount a writeback device with `max_ratio=1` and
/// `strict_limit=1`, which caps buffered writes near a quarter of the disk's speed. Raising
/// them (root only) brings writes to about the disk's speed, but lets one FUSE mount hold
/// far more dirty memory, so it is off by default.
enum WritebackBoost {
    static func apply(mountpoint: String) throws {
        guard let device = MountTable.current().entry(at: mountpoint)?.device else {
            throw MountPreflight.Problem(description: "writeback_boost: \(mountpoint) not found in /proc/self/mountinfo")
        }
        let directory = "/sys/class/bdi/\(device)"
        for (name, value) in [("max_ratio", "100"), ("strict_limit", "0")] {
            let path = directory + "/" + name
            guard FileManager.default.fileExists(atPath: path) else { continue }
            do {
                try value.write(toFile: path, atomically: false, encoding: .utf8)
            } catch {
                throw MountPreflight.Problem(description: "writeback_boost: cannot write \(path) (needs root): \(error.localizedDescription)")
            }
        }
    }
}
