import Foundation
import Glibc

/// A mountpoint whose daemon died (`kill -9`, a crash): the kernel still lists the mount,
/// and every access answers ENOTCONN ("Transport endpoint is not connected").
enum DeadMount {
    /// Detaches a dead cachefs mount so the mountpoint can be used again: `umount2` with
    /// MNT_DETACH as root, `fusermount3 -u -z` (setuid) for everyone else.
    static func clear(_ mountpoint: String) throws {
        if getuid() == 0 && umount2(mountpoint, Int32(MNT_DETACH)) == 0 { return }
        let status = try run(["fusermount3", "-u", "-z", mountpoint])
        guard status == 0 else {
            throw MountPreflight.Problem(description: "mountpoint \(mountpoint) is a dead cachefs mount (its daemon died) "
                + "and fusermount3 -u -z could not remove it (status \(status)); remove it by hand and mount again")
        }
    }

    private static func run(_ arguments: [String]) throws -> Int32 {
        let cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawnp(&child, arguments[0], nil, nil, cArguments, environ)
        guard spawned == 0 else {
            throw MountPreflight.Problem(description: "cannot run \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
