import Foundation
import Glibc
import Testing

/// A folder beside a test's store that serves as the origin of its `data` pool: `files/`
/// for a `file://` origin, and `origin.sh`, an `exec:` program over the same files whose
/// names choose how it behaves (see `script`). Created before the first mount.
struct OriginFixture {
    let root: String
    var files: String { root + "/files" }
    var program: String { root + "/origin.sh" }
    /// While this file exists, `slow*` names stop after their first MiB.
    var hold: String { root + "/hold" }
    /// One line per fetch the program served.
    var calls: String { root + "/calls" }

    init(in directory: String) throws {
        root = directory + "/origin"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        // Written by a child process: a descriptor open for writing in this (multi-threaded)
        // test process could leak into a concurrent fork and make the exec fail with ETXTBSY.
        let written = try Shell.bash("cat > '\(program)' <<'ORIGIN_SCRIPT'\n\(Self.script(root: root))\nORIGIN_SCRIPT\nchmod 755 '\(program)'")
        guard written.succeeded else { throw MountError(message: "cannot write \(program): \(written.error)") }
    }

    func write(_ name: String, bytes: Int) throws { try writeRandomFile(files + "/" + name, bytes: bytes) }

    func holdSlowNames() throws { try createMarker(hold) }

    func fetchCalls() -> Int {
        ((try? String(contentsOfFile: calls, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// `missing*` exits 44, `broken*` announces 5 bytes and exits 1, `short*` announces 1000
    /// and writes 10, `slow*` announces 8 MiB and holds after the first MiB while `hold`
    /// exists, `sleepy*` sleeps half a second before it writes 1000 bytes; anything else is
    /// served from `files/`.
    static func script(root: String) -> String {
        """
        #!/bin/bash
        mode=fetch
        if [ "$1" = --size ]; then mode=size; shift; fi
        name=$1
        echo "origin.sh: $mode $name" >&2
        [ $mode = fetch ] && echo "$name" >> '\(root)/calls'
        case "$name" in
          missing*) exit 44 ;;
          broken*) [ $mode = size ] && { echo 5; exit 0; }; echo "origin.sh: broken on purpose" >&2; exit 1 ;;
          short*) [ $mode = size ] && { echo 1000; exit 0; }; head -c 10 /dev/zero; exit 0 ;;
          sleepy*) [ $mode = size ] && { echo 1000; exit 0; }; sleep 0.5; head -c 1000 /dev/zero; exit 0 ;;
          slow*)
            [ $mode = size ] && { echo 8388608; exit 0; }
            head -c 1048576 /dev/zero
            while [ -e '\(root)/hold' ]; do sleep 0.05; done
            head -c 7340032 /dev/zero; exit 0 ;;
          *)
            [ -f '\(root)/files/'"$name" ] || exit 44
            [ $mode = size ] && { stat -c %s '\(root)/files/'"$name"; exit 0; }
            cat '\(root)/files/'"$name" ;;
        esac
        """
    }
}

/// A file of `bytes` random bytes at `path`, its directories created.
func writeRandomFile(_ path: String, bytes: Int) throws {
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                            withIntermediateDirectories: true)
    let result = try Shell.bash("head -c \(bytes) /dev/urandom > '\(path)'")
    guard result.succeeded else { throw MountError(message: "cannot write \(path): \(result.error)") }
}

/// An empty file whose existence tells an origin something (`hold`).
func createMarker(_ path: String) throws {
    guard FileManager.default.createFile(atPath: path, contents: nil) else {
        throw MountError(message: "cannot create \(path)")
    }
}

extension MountedStore {
    /// Kills the daemon while `name` (an 8 MiB `slow*` name whose origin holds after its first
    /// MiB) is being fetched for a reader, lets the origin go on, mounts again and checks the
    /// torn file is gone: not listed, not counted.
    func crashWhileFetching(_ name: String, heldBy hold: String, showing fetching: String = "1048576/8388608") throws {
        let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(quiet) }
        let reader = try ChildProcess(["cat", path(name)], stdin: quiet, stdout: quiet, stderr: quiet)
        #expect(Shell.waitUntil(seconds: 10) {
            (try? sh("getfattr --only-values -n user.cache.fetching '\(name)'").output)?
                .trimmingCharacters(in: .whitespacesAndNewlines) == fetching
        })
        try crash()
        reader.wait()
        try FileManager.default.removeItem(atPath: hold)
        try mount()
        let directory = (name as NSString).deletingLastPathComponent
        #expect(try mustSucceed("ls '\(directory)' | wc -l") == "0")
        #expect(try xattr(directory, "user.cache.usage") == "0")
    }
}

/// Runs `body` against a mount whose `data` pool reads through to `origin` (`file` or
/// `exec`); `prepare` fills the origin before the mount.
func withOriginMount(_ scheme: String, arguments: [String] = [], kind: StoreKind = .plaintext,
                     prepare: (OriginFixture) throws -> Void = { _ in },
                     _ body: (MountedStore, OriginFixture) throws -> Void) throws {
    var fixture: OriginFixture?
    let mounted = try MountedStore(arguments: arguments) { store in
        if kind == .encrypted { try store.useNewKey() }
        let origin = try OriginFixture(in: store.directory)
        try prepare(origin)
        let url = scheme == "file" ? "file://" + origin.files : "exec:" + origin.program
        store.extraArguments += ["--origin", "data=" + url]
        fixture = origin
    }
    do {
        try body(mounted, fixture!)
    } catch {
        Issue.record("daemon log:\n\(mounted.daemonLog)")
        throw error
    }
}
