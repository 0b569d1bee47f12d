import Foundation
import Glibc
import Testing

/// `scripts/lib/origin_http_server.py` on 127.0.0.1, serving `files/` of a folder beside a
/// test's store (its docstring tells how names choose the server's behaviour), started
/// before the first mount and stopped when the test ends.
final class HTTPOriginFixture {
    let root: String
    var files: String { root + "/files" }
    /// While this file exists, `slow*` names stop after their first MiB.
    var hold: String { root + "/hold" }
    private(set) var port = 0
    private var server: ChildProcess?

    init(in directory: String) throws {
        root = directory + "/http-origin"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        try start()
    }

    var url: String { "http://127.0.0.1:\(port)/" }

    func start() throws {
        let output = OutputFile()
        defer { output.remove() }
        let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(quiet) }
        let process = try ChildProcess(["python3", ScriptHelper.path("origin_http_server.py"), root],
                                       stdin: quiet, stdout: output.fd, stderr: quiet)
        server = process
        guard Shell.waitUntil(seconds: 15, { output.contents().hasSuffix("\n") || !process.isRunning }),
              let port = Int(output.contents().trimmingCharacters(in: .whitespacesAndNewlines)) else {
            stop()
            throw MountError(message: "the HTTP origin server did not start")
        }
        self.port = port
    }

    /// Stops the server (its port then refuses connections).
    func stop() {
        guard let process = server else { return }
        process.signal(SIGTERM)
        process.wait()
        server = nil
    }

    func write(_ name: String, bytes: Int) throws { try writeRandomFile(files + "/" + name, bytes: bytes) }

    func holdSlowNames() throws { try createMarker(hold) }

    /// The requests the server got, as `METHOD /path` lines (and `sent GET /path` once a
    /// body was sent whole).
    var requests: [String] {
        ((try? String(contentsOfFile: root + "/requests.log", encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    func count(_ line: String) -> Int { requests.filter { $0 == line }.count }

    /// The bytes a `slow*` name serves, written to `path` to compare with.
    func writeSlowPattern(to path: String) throws {
        let result = try Shell.run(["bash", "-c", "python3 '\(ScriptHelper.path("origin_http_server.py"))' '\(root)' --pattern > '\(path)'"])
        guard result.succeeded else { throw MountError(message: "cannot write the pattern: \(result.error)") }
    }

    /// The `ETag` and `Last-Modified` the server sends for a file, as its script makes them.
    func version(of name: String) throws -> (etag: String, lastModified: String) {
        let script = """
            import os, sys, email.utils
            info = os.stat(sys.argv[1])
            print('"%x-%x"' % (info.st_mtime_ns, info.st_size))
            print(email.utils.formatdate(int(info.st_mtime), usegmt=True))
            """
        let result = try Shell.run(["python3", "-c", script, files + "/" + name])
        let lines = result.output.split(separator: "\n").map(String.init)
        guard result.succeeded, lines.count == 2 else { throw MountError(message: "cannot stat \(name): \(result.error)") }
        return (lines[0], lines[1])
    }

    deinit { stop() }
}

/// An HTTP server a test starts beside its store, whose URL is the `data` pool's origin.
protocol OriginServer: AnyObject {
    init(in directory: String) throws
    var url: String { get }
    var requests: [String] { get }
    func stop()
}

extension HTTPOriginFixture: OriginServer {}

/// Runs `body` against a mount of a store of `kind` whose `data` pool reads through to a new
/// `Server`; `prepare` fills the server's files before the mount. The server stops and the
/// store is unmounted afterwards, also when the test fails (its requests then go to the log).
func withOriginServerMount<Server: OriginServer>(_ server: Server.Type, arguments: [String] = [],
                                                 kind: StoreKind = .plaintext,
                                                 prepare: (Server) throws -> Void = { _ in },
                                                 _ body: (MountedStore, Server) throws -> Void) throws {
    var fixture: Server?
    let mounted = try MountedStore(arguments: arguments) { store in
        if kind == .encrypted { try store.useNewKey() }
        let origin = try Server(in: store.directory)
        try prepare(origin)
        store.extraArguments += ["--origin", "data=" + origin.url]
        fixture = origin
    }
    defer { fixture?.stop() }
    do {
        try body(mounted, fixture!)
    } catch {
        Issue.record("daemon log:\n\(mounted.daemonLog)\norigin requests:\n\(fixture?.requests.joined(separator: "\n") ?? "")")
        throw error
    }
}

/// ``withOriginServerMount`` with `scripts/lib/origin_http_server.py`.
func withHTTPOriginMount(arguments: [String] = [], prepare: (HTTPOriginFixture) throws -> Void = { _ in },
                         _ body: (MountedStore, HTTPOriginFixture) throws -> Void) throws {
    try withOriginServerMount(HTTPOriginFixture.self, arguments: arguments, prepare: prepare, body)
}
