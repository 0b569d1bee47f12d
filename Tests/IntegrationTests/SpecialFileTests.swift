import Foundation
import Testing

/// Issue 8: FIFOs, UNIX sockets and device nodes in a pool. Programs that talk through a
/// FIFO or a socket in their cache directory work; a device node can be made (by root) but
/// not opened, since the mount stays `nodev`.
@Suite struct SpecialFileTests {
    @Test func aFifoCarriesBytesBetweenTwoProcesses() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let piped = try mount.sh("mkfifo data/pipe && (echo through-the-fifo > data/pipe &) && timeout 10 cat data/pipe")
            #expect(piped.succeeded && piped.output == "through-the-fifo\n", "\(piped)")
            #expect(try mount.mustSucceed("stat -c %F data/pipe") == "fifo")
        }
    }

    @Test func aUnixSocketInAPoolAcceptsAConnection() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let script = """
                import os, socket, sys
                os.chdir(sys.argv[1])
                server = socket.socket(socket.AF_UNIX); server.bind("sock"); server.listen(1)
                client = socket.socket(socket.AF_UNIX); client.connect("sock")
                peer, _ = server.accept(); client.sendall(b"hello"); print(peer.recv(5).decode())
                """
            let talked = try Shell.run(["timeout", "10", "python3", "-c", script, mount.path("data")])
            #expect(talked.succeeded && talked.output == "hello\n", "\(talked)")
            #expect(try mount.mustSucceed("stat -c %F data/sock") == "socket")
        }
    }

    /// docs/ext4-compatibility.md: symlinks, FIFOs and sockets hold no bytes, never count against usage and are
    /// never evicted: a clear of the pool leaves them.
    @Test func namesWithoutBytesAreNeitherCountedNorCleared() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("ln -s some/target data/link && mkfifo data/pipe && mknod data/null c 1 3")
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
            _ = try mount.mustSucceed("echo x > data/f && setfattr -n user.cache.clear -v 1 data")
            #expect(try Shell.waitUntil(seconds: 10) { try !mount.sh("test -e data/f").succeeded })
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "link null pipe")
            #expect(try mount.mustSucceed("readlink data/link") == "some/target")
        }
    }

    @Test func deviceNodesAreMadeButTheMountStaysNodev() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let made = try mount.sh("mknod data/null c 1 3 && mknod data/loop b 7 0 && stat -c '%F %t:%T' data/null data/loop")
            #expect(made.succeeded && made.output == "character special file 1:3\nblock special file 7:0\n", "\(made)")
            let opened = try mount.sh("head -c 1 data/null")
            #expect(!opened.succeeded && opened.error.contains("Permission denied"), "\(opened)")
            let options = try Shell.bash("awk '$2 == \"\(mount.mountpoint)\" {print $4}' /proc/mounts").output
            #expect(options.split(separator: ",").contains("nodev"), "mount options: \(options)")
        }
    }
}
