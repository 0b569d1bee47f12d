import Foundation
import Glibc
import Logging
import Synchronization

/// Appends events as JSON lines to `STORE/events.jsonl`, with a structured log line each.
/// The file is bounded: past `maxBytes` it is rotated to `events.jsonl.1` (one old file kept).
final class EventLog: Sendable {
    private let path: String
    private let maxBytes: Int64
    private let logger: Logger
    /// Guards the descriptor and the byte count together, so lines never interleave.
    private let state: Mutex<(fd: Int32, size: Int64)>

    init(path: String, maxBytes: Int64 = 4 << 20, logger: Logger) {
        self.path = path
        self.maxBytes = maxBytes
        self.logger = logger
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        var info = stat()
        let size = fd >= 0 && fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
        state = Mutex((fd, size))
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
    }

    func record(_ events: [CacheEvent]) {
        guard !events.isEmpty else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes = Data()
        for event in events {
            logger.info("\(event.event.rawValue)", metadata: [
                "pool": "\(event.pool)", "path": "\(event.path)", "size": "\(event.size)", "reason": "\(event.reason)",
            ])
            guard let line = try? encoder.encode(event) else { continue }
            bytes.append(line)
            bytes.append(0x0a)
        }
        state.withLock { state in
            if state.size + Int64(bytes.count) > maxBytes { rotate(&state) }
            guard state.fd >= 0 else { return }
            let written = bytes.withUnsafeBytes { write(state.fd, $0.baseAddress, $0.count) }
            if written < 0 {
                logger.error("could not append to \(path): \(String(cString: strerror(errno)))")
            } else {
                state.size += Int64(written)
            }
        }
    }

    private func rotate(_ state: inout (fd: Int32, size: Int64)) {
        if state.fd >= 0 { close(state.fd) }
        rename(path, path + ".1")
        state.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        state.size = 0
    }
}
