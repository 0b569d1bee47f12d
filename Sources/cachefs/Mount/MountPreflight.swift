import Foundation
import Glibc

/// Checks that fail at once with a clear message, before anything is opened or mounted.
enum MountPreflight {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    static func check(store: String, mountpoint: String) throws {
        var info = stat()
        guard stat(mountpoint, &info) == 0 else {
            throw Problem(description: "mountpoint \(mountpoint) does not exist")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Problem(description: "mountpoint \(mountpoint) is not a directory")
        }
        let contents = (try? FileManager.default.contentsOfDirectory(atPath: mountpoint)) ?? []
        guard contents.isEmpty else {
            throw Problem(description: "mountpoint \(mountpoint) is not empty (is it mounted already?)")
        }
        if stat(store, &info) != 0 {
            guard errno == ENOENT, mkdir(store, 0o700) == 0 else {
                throw Problem(description: "cannot create store \(store): \(String(cString: strerror(errno)))")
            }
        }
        guard store != mountpoint, !mountpoint.hasPrefix(store + "/") else {
            throw Problem(description: "the mountpoint must not be inside the store")
        }
    }
}
