import Foundation
import Glibc

/// The result of running a command the way a user would.
struct CommandResult {
    var status: Int32
    var output: String
    var error: String

    var succeeded: Bool { status == 0 }
}

enum Shell {
    /// Runs a program (found on PATH) to completion, capturing its output in files (a
    /// daemon that a command leaves behind cannot hold a file open the way it holds a pipe).
    @discardableResult
    static func run(_ arguments: [String]) throws -> CommandResult {
        let output = OutputFile()
        let error = OutputFile()
        defer {
            output.remove()
            error.remove()
        }
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(input) }
        let child = try ChildProcess(arguments, stdin: input, stdout: output.fd, stderr: error.fd)
        let status = child.wait()
        return CommandResult(status: status, output: output.contents(), error: error.contents())
    }

    /// Runs a shell snippet with `bash -c`.
    @discardableResult
    static func bash(_ script: String) throws -> CommandResult {
        try run(["bash", "-c", script])
    }

    /// Polls `condition` until it holds or `seconds` pass; events such as RELEASE and
    /// eviction arrive asynchronously, so tests wait with a deadline instead of sleeping.
    /// The deadline only bounds a failure: it is far beyond the work's usual time (10 s for
    /// an eviction or a close), because how fast the work goes is a bench row, not a test.
    static func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }
}
