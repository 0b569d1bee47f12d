import Foundation

/// A real `redis-server` on loopback, in a temporary directory, for one test. `stop()` kills
/// it; call it in a `defer` so a failing test never leaves one running.
final class RedisServer {
    let port: Int
    let directory: URL
    private let arguments: [String]
    private let password: String?
    private let cliArguments: [String]
    private var process: Process

    /// Starts a server and waits until it answers PING. `password` and `cliArguments` (TLS
    /// options, say) are for `redis-cli`, which makes that check.
    init(arguments: [String] = [], password: String? = nil, port: Int? = nil, cliArguments: [String] = []) throws {
        self.port = try port ?? FreePorts.next()
        self.cliArguments = cliArguments
        self.directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cachefs-redis-\(self.port)-\(UUID().uuidString.prefix(8))")
        self.arguments = arguments
        self.password = password
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.process = Process()
        try launch()
    }

    var logFile: URL { directory.appendingPathComponent("redis.log") }

    /// Kills the server (SIGKILL, after a SIGCONT in case it was stopped) and removes its directory.
    func stop() {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Kills the server, keeping its directory, so `restart()` can bring it back on the same port.
    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGCONT)
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func restart() throws {
        kill()
        process = Process()
        try launch()
    }

    /// SIGSTOP: the server keeps its sockets but answers nothing.
    func suspend() { Foundation.kill(process.processIdentifier, SIGSTOP) }
    func resume() { Foundation.kill(process.processIdentifier, SIGCONT) }

    /// Runs `redis-cli` against this server and returns what it printed.
    func cli(_ command: [String]) throws -> String {
        var arguments = ["-h", "127.0.0.1", "-p", String(port), "--no-auth-warning"]
        if let password { arguments += ["-a", password] }
        arguments += cliArguments
        return try Self.run(Self.executable("redis-cli"), arguments + command)
    }

    private func launch() throws {
        process.executableURL = try Self.executable("redis-server")
        process.arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--dir", directory.path, "--logfile", logFile.path,
        ] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilAnswering()
    }

    private func waitUntilAnswering() throws {
        let start = Date()
        while Date().timeIntervalSince(start) < 10 {
            guard process.isRunning else {
                let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
                throw TestSetupError("redis-server on port \(port) exited at start; its log:\n\(log)")
            }
            if (try? cli(["PING"]))?.contains("PONG") == true { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        stop()
        throw TestSetupError("redis-server on port \(port) did not answer PING within 10 s")
    }

    /// The program on PATH (or in /usr/bin), or an error that says how to install it: the
    /// tests need a real server and must not pass without one.
    static func executable(_ name: String) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for folder in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"] {
            let candidate = URL(fileURLWithPath: folder).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw TestSetupError(
            "\(name) is not installed: the Redis client tests need a real server "
                + "(scripts/lib/install-deps.sh installs redis-server and redis-tools)")
    }

    @discardableResult
    static func run(_ executable: URL, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw TestSetupError("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }
}
