import CacheModel
import Foundation
import Logging

/// Appends events as JSON lines to `STORE/events.jsonl`, with a structured log line each.
/// The file is bounded and rotated, and waits out a full disk (see ``RotatingFile``). An
/// encrypted store's events name files only sealed (see ``EventPathSealing``).
final class EventLog: Sendable {
    private let file: RotatingFile
    private let disk: any Disk
    private let logger: Logger
    private let sealing: EventPathSealing?

    init(path: String, maxBytes: Int64 = Tunables.eventLogBytes, disk: any Disk = PosixDisk(), logger: Logger,
         sealing: EventPathSealing? = nil) {
        self.logger = logger
        self.disk = disk
        self.sealing = sealing
        file = RotatingFile(path: path, maxBytes: maxBytes, disk: disk, logger: logger)
    }

    /// `text` as the store's logs may show it: sealed when it could name a file of an
    /// encrypted store.
    func shown(_ text: String) -> String {
        sealing?.seal(text) ?? text
    }

    func record(_ events: [CacheEvent]) {
        guard !events.isEmpty else { return }
        var bytes: [UInt8] = []
        for var event in events {
            // A tampered event names an entry id and a block: it may stay readable.
            if event.event != .tampered {
                event.path = shown(event.path)
                event.reason = shown(event.reason)
            }
            logger.info("\(event.event.rawValue)", metadata: [
                "pool": "\(event.pool)", "path": "\(event.path)", "size": "\(event.size)", "reason": "\(event.reason)",
            ])
            event.appendJSONLine(to: &bytes)
            bytes.append(0x0A)
        }
        file.append(bytes)
    }

    /// Writes lines a full disk held back (after an eviction made room).
    func retryPending() {
        file.retryPending()
    }

    /// Whole lines of the current file from byte `offset` (from 0 when the file is shorter
    /// now: it was rotated), at most `limit` bytes of them with sealed texts opened, and the
    /// offset to ask for next.
    func page(from offset: Int64, limit: Int) throws -> (next: Int64, lines: [UInt8]) {
        let fd = try disk.open(file.path, flags: O_RDONLY, mode: 0)
        defer { disk.close(fd) }
        let size = try disk.size(of: fd)
        let start = offset <= size ? offset : 0
        var raw = [UInt8](repeating: 0, count: Int(min(Int64(limit), size - start)))
        let read = try raw.withUnsafeMutableBytes { buffer in try disk.pread(fd, into: buffer, at: start) }
        var lines: [UInt8] = []
        var next = start
        for line in raw[..<read].split(separator: 0x0A, omittingEmptySubsequences: false).dropLast() {
            let shown = opened(line)
            guard lines.count + shown.count + 1 <= limit else { break }
            lines += shown
            lines.append(0x0A)
            next += Int64(line.count) + 1
        }
        return (next, lines)
    }

    /// A line with its sealed strings opened (a line of a plaintext store stays as it is).
    private func opened(_ line: ArraySlice<UInt8>) -> [UInt8] {
        guard let sealing else { return Array(line) }
        let text = String(decoding: line, as: UTF8.self)
        var shown = ""
        var rest = text[...]
        // Scanning forward only: an opened text is never searched again.
        while let start = rest.range(of: "\"" + EventPathSealing.prefix),
              let end = rest[start.upperBound...].firstIndex(of: "\"") {
            shown += rest[..<start.lowerBound]
            var quoted: [UInt8] = []
            CacheEvent.appendQuoted(sealing.open(rest[rest.index(after: start.lowerBound)..<end]) ?? "(does not open)",
                                    to: &quoted)
            shown += String(decoding: quoted, as: UTF8.self)
            rest = rest[rest.index(after: end)...]
        }
        shown += rest
        return Array(shown.utf8)
    }
}
