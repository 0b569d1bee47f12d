import Foundation
import Testing

/// Progress and bars are for a terminal: `script` gives the command a pseudo-terminal, a
/// pipe gives it none.
@Suite struct TerminalOutputTests {
    /// Runs the command on a pseudo-terminal (util-linux `script`) and returns what it wrote.
    static func onTerminal(_ arguments: [String]) throws -> CommandResult {
        let command = arguments.map { "'" + $0 + "'" }.joined(separator: " ")
        return try Shell.run(["script", "-qec", command, "/dev/null"])
    }

    static func cachefs(_ arguments: String) -> String {
        "'\(MountedStore.executable)' \(arguments)"
    }

    @Test func clearAndPurgeShowProgressOnATerminalOnly() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("for i in $(seq 1 300); do echo $i > data/f$i; done")
            let piped = try mount.sh(Self.cachefs("clear '\(mount.mountpoint)' data 2>&1 | cat"))
            #expect(piped.succeeded && piped.output.isEmpty, "\(piped)")
            #expect(try mount.xattr("data", "user.cache.files") == "0")
            _ = try mount.mustSucceed("for i in $(seq 1 300); do echo $i > data/f$i; done")
            let shown = try Self.onTerminal([MountedStore.executable, "clear", mount.mountpoint, "data"])
            #expect(shown.succeeded, "\(shown)")
            #expect(shown.output.contains("clear: 300 of 300 files removed"), "\(shown.output)")
            #expect(shown.output.contains("files/s"), "\(shown.output)")
            let purge = try Self.onTerminal([MountedStore.executable, "purge", mount.mountpoint])
            #expect(purge.succeeded && purge.output.contains("purge: 0 of 0 files removed"), "\(purge.output)")
        }
    }

    @Test func verifyShowsProgressOnATerminalOnly() throws {
        let mount = try MountedStore()
        _ = try mount.mustSucceed("for i in $(seq 1 300); do echo $i > data/f$i; done")
        #expect(try mount.unmount() == 0)
        let piped = try Shell.bash(Self.cachefs("verify '\(mount.store)' 2>&1 | cat"))
        #expect(piped.output == "clean: 300 files checked\n", "\(piped)")
        let shown = try Self.onTerminal([MountedStore.executable, "verify", mount.store])
        #expect(shown.output.contains("verify: 300 of 300 files checked"), "\(shown.output)")
        #expect(shown.output.contains("clean: 300 files checked"), "\(shown.output)")
    }

    @Test func statusDrawsBarsOnATerminalOnly() throws {
        try withMountedStore(arguments: ["--pool", "data=1M"]) { mount in
            _ = try mount.mustSucceed("head -c 524288 /dev/zero > data/half")
            let bar = "[##########..........] 50%"
            let piped = try mount.sh(Self.cachefs("status '\(mount.mountpoint)' | cat"))
            #expect(piped.succeeded && piped.output.contains("512.0 KiB  50%") && !piped.output.contains("["),
                    "\(piped.output)")
            let shown = try Self.onTerminal([MountedStore.executable, "status", mount.mountpoint])
            #expect(shown.output.contains(bar), "\(shown.output)")
            let json = try Self.onTerminal([MountedStore.executable, "status", mount.mountpoint, "--json"])
            #expect(!json.output.contains("#"), "\(json.output)")
        }
    }
}
