import Foundation
import Glibc
import Testing

/// A `cachefs mount` that fails leaves the store as it was: a mountpoint a user who is not root
/// cannot write is refused before anything is made; a store (and parents) that this attempt made
/// is removed when the kernel refuses the mount; an existing store keeps its files; and the
/// store's parents are made with mkdir(2), whose errors read as the store's own (strerror).
@Suite struct FailedMountCleanupTests {
    @Test func aUserWhoCannotWriteTheMountpointIsRefusedBeforeAStoreIsMade() throws {
        let sandbox = try UnprivilegedSandbox()
        let mountpoint = sandbox.directory + "/root-owned"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: false)
        chmod(mountpoint, 0o755)
        // The form the walkthrough used: the daemon in the background.
        let result = try sandbox.run("exec '\(sandbox.binary)' mount new/store '\(mountpoint)' -o min_free=0",
                                     node: .device(mode: "0666"))
        #expect(result.status == 1, "status \(result.status): \(result.error)")
        #expect(result.error == "cachefs: mountpoint \(mountpoint) is not writable by this user (Permission denied): "
            + "a user who is not root may mount only on a directory they can write to (and own, if it is sticky); "
            + "mount on a directory of your own (mkdir ~/cache), or as root\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.home) == [], "a store was made")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mountpoint) == [])
    }

    /// The user may not open /dev/fuse (mode 0600): the kernel mount fails after the store was
    /// made. The store and the parents this attempt made go; a parent that was there stays.
    @Test func aKernelMountThatFailsRemovesTheStoreAndParentsItMadeOnly() throws {
        let sandbox = try UnprivilegedSandbox()
        let result = try sandbox.run("""
            mkdir mnt kept && echo mine > kept/note
            '\(sandbox.binary)' mount new/parents/store mnt -o min_free=0; echo "status $?"
            '\(sandbox.binary)' mount kept/store mnt -o min_free=0; echo "status $?"
            """, node: .device(mode: "0600"))
        #expect(result.output == "status 1\nstatus 1\n", "\(result.output) \(result.error)")
        let lines = result.error.split(separator: "\n")
        #expect(lines.count == 2 && lines.allSatisfy { $0.contains("failed to open /dev/fuse: Permission denied") },
                "\(result.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.home).sorted() == ["kept", "mnt"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.home + "/kept") == ["note"])
        #expect(try String(contentsOfFile: sandbox.home + "/kept/note", encoding: .utf8) == "mine\n")

        // Root's mount(2) refused by the kernel (/dev/fuse is a plain file) removes it too.
        let asRoot = try sandbox.run("'\(sandbox.binary)' mount made/by/root mnt --foreground -o min_free=0",
                                     node: .plainFile, asRoot: true)
        #expect(asRoot.status == 1, "status \(asRoot.status): \(asRoot.error)")
        #expect(asRoot.error.contains("mount failed: Invalid argument"), "\(asRoot.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.home).sorted() == ["kept", "mnt"])
    }

    @Test func aKernelMountThatFailsLeavesAnExistingStoreAsItWas() throws {
        let sandbox = try UnprivilegedSandbox()
        let store = sandbox.home + "/store"
        let made = try sandbox.makeStoreWithFile(pinned: true)
        try #require(made.succeeded, "\(made.error)")
        let before = try snapshot(store)
        let failed = try sandbox.run("exec '\(sandbox.binary)' mount store mnt -o min_free=0", node: .device(mode: "0600"))
        #expect(failed.status == 1, "status \(failed.status): \(failed.error)")
        #expect(failed.error.contains("failed to open /dev/fuse: Permission denied"), "\(failed.error)")
        let after = try snapshot(store)
        #expect(after == before, "\(before)\n---\n\(after)")
        let again = try sandbox.mountAndReadBack()
        #expect(again.succeeded, "\(again.error)")
        #expect(again.output == "kept\n")
    }

    /// Parents on a read-only filesystem, and on tmpfs filesystems with room for only so many
    /// inodes (so the parents' or the store's own mkdir fails after parents were made): each
    /// refusal says strerror's words, and what this attempt made is gone. The filesystems are
    /// mounted in a private mount namespace, so they vanish with it, also when the test fails.
    @Test func theStoresParentsAreMadeWithMkdirAndTheirErrorsReadAsTheStores() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-parents-\(UUID().uuidString)").path
        defer {
            do {
                try FileManager.default.removeItem(atPath: directory)
            } catch {
                Issue.record("cannot remove \(directory): \(error)")
            }
        }
        for name in ["mnt", "ro", "two", "three"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + name, withIntermediateDirectories: true)
        }
        let mount = "'\(MountedStore.executable)' mount"
        let mountpoint = "'\(directory)/mnt' --foreground -o min_free=0 2>&1; echo \"status $?\""
        let script = """
            set -e
            cd '\(directory)'
            trap 'umount ro two three' EXIT
            mount -t tmpfs -o ro,size=1M tmpfs ro
            mount -t tmpfs -o nr_inodes=2,size=1M tmpfs two    # its root and one directory
            mount -t tmpfs -o nr_inodes=3,size=1M tmpfs three  # its root and two directories
            set +e
            \(mount) '\(directory)/ro/a/b/store' \(mountpoint)
            \(mount) '\(directory)/ro/store' \(mountpoint)
            \(mount) '\(directory)/two/a/b/store' \(mountpoint)
            \(mount) '\(directory)/three/a/b/store' \(mountpoint)
            echo "left: $(find two three -mindepth 1 | wc -l)"
            """
        let result = try Shell.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script])
        #expect(result.succeeded, "\(result.error)")
        #expect(result.output.split(separator: "\n") == [
            "cachefs: cannot create the parents of store \(directory)/ro/a/b/store: Read-only file system",
            "status 1",
            "cachefs: cannot create store \(directory)/ro/store: Read-only file system",
            "status 1",
            "cachefs: cannot create the parents of store \(directory)/two/a/b/store: No space left on device",
            "status 1",
            "cachefs: cannot create store \(directory)/three/a/b/store: No space left on device",
            "status 1",
            "left: 0",
        ], "\(result.output)")
    }

    /// Every entry of the store with its type, mode and size, and the bytes of each file but two:
    /// the index, compared by its rows (a mount rewrites its pages; a JSON value's keys may come
    /// in another order), and daemon.state (nor its size), which says what the last daemon did and
    /// matters only while a daemon holds the store's lock.
    private func snapshot(_ store: String) throws -> String {
        let result = try Shell.run(["python3", "-c", """
            import hashlib, json, os, sqlite3, stat, sys
            root = sys.argv[1]
            lines = []
            for base, dirs, files in os.walk(root):
                for name in dirs + files:
                    path = os.path.join(base, name)
                    info = os.lstat(path)
                    line = "%s %o" % (os.path.relpath(path, root), info.st_mode)
                    # daemon.state names the last daemon's pid (its length is the pid's digits):
                    # each attempt writes its own, meaningful only while it holds the lock.
                    if name != "daemon.state":
                        line += " %d" % info.st_size
                    if stat.S_ISREG(info.st_mode) and name not in ("index.sqlite", "daemon.state"):
                        line += " " + hashlib.sha256(open(path, "rb").read()).hexdigest()
                    lines.append(line)
            def value(v):
                try:
                    return json.dumps(json.loads(v), sort_keys=True) if isinstance(v, str) else repr(v)
                except ValueError:
                    return repr(v)
            index = sqlite3.connect("file:%s/index.sqlite?immutable=1" % root, uri=True)
            for (table,) in index.execute("select name from sqlite_master where type = 'table'"):
                for row in index.execute('select * from "%s"' % table):
                    lines.append("%s %s" % (table, [value(v) for v in row]))
            print("\\n".join(sorted(lines)))
            """, store])
        try #require(result.succeeded, "\(result.error)")
        return result.output
    }
}
