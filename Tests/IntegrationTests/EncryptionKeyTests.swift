import Foundation
import Glibc
import Testing

/// The keys of an encrypted store, as a user meets them: `cachefs mount` (the daemon form)
/// refuses a missing, wrong or misplaced key at once with one line and changes nothing;
/// `rekey` swaps the key; systemd's credential and a typed passphrase work.
@Suite struct EncryptionKeyTests {
    private final class Place {
        let directory: String
        var store: String { directory + "/store" }
        var mountpoint: String { directory + "/mnt" }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-keys-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory + "/mnt", withIntermediateDirectories: true)
        }

        func key(_ name: String) throws -> String {
            let path = directory + "/" + name
            let made = try Shell.run([MountedStore.executable, "keygen", path])
            try #require(made.succeeded, "\(made.error)")
            return path
        }

        func mount(_ arguments: [String], environment: [String] = []) throws -> CommandResult {
            try Shell.run(["env"] + environment + [MountedStore.executable, "mount", store, mountpoint] + arguments)
        }

        func unmount() throws {
            let done = try Shell.waitUntil(seconds: 10) { try Shell.run(["fusermount3", "-u", mountpoint]).succeeded }
            try #require(done, "fusermount3 -u kept failing")
        }

        /// Waits until the daemon that served the store has closed it (it holds `flock` on
        /// STORE/lock until its last flush is done).
        func waitUntilClosed() throws {
            let free = try Shell.waitUntil(seconds: 15) {
                try Shell.run(["python3", "-c", "import fcntl, sys; fcntl.flock(open(sys.argv[1]), fcntl.LOCK_EX | fcntl.LOCK_NB)",
                               store + "/lock"]).succeeded
            }
            try #require(free, "the daemon kept the store open")
        }

        /// Every file of the store with its size and modification time: what "changes nothing" compares.
        func snapshot() throws -> String {
            try Shell.bash("cd '\(store)' && find . -printf '%p %s %T@\\n' | sort").output
        }

        deinit {
            _ = try? Shell.run(["fusermount3", "-u", mountpoint])
            _ = try? Shell.run(["fusermount3", "-uz", mountpoint])
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private func expectRefused(_ result: CommandResult, saying words: String, place: Place, before: String,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(result.status != 0, sourceLocation: sourceLocation)
        let lines = result.error.split(separator: "\n")
        #expect(lines.count == 1 && result.error.contains(words), "\(result.error)", sourceLocation: sourceLocation)
        #expect(try place.snapshot() == before, "the refused mount changed the store", sourceLocation: sourceLocation)
        let mounts = try String(contentsOfFile: "/proc/mounts", encoding: .utf8)
        #expect(!mounts.contains(place.mountpoint), sourceLocation: sourceLocation)
    }

    @Test func aMissingWrongOrMisplacedKeyIsRefusedAtOnceAndChangesNothing() throws {
        let place = try Place()
        let key = try place.key("store.key")
        let other = try place.key("other.key")
        let created = try place.mount(["--encrypt", "--key-file", key])
        try #require(created.succeeded, "\(created.error)")
        _ = try Shell.run(["bash", "-c", "echo secret contents > '\(place.mountpoint)/data/f'"])
        try place.unmount()
        try place.waitUntilClosed()
        let before = try place.snapshot()

        try expectRefused(try place.mount([]), saying: "no key", place: place, before: before)
        try expectRefused(try place.mount(["--key-file", other]), saying: "wrong key", place: place, before: before)
        try expectRefused(try place.mount(["-o", "key_file=\(place.directory)/none"]), saying: "cannot read key file",
                          place: place, before: before)

        let reopened = try place.mount(["-o", "key_file=\(key)"])
        try #require(reopened.succeeded, "\(reopened.error)")
        #expect(try String(contentsOfFile: place.mountpoint + "/data/f", encoding: .utf8) == "secret contents\n")
        try place.unmount()

        // A plaintext store takes no key, and cannot become encrypted.
        let plain = try Place()
        let made = try plain.mount([])
        try #require(made.succeeded, "\(made.error)")
        try plain.unmount()
        try plain.waitUntilClosed()
        let plainBefore = try plain.snapshot()
        try expectRefused(try plain.mount(["--key-file", key]), saying: "plaintext store", place: plain, before: plainBefore)
        try expectRefused(try plain.mount(["--encrypt", "--key-file", key]), saying: "plaintext store", place: plain,
                          before: plainBefore)
    }

    @Test func rekeyAndSystemdCredentials() throws {
        let place = try Place()
        let key = try place.key("old.key")
        let new = try place.key("new.key")
        let created = try place.mount(["-o", "encrypt,key_file=\(key)"])
        try #require(created.succeeded, "\(created.error)")
        _ = try Shell.run(["bash", "-c", "echo kept > '\(place.mountpoint)/data/f'"])
        try place.unmount()
        try place.waitUntilClosed()

        let wrongOld = try Shell.run([MountedStore.executable, "rekey", place.store, "--key-file", new, "--new-key-file", key])
        #expect(wrongOld.status != 0 && wrongOld.error.contains("wrong key"), "\(wrongOld.error)")
        let rekeyed = try Shell.run([MountedStore.executable, "rekey", place.store, "--key-file", key, "--new-key-file", new])
        #expect(rekeyed.succeeded, "\(rekeyed.error)")
        let before = try place.snapshot()
        try expectRefused(try place.mount(["--key-file", key]), saying: "wrong key", place: place, before: before)

        // systemd's LoadCredentialEncrypted= puts the key in $CREDENTIALS_DIRECTORY/cachefs.key.
        let credentials = place.directory + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: new, toPath: credentials + "/cachefs.key")
        let mounted = try place.mount([], environment: ["CREDENTIALS_DIRECTORY=\(credentials)"])
        try #require(mounted.succeeded, "\(mounted.error)")
        #expect(try String(contentsOfFile: place.mountpoint + "/data/f", encoding: .utf8) == "kept\n")
        try place.unmount()
    }

    /// `cachefs rekey` killed (SIGKILL, injected by strace as each syscall of its write starts):
    /// before the new wrapped key is written, before it is synced, before the rename and
    /// before the folder's sync. Each time exactly one key opens the store, the old one until
    /// the rename, and the files are there; a rekey run again then finishes.
    @Test func aRekeyKilledAtEachStepLeavesTheOldOrTheNewKeyWorking() throws {
        let place = try Place()
        let old = try place.key("old.key")
        let new = try place.key("new.key")
        let created = try place.mount(["--encrypt", "--key-file", old])
        try #require(created.succeeded, "\(created.error)")
        _ = try Shell.run(["bash", "-c", "echo kept > '\(place.mountpoint)/data/f'"])
        try place.unmount()
        try place.waitUntilClosed()

        let steps: [(call: String, occurrence: Int, opens: String)] = [
            ("pwrite64", 1, old), ("fsync", 1, old), ("rename", 1, old), ("fsync", 2, new),
        ]
        for step in steps {
            let name = "\(step.call) #\(step.occurrence)"
            let killed = try Shell.run(["strace", "-f", "-o", "/dev/null", "-e", "trace=\(step.call)",
                                        "-e", "inject=\(step.call):signal=KILL:when=\(step.occurrence)",
                                        MountedStore.executable, "rekey", place.store, "--key-file", old,
                                        "--new-key-file", new])
            #expect(killed.status == 128 + SIGKILL, "\(name): \(killed.status) \(killed.error)")
            let other = step.opens == old ? new : old
            let refused = try place.mount(["--key-file", other])
            #expect(!refused.succeeded && refused.error.contains("wrong key"), "\(name): \(refused.error)")
            let opened = try place.mount(["--key-file", step.opens])
            try #require(opened.succeeded, "\(name): \(opened.error)")
            #expect(try String(contentsOfFile: place.mountpoint + "/data/f", encoding: .utf8) == "kept\n", "\(name)")
            try place.unmount()
            try place.waitUntilClosed()
            // Back to the old key for the next step (a rekey run again after the kill).
            if step.opens == new {
                let back = try Shell.run([MountedStore.executable, "rekey", place.store, "--key-file", new,
                                          "--new-key-file", old])
                #expect(back.succeeded, "\(name): \(back.error)")
            }
        }
        let finished = try Shell.run([MountedStore.executable, "rekey", place.store, "--key-file", old, "--new-key-file", new])
        #expect(finished.succeeded, "\(finished.error)")
        let reopened = try place.mount(["--key-file", new])
        try #require(reopened.succeeded, "\(reopened.error)")
        #expect(try String(contentsOfFile: place.mountpoint + "/data/f", encoding: .utf8) == "kept\n")
        try place.unmount()
    }

    /// On a terminal, `cachefs mount --encrypt` asks for a passphrase twice (without echo) and
    /// hands it to the daemon; the same passphrase in a file opens the store later.
    @Test func aTypedPassphraseCreatesTheStoreAndAFileWithItOpensIt() throws {
        let place = try Place()
        let script = """
            import os, pty, signal, sys, time
            signal.alarm(60)
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], [sys.argv[1], 'mount', sys.argv[2], sys.argv[3], '--encrypt'])
            seen = b''
            def wait_for(text):
                global seen
                deadline = time.time() + 20
                while text not in seen and time.time() < deadline:
                    try:
                        seen += os.read(fd, 1024)
                    except OSError:
                        break
                return text in seen
            assert wait_for(b'Passphrase: '), seen
            os.write(fd, b'correct horse battery\\n')
            assert wait_for(b'again: '), seen
            os.write(fd, b'correct horse battery\\n')
            _, status = os.waitpid(pid, 0)
            rest = b''
            try:
                rest = os.read(fd, 4096)
            except OSError:
                pass
            assert b'correct horse' not in seen + rest, 'the passphrase was echoed'
            print('exit', os.waitstatus_to_exitcode(status))
            """
        let typed = try Shell.run(["python3", "-c", script, MountedStore.executable, place.store, place.mountpoint])
        #expect(typed.output.contains("exit 0"), "\(typed.output) \(typed.error)")
        _ = try Shell.run(["bash", "-c", "echo typed > '\(place.mountpoint)/data/f'"])
        try place.unmount()
        try place.waitUntilClosed()
        let passphraseFile = place.directory + "/passphrase"
        try "correct horse battery\n".write(toFile: passphraseFile, atomically: true, encoding: .utf8)
        let reopened = try place.mount(["--key-file", passphraseFile])
        try #require(reopened.succeeded, "\(reopened.error)")
        #expect(try String(contentsOfFile: place.mountpoint + "/data/f", encoding: .utf8) == "typed\n")
        try place.unmount()
    }
}
