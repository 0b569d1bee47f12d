import Foundation
import Glibc
import Testing

/// nginx from Debian's packages on 127.0.0.1, serving `files/` of a folder beside a test's
/// store as users' servers do: `ETag` and `Last-Modified` from the file's mtime and size,
/// 304 to a conditional request whose version still matches, ranges. One process (no master,
/// no daemon), its own pid file, logs and temp folders, so a user who is not root runs it too.
/// Its access log has one `METHOD URI STATUS` line per request.
final class NginxOrigin {
    let root: String
    var files: String { root + "/files" }
    private(set) var port = 0
    private var server: ChildProcess?

    init(in directory: String) throws {
        root = directory + "/nginx-origin"
        for folder in [files, root + "/temp"] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        try start()
    }

    var url: String { "http://127.0.0.1:\(port)/" }

    static var executable: String { "/usr/sbin/nginx" }

    /// Starts nginx on a free port. Another process may take the port between the probe and
    /// nginx's bind: nginx then exits at once, and another port is tried.
    func start() throws {
        for _ in 0..<5 {
            let candidate = try LoopbackPort.free()
            try writeConfiguration(port: candidate)
            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            let process = try ChildProcess([Self.executable, "-e", root + "/error.log", "-p", root, "-c", root + "/nginx.conf"],
                                           stdin: quiet, stdout: quiet, stderr: quiet)
            let answering = Shell.waitUntil(seconds: 15) {
                !process.isRunning || Self.accepts(port: candidate)
            }
            if answering && process.isRunning {
                server = process
                port = candidate
                return
            }
            process.signal(SIGKILL)
            process.wait()
        }
        let log = (try? String(contentsOfFile: root + "/error.log", encoding: .utf8)) ?? ""
        throw MountError(message: "nginx did not start: \(log)")
    }

    /// Stops the server (its port then refuses connections).
    func stop() {
        guard let process = server else { return }
        process.signal(SIGQUIT)
        process.wait()
        server = nil
    }

    /// The requests nginx answered, as `METHOD URI STATUS` lines.
    var requests: [String] {
        ((try? String(contentsOfFile: root + "/access.log", encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    func count(_ line: String) -> Int { requests.filter { $0 == line }.count }

    /// The requests nginx answered with the `Range` they asked for, as `METHOD URI STATUS
    /// RANGE` lines (`-` for none).
    var rangedRequests: [String] {
        ((try? String(contentsOfFile: root + "/ranges.log", encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    private func writeConfiguration(port: Int) throws {
        let temp = root + "/temp"
        let configuration = """
            daemon off;
            master_process off;
            error_log \(root)/error.log;
            pid \(root)/nginx.pid;
            events { worker_connections 64; }
            http {
                log_format lines '$request_method $uri $status';
                access_log \(root)/access.log lines;
                log_format ranges '$request_method $uri $status $http_range';
                access_log \(root)/ranges.log ranges;
                client_body_temp_path \(temp)/body;
                proxy_temp_path \(temp)/proxy;
                fastcgi_temp_path \(temp)/fastcgi;
                uwsgi_temp_path \(temp)/uwsgi;
                scgi_temp_path \(temp)/scgi;
                server {
                    listen 127.0.0.1:\(port);
                    root \(files);
                    # What FreshnessTests' cache_control test reads.
                    location /maxage/ { add_header Cache-Control "max-age=3600"; }
                    location /nostore/ { add_header Cache-Control "no-store"; }
                    location /nocache/ { add_header Cache-Control "no-cache"; }
                    # What SharedTierOriginTests' refused HEAD reads: a server that allows GET only.
                    location /nohead/ { if ($request_method = HEAD) { return 405; } }
                }
            }
            """
        try configuration.write(toFile: root + "/nginx.conf", atomically: true, encoding: .utf8)
    }

    private static func accepts(port: Int) -> Bool {
        (try? Shell.run(["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/\(port)"]).succeeded) == true
    }

    deinit { stop() }
}

extension NginxOrigin: OriginServer {}

/// ``withOriginServerMount`` with nginx.
func withNginxOriginMount(arguments: [String] = [], kind: StoreKind = .plaintext,
                          prepare: (NginxOrigin) throws -> Void = { _ in },
                          _ body: (MountedStore, NginxOrigin) throws -> Void) throws {
    try withOriginServerMount(NginxOrigin.self, arguments: arguments, kind: kind, prepare: prepare, body)
}
