import Foundation
import Testing

/// `scripts/install` into a temporary prefix, then the installed program as a user's shell
/// would meet it: a minimal environment (`env -i PATH=/usr/bin:/bin`), no Swift on the PATH.
/// The install reuses the tests' own build (`--binary`) and builds only the manual generator,
/// in `.build-install`, so a test run builds once; the real install builds a release binary.
@Suite struct InstallTests {
    private static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    @Test func installedProgramRunsWithAMinimalEnvironmentAndMounts() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-it-\(UUID().uuidString)").path
        let prefix = directory + "/prefix"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let install = try Shell.run([Self.packageRoot + "/scripts/install", "--prefix", prefix,
                                     "--binary", MountedStore.executable,
                                     "--scratch-path", Self.packageRoot + "/.build-install"])
        try #require(install.succeeded, "\(install.output)\n\(install.error)")

        let cachefs = prefix + "/bin/cachefs"
        func minimal(_ arguments: [String]) throws -> CommandResult {
            try Shell.run(["env", "-i", "PATH=/usr/bin:/bin"] + arguments)
        }
        let version = try minimal([cachefs, "--version"])
        #expect(version.succeeded && version.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0.9.0",
                "\(version.output)\(version.error)")
        let help = try minimal([cachefs, "--help"])
        #expect(help.succeeded && help.output.contains("mount") && help.output.contains("verify"), "\(help.error)")

        let page = prefix + "/share/man/man1/cachefs.mount.1"
        let manual = try minimal(["bash", "-c", """
            if command -v man > /dev/null; then MANPAGER=cat man -l '\(page)'; else echo "no man:"; cat '\(page)'; fi
            """])
        #expect(manual.succeeded, "\(manual.error)")
        #expect(manual.output.contains("fuse.cachefs") && manual.output.contains("STOPPING=1"), "\(manual.output)")
        #expect(FileManager.default.fileExists(atPath: prefix + "/share/man/man1/cachefs.1"))

        let bash = try minimal(["bash", "-c", "source '\(prefix)/share/bash-completion/completions/cachefs' && complete -p cachefs"])
        #expect(bash.succeeded && bash.output.contains("cachefs"), "\(bash.error)")
        let zsh = try String(contentsOfFile: prefix + "/share/zsh/site-functions/_cachefs", encoding: .utf8)
        #expect(zsh.hasPrefix("#compdef cachefs"))
        let fish = try String(contentsOfFile: prefix + "/share/fish/vendor_completions.d/cachefs.fish", encoding: .utf8)
        #expect(fish.contains("complete -c 'cachefs'"))

        try checkUnits(prefix: prefix, scratch: directory)
        try mountWithInstalledProgram(cachefs, directory: directory)
    }

    /// Both units name the installed binary and pass `systemd-analyze verify` without a word
    /// (it warns about a bad line but still exits 0), their man page included.
    private func checkUnits(prefix: String, scratch: String) throws {
        for scope in ["system", "user"] {
            let template = prefix + "/lib/systemd/\(scope)/cachefs@.service"
            let text = try String(contentsOfFile: template, encoding: .utf8)
            #expect(text.contains("ExecStart=\(prefix)/bin/cachefs mount ${CACHEFS_STORE} %f --foreground"), "\(text)")
            #expect(text.contains("Type=notify") && text.contains("ExecStop=fusermount3 -u %f"))
            let instance = scratch + "/\(scope)/cachefs@srv-cache.service"
            try FileManager.default.createDirectory(atPath: scratch + "/\(scope)", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: instance, withDestinationPath: template)
            let verify = try Shell.run(["env", "MANPATH=\(prefix)/share/man:", "XDG_RUNTIME_DIR=\(scratch)",
                                        "systemd-analyze"] + (scope == "user" ? ["--user"] : []) + ["verify", instance])
            #expect(verify.succeeded && verify.error.isEmpty && verify.output.isEmpty,
                    "systemd-analyze verify \(scope): \(verify.output)\(verify.error)")
        }
    }

    /// A real mount, write, read and unmount by the installed program.
    private func mountWithInstalledProgram(_ cachefs: String, directory: String) throws {
        let script = """
            store='\(directory)/store'; mnt='\(directory)/mnt'
            mkdir -p "$mnt"
            trap 'grep -q " $mnt " /proc/mounts && fusermount3 -uz "$mnt"' EXIT
            env -i PATH=/usr/bin:/bin '\(cachefs)' mount "$store" "$mnt" -o min_free=0 || exit 1
            echo installed > "$mnt/data/file" && cat "$mnt/data/file" || exit 2
            fusermount3 -u "$mnt" || exit 3
            for _ in $(seq 150); do pgrep -f -- "mount $store $mnt" > /dev/null || exit 0; sleep 0.1; done
            echo "the daemon did not exit after unmount" >&2; exit 4
            """
        let result = try Shell.bash(script)
        let log = (try? String(contentsOfFile: directory + "/store/daemon.log", encoding: .utf8)) ?? ""
        #expect(result.succeeded && result.output == "installed\n", "\(result.output)\(result.error)\n\(log)")
    }
}
