import Foundation
import Logging

/// Appends events as JSON lines to `STORE/events.jsonl`, with a structured log line each.
/// The file is bounded and rotated, and waits out a full disk (see ``RotatingFile``).
final class EventLog: Sendable {
    private let file: RotatingFile
    private let logger: Logger

    init(path: String, maxBytes: Int64 = 4 << 20, disk: any Disk = PosixDisk(), logger: Logger) {
        self.logger = logger
        file = RotatingFile(path: path, maxBytes: maxBytes, disk: disk, logger: logger)
    }

    func record(_ events: [CacheEvent]) {
        guard !events.isEmpty else { return }
        var bytes: [UInt8] = []
        for event in events {
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
}
