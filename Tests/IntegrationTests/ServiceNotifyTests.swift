import Foundation
import Glibc
import Testing

/// systemd's `Type=notify` protocol, against a `NOTIFY_SOCKET` listener of the tests' own.
@Suite struct ServiceNotifyTests {
    @Test(arguments: [false, true])
    func foregroundDaemonSaysReadyOnceMountedAndStoppingAfterUnmount(abstractSocket: Bool) throws {
        var listener: NotifyListener?
        let mount = try MountedStore { store in
            let created = try NotifyListener(directory: store.directory, abstract: abstractSocket, watching: store.mountpoint)
            store.environment["NOTIFY_SOCKET"] = created.socketName
            listener = created
        }
        let notifications = try #require(listener)
        defer { notifications.stop() }

        let ready = try #require(notifications.waitForMessage(withLine: "READY=1", seconds: 10), "\(mount.daemonLog)")
        #expect(ready.mountedWhenReceived, "READY=1 came before the mount was in /proc/mounts")
        #expect(notifications.waitForMessage(withLine: "STOPPING=1", seconds: 0.3) == nil, "STOPPING=1 while mounted")

        #expect(try mount.unmount() == 0)
        let stopping = try #require(notifications.waitForMessage(withLine: "STOPPING=1", seconds: 10), "\(mount.daemonLog)")
        #expect(!stopping.mountedWhenReceived)
        #expect(notifications.received.count == 2, "\(notifications.received.map(\.text))")
    }

    /// In the background the process systemd started exits once the mount is ready, so it
    /// names the daemon as the service's main process (`MAINPID=`) as it says READY=1.
    @Test func backgroundMountNamesTheDaemonAsMainProcess() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-it-\(UUID().uuidString)").path
        let store = directory + "/store"
        let mountpoint = directory + "/mnt"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let notifications = try NotifyListener(directory: directory, abstract: false, watching: mountpoint)
        var daemon: pid_t = 0
        defer {
            notifications.stop()
            if NotifyListener.isMounted(mountpoint) { _ = try? Shell.run(["fusermount3", "-uz", mountpoint]) }
            if daemon > 0 { kill(daemon, SIGKILL) }
            try? FileManager.default.removeItem(atPath: directory)
        }
        let output = OutputFile()
        defer { output.remove() }
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(input) }
        let mounter = try ChildProcess([MountedStore.executable, "mount", store, mountpoint, "-o", "min_free=0"],
                                       stdin: input, stdout: output.fd, stderr: output.fd,
                                       environment: ["NOTIFY_SOCKET": notifications.socketName])
        #expect(mounter.wait() == 0, "\(output.contents())")

        let ready = try #require(notifications.waitForMessage(withLine: "READY=1", seconds: 10))
        #expect(ready.mountedWhenReceived)
        let mainLine = try #require(ready.text.split(separator: "\n").first { $0.hasPrefix("MAINPID=") }, "\(ready.text)")
        daemon = try #require(pid_t(mainLine.dropFirst("MAINPID=".count)))
        #expect(daemon != mounter.pid)
        let commandLine = try String(contentsOfFile: "/proc/\(daemon)/cmdline", encoding: .utf8)
        #expect(commandLine.contains(mountpoint) && commandLine.contains("--foreground"), "\(commandLine)")

        #expect(try Shell.run(["fusermount3", "-u", mountpoint]).succeeded)
        #expect(notifications.waitForMessage(withLine: "STOPPING=1", seconds: 10) != nil)
        #expect(Shell.waitUntil(seconds: 15) { kill(daemon, 0) != 0 }, "the daemon did not exit after unmount")
        daemon = 0
    }

    /// systemd runs ExecStop (`fusermount3 -u`) and sends SIGTERM as soon as it returns,
    /// while the daemon is still flushing; the daemon must finish the flush and exit 0.
    @Test func sigtermDuringTheFinalFlushDoesNotCutItShort() throws {
        let mount = try MountedStore()
        _ = try mount.mustSucceed("for i in $(seq 200); do echo $i > data/f$i; done")
        let daemon = try #require(mount.daemon)
        #expect(try Shell.run(["fusermount3", "-u", mount.mountpoint]).succeeded)
        while daemon.isRunning {
            daemon.signal(SIGTERM)
            usleep(500)
        }
        #expect(daemon.terminationStatus == 0, "\(mount.daemonLog)")
        #expect(mount.daemonLog.contains("closed cleanly"), "\(mount.daemonLog)")
    }
}
