import Foundation
import Testing

@Suite struct CommandLineTests {
    private func cachefs(_ arguments: String...) throws -> CommandResult {
        try Shell.run([MountedStore.executable] + arguments)
    }

    @Test func statusJSONPinPersistSetPurgeClearAndEvents() throws {
        try withMountedStore(arguments: ["--pool", "data=1M"]) { mount in
            _ = try mount.mustSucceed("echo a > data/a && echo bb > data/b && echo ccc > data/c")
            #expect(try cachefs("pin", mount.path("data/a")).succeeded)
            #expect(try cachefs("persist", mount.path("data/b")).succeeded)
            #expect(try mount.xattr("data/a", "user.cache.state") == "pinned")
            #expect(try mount.xattr("data/b", "user.cache.state") == "persistent")
            #expect(try cachefs("set", mount.path("data"), "max_age", "7d").succeeded)
            let status = try cachefs("status", mount.mountpoint, "--json")
            #expect(status.succeeded, "\(status.error)")
            let report = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
            let pools = report?["pools"] as? [[String: Any]] ?? []
            let data = try #require(pools.first { $0["name"] as? String == "data" })
            #expect(data["usage"] as? Int == 6)
            #expect(data["persistent_usage"] as? Int == 3)
            #expect(data["pinned_files"] as? Int == 1)
            #expect(data["max_size"] as? Int == 1 << 20)
            #expect(data["max_age"] as? Int == 604_800)
            #expect(pools.map { $0["name"] as? String } == ["avatars", "data", "thumbnails"])
            let table = try cachefs("status", mount.mountpoint)
            #expect(table.output.contains("data") && table.output.contains("%"))
            #expect(try cachefs("purge", mount.mountpoint).succeeded)
            #expect(try cachefs("clear", mount.mountpoint, "data").succeeded)
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "a b")
            #expect(try cachefs("unpin", mount.path("data/a")).succeeded)
            #expect(try cachefs("unpersist", mount.path("data/b")).succeeded)
            #expect(try mount.xattr("data/b", "user.cache.state") == "cached")
            let events = try cachefs("events", mount.mountpoint)
            #expect(events.output.contains("cleared") && events.output.contains("data/c"), "\(events.output)")
        }
    }

    @Test func eventsFollowPrintsNewEvents() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let script = """
                '\(MountedStore.executable)' events --follow --json '\(mount.mountpoint)' > '\(mount.directory)/follow.log' &
                follower=$!
                sleep 0.5
                echo x > data/gone && rm data/gone
                for i in $(seq 50); do grep -q gone '\(mount.directory)/follow.log' && break; sleep 0.1; done
                kill $follower
                """
            _ = try mount.mustSucceed(script)
            let followed = try String(contentsOfFile: mount.directory + "/follow.log", encoding: .utf8)
            #expect(followed.contains("\"path\":\"data/gone\""), "\(followed)")
        }
    }

    @Test func badArgumentsExitNonZeroWithOneLineAndNoStackTrace() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo a > data/a")
            let cases: [[String]] = [
                ["set", mount.path("data"), "max_size", "lots"],
                ["set", mount.path("data"), "colour", "blue"],
                ["pin", "--for", "soon", mount.path("data/a")],
                ["pin", "/tmp"],
                ["status", "/tmp"],
                ["purge", mount.mountpoint, "nosuchpool"],
                ["frobnicate"],
            ]
            for arguments in cases {
                let result = try Shell.run([MountedStore.executable] + arguments)
                #expect(result.status != 0, "\(arguments)")
                #expect(!result.error.isEmpty && !result.error.contains("Fatal error"), "\(arguments): \(result.error)")
            }
            #expect(try mount.xattr("data", "user.cache.max_size") == String(25 << 20))
        }
    }
}

@Suite struct FailedMountTests {
    /// A kernel mount that fails (here `/dev/fuse` is a plain file, in a private mount
    /// namespace) ends with one line and exit 1, never a crash, and leaves the store usable.
    @Test func aRefusedKernelMountExitsOneWithOneLine() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-refused-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/mnt", withIntermediateDirectories: true)
        let script = """
            set -e
            touch '\(directory)/not-a-device'
            mount --bind '\(directory)/not-a-device' /dev/fuse
            exec '\(MountedStore.executable)' mount '\(directory)/store' '\(directory)/mnt' --foreground -o min_free=0
            """
        try FileManager.default.createDirectory(atPath: directory + "/store", withIntermediateDirectories: true)
        let result = try Shell.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script])
        #expect(result.status == 1, "exit \(result.status): \(result.error)")
        #expect(!result.error.contains("double free") && !result.error.contains("Fatal error"), "\(result.error)")
        #expect(result.error.contains("cachefs: cannot mount on"), "\(result.error)")
        let verify = try Shell.run([MountedStore.executable, "verify", directory + "/store"])
        #expect(verify.status == 0, "verify after the refused mount: \(verify.output) \(verify.error)")
    }
}
