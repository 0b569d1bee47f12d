import ArgumentParser
import CacheCore
import CacheModel
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
        var reader = EventReader(mount: mount)
        try reportingFailures {
            repeat {
                for line in try reader.newLines() { print(json ? line : Self.describe(line)) }
                fflush(nil)
                if follow { usleep(Tunables.eventsFollowMicroseconds) }
            } while follow
        }
    }

    static func describe(_ line: String) -> String {
        // A line that is not JSON (cut by a crash mid-write) is shown as it is, not dropped.
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return line }
        let text = { (key: String) in object[key].map { "\($0)" } ?? "" }
        return "\(text("time"))  \(text("event").padding(toLength: 10, withPad: " ", startingAt: 0))  \(text("path"))  \(text("size")) B  (\(text("reason")))"
    }
}

/// Reads the event log through the daemon (the root's `user.cache.events?from=N`), which
/// opens the names an encrypted store keeps sealed in the file. A rotated log starts again
/// from its beginning.
struct EventReader {
    let mount: String
    private var offset: Int64 = 0

    init(mount: String) { self.mount = mount }

    mutating func newLines() throws -> [String] {
        var lines: [String] = []
        while true {
            let name = "user.cache.events?from=\(offset)"
            let value = try Xattr.bytes(mount, name, atMost: 64 << 10)
            guard let newline = value.firstIndex(of: 0x0A),
                  let next = Int64(String(decoding: value[..<newline], as: UTF8.self)) else {
                throw Xattr.Failure(description: "\(mount): \(name) answered no offset: is it a cachefs mount's root?")
            }
            let page = value[(newline + 1)...]
            lines += String(decoding: page, as: UTF8.self).split(separator: "\n").map(String.init)
            let moved = next != offset
            offset = next
            if page.isEmpty || !moved { return lines }
        }
    }
}
