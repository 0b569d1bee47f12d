import Foundation
import Glibc

/// A real `redis-server` on a free loopback port, for the shared tier's tests: in a directory
/// of its own, persisting nothing, killed by `kill()` and at the latest when released. A
/// missing `redis-server` is a failure that says how to install it, never a pass. With
/// `certificates` it speaks TLS only; `arguments` are added to its command line (a cluster
/// node's, say).
final class SharedTierRedis {
    let port: Int
    let password: String?
    let directory: String
    let certificates: SharedTierCertificates?
    private let arguments: [String]
    private var server: ChildProcess?

    init(password: String? = nil, certificates: SharedTierCertificates? = nil, arguments: [String] = []) throws {
        self.certificates = certificates
        self.arguments = arguments
        guard try Shell.bash("command -v redis-server && command -v redis-cli").succeeded else {
            throw MountError(message: "redis-server or redis-cli is not installed: the shared tier tests need a real "
                                 + "server (apt-get install redis-server redis-tools)")
        }
        port = try LoopbackPort.free()
        self.password = password
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-tier-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try start()
    }

    /// The pools' `user.cache.shared` value for this server (by the name its certificate has).
    var url: String { certificates == nil ? "redis://127.0.0.1:\(port)/0" : "rediss://localhost:\(port)/0" }

    /// Starts the server (again, on the same port) and waits until it answers PING.
    func start() throws {
        kill()
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(null) }
        var arguments = ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "",
                         "--appendonly", "no", "--dir", directory, "--logfile", directory + "/redis.log"]
        if let password { arguments += ["--requirepass", password] }
        if let certificates { arguments += certificates.serverArguments(port: port) }
        arguments += self.arguments
        server = try ChildProcess(arguments, stdin: null, stdout: null, stderr: null)
        guard try Shell.waitUntil(seconds: 10, { try cli(["PING"]).output.contains("PONG") }) else {
            let log = (try? String(contentsOfFile: directory + "/redis.log", encoding: .utf8)) ?? ""
            kill()
            throw MountError(message: "redis-server on port \(port) did not answer PING within 10 s; its log:\n\(log)")
        }
    }

    /// SIGKILL: the tier is down from now on.
    func kill() {
        guard let server else { return }
        server.signal(SIGKILL)
        _ = server.wait()
        self.server = nil
    }

    /// SIGSTOP: the server keeps its connections and port but answers nothing (a stalled tier).
    func suspend() { server?.signal(SIGSTOP) }
    func resume() { server?.signal(SIGCONT) }

    /// `redis-cli` against this server; `stdinFile` is given as the last argument (`-x`).
    func cli(_ command: [String], stdinFile: String? = nil) throws -> CommandResult {
        var arguments = ["redis-cli", "-h", "127.0.0.1", "-p", String(port), "--no-auth-warning"]
        if let password { arguments += ["-a", password] }
        if let certificates { arguments += ["--tls", "--cacert", certificates.caCertificate] }
        guard let stdinFile else { return try Shell.run(arguments + command) }
        let quoted = (arguments + ["-x"] + command).map { "'\($0)'" }.joined(separator: " ")
        return try Shell.bash("\(quoted) < '\(stdinFile)'")
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
