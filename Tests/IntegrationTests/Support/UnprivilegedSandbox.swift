import Foundation
import Glibc

/// A user who is not root (uid 65534, `nobody`) in a private mount namespace whose
/// `/dev/fuse` is a node the test chooses, so the tests do not depend on the host's
/// `/dev/fuse` mode (0666 on Debian, 0600 on some machines) or /etc/fuse.conf.
///
/// The sandbox directory is 0755 and owned by root; `home` inside it belongs to the user.
/// The cachefs binary is copied in, so the user can run it wherever the build lives.
final class UnprivilegedSandbox {
    static let uid = 65534
    let directory: String
    let home: String
    let binary: String

    /// What stands at `/dev/fuse` inside the namespace.
    enum FuseNode {
        /// The FUSE character device (10, 229) with this mode.
        case device(mode: String)
        /// A plain file: the kernel refuses to mount with it.
        case plainFile
    }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-user-\(UUID().uuidString)").path
        home = directory + "/home"
        binary = directory + "/cachefs"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        chmod(directory, 0o755)
        chown(home, uid_t(Self.uid), gid_t(Self.uid))
        // Copied by cp: a descriptor open for writing in this process would leak into the
        // children other tests start meanwhile, and exec of the copy would fail (ETXTBSY).
        let copied = try Shell.run(["cp", MountedStore.executable, binary])
        guard copied.succeeded else { throw MountError(message: "cp: \(copied.error)") }
        chmod(binary, 0o755)
    }

    /// The FUSE control filesystem (fusectl) in the namespace, which a connection guardian
    /// of a user who is not root needs mounted (it cannot mount it).
    enum ControlFilesystem {
        case asOnTheHost
        case mounted
        case unmounted
    }

    /// Runs `script` with bash in a new mount namespace, as `nobody` unless `asRoot`, with
    /// `node` bind-mounted over /dev/fuse and, if given, `fuseConf` over /etc/fuse.conf.
    /// Every cachefs mount left in `home` is lazily unmounted when the script ends.
    func run(_ script: String, node: FuseNode, asRoot: Bool = false, fuseConf: String? = nil,
             fusectl: ControlFilesystem = .asOnTheHost) throws -> CommandResult {
        let nodePath = directory + "/fuse-node"
        unlink(nodePath)
        switch node {
        case .device(let mode):
            let made = try Shell.run(["mknod", "-m", mode, nodePath, "c", "10", "229"])
            guard made.succeeded else { throw MountError(message: "mknod: \(made.error)") }
        case .plainFile:
            _ = FileManager.default.createFile(atPath: nodePath, contents: Data())
        }
        var setup = "set -e\nmount --bind '\(nodePath)' /dev/fuse\n"
        if let fuseConf {
            let confPath = directory + "/fuse.conf"
            try fuseConf.write(toFile: confPath, atomically: true, encoding: .utf8)
            if !FileManager.default.fileExists(atPath: "/etc/fuse.conf") {
                throw MountError(message: "/etc/fuse.conf is missing (fuse3 installs it)")
            }
            setup += "mount --bind '\(confPath)' /etc/fuse.conf\n"
        }
        let control = "/sys/fs/fuse/connections"
        let controlMounted = "grep -q ' \(control) fusectl ' /proc/self/mounts"
        switch fusectl {
        case .asOnTheHost: break
        case .mounted: setup += "\(controlMounted) || mount -t fusectl fusectl \(control)\n"
        case .unmounted: setup += "while \(controlMounted); do umount \(control); done\n"
        }
        let scriptPath = directory + "/script.sh"
        try ("cd '\(home)'\n" + script).write(toFile: scriptPath, atomically: true, encoding: .utf8)
        chmod(scriptPath, 0o755)
        let user = asRoot ? "" : "setpriv --reuid=\(Self.uid) --regid=\(Self.uid) --clear-groups --reset-env "
        let cleanup = "for m in $(awk '$5 ~ \"^\(home)\" {print $5}' /proc/self/mountinfo); do fusermount3 -u -z \"$m\" || true; done"
        let waitForDaemons = "for i in $(seq 150); do pgrep -f '^\(binary) ' >/dev/null || break; sleep 0.1; done"
        setup += "set +e\n\(user)bash '\(scriptPath)'\nstatus=$?\n\(cleanup)\n\(waitForDaemons)\nexit $status\n"
        return try Shell.run(["unshare", "-m", "--propagation", "private", "bash", "-c", setup])
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Makes `store` and `mnt` in the home and a file `data/f` holding "kept" (pinned with
    /// `pinned`), then unmounts and waits until the daemon has let go of the store's lock (at
    /// most 30 s, else the script fails).
    func makeStoreWithFile(pinned: Bool = false, asRoot: Bool = false,
                           fusectl: ControlFilesystem = .asOnTheHost) throws -> CommandResult {
        try run("""
            set -e
            mkdir mnt
            '\(binary)' mount store mnt -o min_free=0
            echo kept > mnt/data/f
            \(pinned ? "setfattr -n user.cache.pinned -v 1 mnt/data/f" : "")
            fusermount3 -u mnt
            flock -w 30 store/lock true
            """, node: .device(mode: "0666"), asRoot: asRoot, fusectl: fusectl)
    }

    /// Mounts `store` (in the home) on `mnt` with a usable /dev/fuse, prints `mnt/data/f` and
    /// unmounts: what a store left by a failed mount must still do.
    func mountAndReadBack(store: String = "store", asRoot: Bool = false) throws -> CommandResult {
        try run("""
            set -e
            '\(binary)' mount \(store) mnt -o min_free=0
            cat mnt/data/f
            fusermount3 -u mnt
            """, node: .device(mode: "0666"), asRoot: asRoot)
    }
}
