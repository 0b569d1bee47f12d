import ArgumentParser
import CacheCore
import CacheModel
import Foundation

/// `cachefs preview MOUNT/POOL`: what the evictor would remove next, changing nothing.
struct PreviewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview", abstract: "List, in order, what the evictor would remove from a pool (changes nothing).",
        discussion: """
            Without --size or --free: the next 100 victims. With --size: what lowering the pool's \
            max_size to SIZE would remove (a pass frees down to its low_watermark of SIZE). With \
            --free: the victims that free SIZE bytes. The pool's own eviction policy chooses, on a \
            snapshot: evicting right after, with no read in between, removes exactly these files.
            Examples:
              cachefs preview ~/cache/data --size 100M
              cachefs preview ~/cache/thumbnails --free 1G --json
            Same as: getfattr -n 'user.cache.preview?size=100M' MOUNT/POOL (one line per file: \
            path, size, last access, why; a last line 'more K' asks for '&from=K').
            """)

    @Argument(help: "A pool directory of a cachefs mount.") var pool: String
    @Option(help: "What would go if the pool's max_size were SIZE (25M, 1G, bytes).") var size: String?
    @Option(help: "The victims that free SIZE bytes (25M, 1G, bytes).") var free: String?
    @Flag(help: "Print JSON.") var json = false

    struct Victim: Codable {
        var path: String
        var size: Int64
        var lastAccess: String
        var reason: String

        enum CodingKeys: String, CodingKey {
            case path, size, reason
            case lastAccess = "last_access"
        }
    }

    struct Report: Codable {
        var pool: String
        var files: [Victim]
        var totalFiles: Int
        var totalBytes: Int64

        enum CodingKeys: String, CodingKey {
            case pool, files
            case totalFiles = "total_files", totalBytes = "total_bytes"
        }
    }

    func validate() throws {
        if size != nil && free != nil { throw ValidationError("give --size or --free, not both") }
        for (option, value) in [("--size", size), ("--free", free)] {
            if let value, ValueParsing.byteSize(value).map({ $0 >= 0 }) != true {
                throw ValidationError("\(option) '\(value)': expected bytes or a size such as 25M, 1G")
            }
        }
    }

    func run() throws {
        try reportingFailures {
            try Xattr.requireExisting(pool)
            try Xattr.requireCachefs(pool)
            let query = size.map { "size=\(ValueParsing.byteSize($0) ?? 0)" }
                ?? free.map { "free=\(ValueParsing.byteSize($0) ?? 0)" } ?? "next=100"
            let victims = try Self.readAll(pool, query: query)
            let report = Report(pool: pool, files: victims, totalFiles: victims.count,
                                totalBytes: victims.reduce(0) { $0 + $1.size })
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                // One write for the whole table: a preview can list a whole pool.
                var table = ""
                for victim in victims {
                    let size = String(victim.size)
                    table += String(repeating: " ", count: max(12 - size.count, 0)) + size + "  " + victim.lastAccess
                        + "  " + victim.path + "  (" + victim.reason + ")\n"
                }
                print(table, terminator: "")
                print("total: \(report.totalFiles) files, \(report.totalBytes) bytes (\(Format.bytes(report.totalBytes)))")
            }
        }
    }

    /// A page's value fits: the daemon fills at most 60,000 bytes.
    static let pageBuffer = 64 * 1024

    /// Every page of the preview, from one snapshot of the daemon's. Parsed as bytes: a
    /// preview can hold a whole pool.
    static func readAll(_ pool: String, query: String) throws -> [Victim] {
        var victims: [Victim] = []
        var from = 0
        while true {
            let page = try Xattr.bytes(pool, "user.cache.preview?\(query)&from=\(from)", atMost: Self.pageBuffer)
            var next: Int?
            for line in page.split(separator: UInt8(ascii: "\n")) {
                let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
                    .map { String(decoding: $0, as: UTF8.self) }
                if fields.count == 2, fields[0] == "more", let start = Int(fields[1]) {
                    next = start
                } else if fields.count == 4, let size = Int64(fields[1]) {
                    victims.append(Victim(path: unescaped(fields[0]), size: size, lastAccess: fields[2], reason: fields[3]))
                } else {
                    throw Xattr.Failure(description: "\(pool): the daemon's preview has a line this cachefs cannot read: "
                        + String(decoding: line, as: UTF8.self))
                }
            }
            guard let next, next > from else { return victims }
            from = next
        }
    }

    static func unescaped(_ path: String) -> String {
        guard path.utf8.contains(UInt8(ascii: "\\")) else { return path }
        var result = ""
        var escaping = false
        for character in path {
            if escaping {
                result.append(character == "t" ? "\t" : character == "n" ? "\n" : character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}
