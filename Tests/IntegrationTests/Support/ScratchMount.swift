import Foundation

/// A temporary directory with an empty `mnt` for tests that run `cachefs mount` themselves
/// (in the background, as a user would): `finish` unmounts (lazily if it must), waits until
/// the daemon let go of the store's lock, and removes everything, also when a test fails.
struct ScratchMount {
    let base: String
    /// The store whose lock `finish` waits for, relative to `base`.
    let storePath: String

    init(prefix: String, store: String = "store") throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        storePath = base + "/" + store
        try FileManager.default.createDirectory(atPath: base + "/mnt", withIntermediateDirectories: true)
    }

    func finish() {
        _ = try? Shell.run(["fusermount3", "-u", base + "/mnt"])
        _ = try? Shell.run(["fusermount3", "-uz", base + "/mnt"])
        _ = Shell.waitUntil(seconds: 30) { (try? Shell.run(["flock", "-n", storePath + "/lock", "true"]).succeeded) == true }
        try? FileManager.default.removeItem(atPath: base)
    }
}
