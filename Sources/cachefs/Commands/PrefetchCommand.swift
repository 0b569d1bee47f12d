import ArgumentParser
import Foundation
import Glibc

/// `cachefs prefetch PATH…`: reads each file through the mount, so a read-through pool
/// fetches what it lacks now rather than at the first real read.
struct PrefetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Fetch files of a read-through pool ahead of their first read; exits when done.",
        discussion: """
            Example: cachefs prefetch ~/cache/images/2026/*.jpg
            Same as reading each file (cat PATH > /dev/null): the files become most recently used. \
            A progress line is drawn when stderr is a terminal. Exits 1 if any file failed.
            """)

    @Argument(help: "Files on a cachefs mount.")
    var paths: [String]

    func run() throws {
        let progress = ProgressLine(task: "prefetch")
        var failed = false
        for (done, path) in paths.enumerated() {
            progress?.update(done, of: paths.count, verb: "fetched")
            if let problem = Self.readWhole(path) {
                printError("cachefs: \(path): \(problem)")
                failed = true
            }
        }
        progress?.finish(paths.count, of: paths.count, verb: "fetched")
        if failed { throw ExitCode.failure }
    }

    /// Reads a file to its end and drops the bytes; the reason on failure.
    private static func readWhole(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count == 0 { return nil }
            if count < 0 && errno != EINTR { return String(cString: strerror(errno)) }
        }
    }
}
