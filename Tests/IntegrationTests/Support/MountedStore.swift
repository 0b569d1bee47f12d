import Foundation
import Glibc
import Testing

/// A real cachefs mount in a fresh temporary directory, driven by `--foreground` so the
/// test owns the daemon process and sees its exit status. Always unmounted, also when a
/// test fails: `fusermount3 -u`, then `-uz`, then SIGKILL.
final class MountedStore {
    let directory: String
    let store: String
    let mountpoint: String
    let logPath: String
    private(set) var daemon: ChildProcess?
    var extraArguments: [String]
    /// Extra environment for the daemon (CACHEFS_BOOT_ID simulates a reboot).
    var environment: [String: String] = [:]

    /// `prepare` runs once the directories exist, before the first mount (to put the store
    /// on a disk of its own, say). `mountName`: the mountpoint's name in the test's directory.
    init(arguments: [String] = [], mountName: String = "mnt", prepare: (MountedStore) throws -> Void = { _ in }) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-it-\(UUID().uuidString)").path
        store = directory + "/store"
        mountpoint = directory + "/" + mountName
        logPath = directory + "/daemon.log"
        extraArguments = arguments
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        try prepare(self)
        try mount()
    }

    static var executable: String {
        // The test bundle sits next to the built `cachefs` executable.
        let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return bundle.deletingLastPathComponent().appendingPathComponent("cachefs").path
    }

    /// Starts the daemon and waits until the kernel shows the mount.
    func mount() throws {
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            close(log)
            close(input)
        }
        let process = try ChildProcess(
            [Self.executable, "mount", store, mountpoint, "--foreground", "-o", "min_free=0"] + extraArguments,
            stdin: input, stdout: log, stderr: log, environment: environment)
        daemon = process
        let mounted = Shell.waitUntil(seconds: 15) { isMounted || !process.isRunning }
        guard mounted, process.isRunning else {
            throw MountError(message: "mount did not come up; \(Self.whereItWaits(process))daemon log:\n\(daemonLog)")
        }
    }

    /// For a daemon that runs but has not mounted: each thread's state and kernel stack, so a
    /// failure shows what it waited for rather than only that it waited.
    private static func whereItWaits(_ process: ChildProcess) -> String {
        guard process.isRunning else { return "the daemon exited \(process.terminationStatus); " }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.pid)/task")) ?? []
        let threads = tasks.sorted().map { task -> String in
            let folder = "/proc/\(process.pid)/task/\(task)"
            let name = (try? String(contentsOfFile: folder + "/comm", encoding: .utf8)) ?? "?"
            let stack = (try? String(contentsOfFile: folder + "/stack", encoding: .utf8)) ?? "(no stack)"
            return "thread \(task) \(name.trimmingCharacters(in: .whitespacesAndNewlines)):\n\(stack)"
        }
        return "the daemon still runs; its threads:\n\(threads.joined())\n"
    }

    var isMounted: Bool {
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        return mounts.split(separator: "\n").contains {
            $0.split(separator: " ").dropFirst().first.map(Self.unescapedMountField) == mountpoint
        }
    }

    /// /proc/mounts writes a space, tab, newline and backslash as octal (`\040`).
    private static func unescapedMountField(_ field: Substring) -> String {
        var text = String(field)
        for (escape, character) in [("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")] {
            text = text.replacingOccurrences(of: escape, with: character)
        }
        return text
    }

    var daemonLog: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)"
    }

    /// Unmounts with `fusermount3 -u` and returns the daemon's exit status.
    @discardableResult
    func unmount() throws -> Int32 {
        guard let process = daemon else { return 0 }
        // The kernel sends RELEASE after close() returns; a busy mount is retried briefly.
        let unmounted = try Shell.waitUntil(seconds: 10) { try Shell.run(["fusermount3", "-u", mountpoint]).succeeded }
        guard unmounted else { throw MountError(message: "fusermount3 -u kept failing") }
        guard Shell.waitUntil(seconds: 15, { !process.isRunning }) else {
            throw MountError(message: "daemon did not exit after unmount; log:\n\(daemonLog)")
        }
        daemon = nil
        return process.terminationStatus
    }

    /// Drops the record of a daemon that exited by other means than `unmount()`.
    func forgetDaemon() throws {
        guard let process = daemon, !process.isRunning else { throw MountError(message: "the daemon still runs") }
        daemon = nil
    }

    func remount() throws {
        let status = try unmount()
        guard status == 0 else { throw MountError(message: "daemon exited \(status); log:\n\(daemonLog)") }
        try mount()
    }

    /// Kills the daemon the hard way and clears the dead mount, as after a crash.
    func crash() throws {
        guard let process = daemon else { return }
        killAndReap(process)
        try Shell.run(["fusermount3", "-uz", mountpoint])
        daemon = nil
    }

    /// SIGKILL and reap. A daemon killed while its notification thread waits inside the
    /// kernel stays until the FUSE connection is aborted, which its guardian does; should
    /// the guardian fail, `umount -f` aborts it, so a test never hangs on that (and
    /// DaemonDeathTests fail).
    private func killAndReap(_ process: ChildProcess) {
        process.signal(SIGKILL)
        if !Shell.waitUntil(seconds: 5, { !process.isRunning }) {
            _ = try? Shell.run(["umount", "-f", mountpoint])
        }
        process.wait()
    }

    func path(_ relative: String) -> String { mountpoint + "/" + relative }

    /// Ends the mount whatever state the daemon is in: unmount, lazy unmount, then SIGKILL.
    func forceStop() {
        guard let process = daemon else { return }
        if isMounted { _ = try? Shell.run(["fusermount3", "-u", mountpoint]) }
        if isMounted { _ = try? Shell.run(["fusermount3", "-uz", mountpoint]) }
        if !Shell.waitUntil(seconds: 5, { !process.isRunning }) { killAndReap(process) }
        daemon = nil
    }

    deinit {
        forceStop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

struct MountError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Runs `body` against a fresh mount of a store of `kind`, which is always unmounted
/// afterwards; on failure the daemon's log is attached to the test's output.
func withMountedStore(arguments: [String] = [], kind: StoreKind = .plaintext,
                      _ body: (MountedStore) throws -> Void) throws {
    let mounted = try kind == .encrypted ? MountedStore.encrypted(arguments: arguments) : MountedStore(arguments: arguments)
    do {
        try body(mounted)
    } catch {
        Issue.record("daemon log:\n\(mounted.daemonLog)")
        throw error
    }
}

/// Helpers that run the tools users use and report their failures with stderr.
extension MountedStore {
    @discardableResult
    func sh(_ script: String) throws -> CommandResult {
        try Shell.bash("cd '\(mountpoint)' || exit 99\n\(script)")
    }

    func mustSucceed(_ script: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try sh(script)
        #expect(result.succeeded, "\(script) failed: \(result.error)", sourceLocation: sourceLocation)
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func xattr(_ relative: String, _ name: String) throws -> String {
        try mustSucceed("getfattr --only-values -n \(name) '\(relative)'")
    }

    /// The files under the store's `objects` folder.
    func objectFileCount() throws -> Int {
        let found = try Shell.bash("find '\(store)/objects' -type f | wc -l").output
        return try #require(Int(found.trimmingCharacters(in: .whitespacesAndNewlines)), "find printed \(found)")
    }

    /// The object files left once none are, or `seconds` have passed. Removed bytes go on the
    /// byte remover's thread once the index has committed their removal: a moment after
    /// `pending_usage` drops, never in the same step.
    func objectFilesLeft(waitingUpTo seconds: Double) throws -> Int {
        var left = 0
        _ = try Shell.waitUntil(seconds: seconds) {
            left = try objectFileCount()
            return left == 0
        }
        return left
    }

    /// `STORE/events.jsonl` once `isComplete` holds for its text, or as it is after `seconds`.
    /// A background pass writes its events right after the hold that changed what a test
    /// waits for (usage, a listing, a pool's policy): a moment later, never in the same step.
    func events(waitingUpTo seconds: Double, until isComplete: (String) -> Bool) throws -> String {
        let path = store + "/events.jsonl"
        var text = ""
        _ = try Shell.waitUntil(seconds: seconds) {
            if FileManager.default.fileExists(atPath: path) { text = try String(contentsOfFile: path, encoding: .utf8) }
            return isComplete(text)
        }
        return text
    }
}
