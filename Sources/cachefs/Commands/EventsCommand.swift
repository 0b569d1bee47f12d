import ArgumentParser
import Foundation
import Glibc

/// `cachefs events MOUNT [--follow]`: the removals and limit breaches of STORE/events.jsonl.
struct EventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "Print what cachefs removed and when pools went over their limits.",
        discussion: """
            Examples:
              cachefs events ~/cache
              cachefs events ~/cache --follow --json
            """)

    @Argument(help: "The mount.") var mount: String
    @Flag(help: "Keep printing new events as they happen.") var follow = false
    @Flag(help: "Print the raw JSON lines.") var json = false

    func run() throws {
        var path = ""
        try reportingFailures { path = try Xattr.get(mount, "user.cache.store") + "/events.jsonl" }
        var reader = LineFollower(path: path)
        repeat {
            for line in reader.newLines() { print(json ? line : Self.describe(line)) }
            fflush(nil)
            if follow { usleep(200_000) }
        } while follow
    }

    static func describe(_ line: String) -> String {
        // A line that is not JSON (cut by a crash mid-write) is shown as it is, not dropped.
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return line }
        let text = { (key: String) in object[key].map { "\($0)" } ?? "" }
        return "\(text("time"))  \(text("event").padding(toLength: 10, withPad: " ", startingAt: 0))  \(text("path"))  \(text("size")) B  (\(text("reason")))"
    }
}

/// Reads whole lines appended to a file, following it across rotation (a new inode).
struct LineFollower {
    let path: String
    private var offset: UInt64 = 0
    private var inode: UInt64 = 0
    private var partial = ""

    init(path: String) { self.path = path }

    mutating func newLines() -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        if UInt64(info.st_ino) != inode || UInt64(info.st_size) < offset {
            inode = UInt64(info.st_ino)
            offset = 0
            partial = ""
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        // A read-only handle: closing it cannot lose anything.
        defer { try? handle.close() }
        // A file rotated under us is shorter: reading from where the seek left off shows the new lines.
        try? handle.seek(toOffset: offset)
        let data = handle.readDataToEndOfFile()
        offset += UInt64(data.count)
        partial += String(decoding: data, as: UTF8.self)
        var lines = partial.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        partial = lines.removeLast()
        return lines.filter { !$0.isEmpty }
    }
}
