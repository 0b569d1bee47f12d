import CLinux
import Foundation
import FuseAdapter
import Glibc

/// Checks that fail at once with a clear message, before anything is opened or mounted.
enum MountPreflight {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// What a store holds once cachefs has used it; a directory with anything else in it is
    /// someone's data and is refused.
    static let storeMarker = "index.sqlite"

    /// Returns the store and parents this attempt made, if it made them: the caller removes
    /// them when the mount fails (``NewStore/remove()``).
    static func check(store: String, mountpoint: String) throws -> NewStore? {
        guard store != mountpoint, !mountpoint.hasPrefix(store + "/") else {
            throw Problem(description: "the mountpoint must not be inside the store")
        }
        try checkMountpoint(mountpoint)
        let made = try prepareStore(store)
        DaemonHandOver.waitForStoppingDaemon(store: store)
        return made
    }

    /// The mountpoint must be an existing, empty directory. A dead cachefs mount left by a
    /// daemon that was killed is cleared first. (The kernel may still answer `stat` of a
    /// dead mount's root from its cache; `statfs` always asks the daemon, so it tells.)
    private static func checkMountpoint(_ mountpoint: String) throws {
        if let mounted = MountTable.current().entry(at: mountpoint) {
            var filesystem = statfs()
            if statfs(mountpoint, &filesystem) != 0 && errno == ENOTCONN {
                guard mounted.type == "fuse.cachefs" else {
                    throw Problem(description: "mountpoint \(mountpoint) is a dead mount of type \(mounted.type) (Transport "
                        + "endpoint is not connected); unmount it with fusermount3 -u -z \(mountpoint) and mount again")
                }
                try DeadMount.clear(mountpoint)
                printError("cachefs: removed the dead mount on \(mountpoint) left by a daemon that died")
            }
        }
        var info = stat()
        guard stat(mountpoint, &info) == 0 else {
            if errno == ENOENT {
                throw Problem(description: "mountpoint \(mountpoint) does not exist (create it first: mkdir -p \(mountpoint))")
            }
            throw Problem(description: "mountpoint \(mountpoint): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Problem(description: "mountpoint \(mountpoint) is not a directory")
        }
        try checkWritable(mountpoint)
        let contents: [String]
        do {
            contents = try FileManager.default.contentsOfDirectory(atPath: mountpoint)
        } catch {
            throw Problem(description: "cannot read mountpoint \(mountpoint): \(error.localizedDescription)")
        }
        guard contents.isEmpty else {
            throw Problem(description: "mountpoint \(mountpoint) is not empty (is it mounted already?)")
        }
    }

    /// fusermount3 mounts for a user who is not root only on a directory that user may write
    /// to; asked here, the refusal comes before a store is made, in words that fit it.
    private static func checkWritable(_ mountpoint: String) throws {
        guard getuid() != 0, access(mountpoint, W_OK) != 0 else { return }
        throw Problem(description: "mountpoint \(mountpoint) is not writable by this user (\(String(cString: strerror(errno)))): "
            + MountFailure.unwritableMountpointAdvice)
    }

    /// Creates a missing store (and its missing parents), returning what it made; accepts an
    /// existing directory only when it is empty or already a store, and changes nothing in
    /// one it refuses.
    private static func prepareStore(_ store: String) throws -> NewStore? {
        var info = stat()
        guard stat(store, &info) == 0 else {
            guard errno == ENOENT else {
                throw Problem(description: "cannot use store \(store): \(String(cString: strerror(errno)))")
            }
            return try NewStore.make(store)
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Problem(description: "store \(store) is not a directory")
        }
        let contents: [String]
        do {
            contents = try FileManager.default.contentsOfDirectory(atPath: store)
        } catch {
            throw Problem(description: "cannot read store \(store): \(error.localizedDescription)")
        }
        guard contents.isEmpty || contents.contains(storeMarker) else {
            throw Problem(description: "\(store) is neither empty nor a cachefs store (it has no \(storeMarker)); "
                + "give a new or empty directory as the store")
        }
        return nil
    }
}
