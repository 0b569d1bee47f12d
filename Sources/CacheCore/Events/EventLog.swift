import Foundation
import Glibc
import Logging
import Synchronization

/// Appends events as JSON lines to `STORE/events.jsonl`, with a structured log line each.
/// The file is bounded: past `maxBytes` it is rotated to `events.jsonl.1` (one old file kept).
/// On a full disk the lines wait in memory (up to `maxBytes`) for the next append: the
/// evictions that make room are the events a full disk most needs recorded.
final class EventLog: Sendable {
    private struct State {
        var fd: Int32
        var size: Int64
        /// Lines not written yet because the disk was full.
        var pending = Data()
    }

    private let path: String
    private let maxBytes: Int64
    private let logger: Logger
    /// Guards the descriptor, the byte count and the waiting lines together, so lines never
    /// interleave.
    private let state: Mutex<State>

    init(path: String, maxBytes: Int64 = 4 << 20, logger: Logger) {
        self.path = path
        self.maxBytes = maxBytes
        self.logger = logger
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        var info = stat()
        let size = fd >= 0 && fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
        state = Mutex(State(fd: fd, size: size))
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
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
        state.withLock { state in
            state.pending.append(contentsOf: bytes)
            append(&state)
        }
    }

    /// Writes lines a full disk held back (after an eviction made room).
    func retryPending() {
        state.withLock { state in
            if !state.pending.isEmpty { append(&state) }
        }
    }

    private func append(_ state: inout State) {
        if state.size + Int64(state.pending.count) > maxBytes { rotate(&state) }
        guard state.fd >= 0 else { return }
        let written = state.pending.withUnsafeBytes { write(state.fd, $0.baseAddress, $0.count) }
        if written < 0 {
            let reason = errno
            // A full disk holds lines back until an eviction makes room (`retryPending`):
            // only lines that are dropped are worth a user's attention.
            if reason == ENOSPC && state.pending.count <= maxBytes {
                logger.debug("events held back until the store's disk has room: \(String(cString: strerror(reason)))")
            } else {
                logger.error("could not append to \(path), \(state.pending.count) bytes of events dropped: \(String(cString: strerror(reason)))")
                state.pending = Data()
            }
        } else {
            state.size += Int64(written)
            state.pending.removeFirst(written)
        }
    }

    private func rotate(_ state: inout State) {
        if state.fd >= 0 { close(state.fd) }
        rename(path, path + ".1")
        state.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        state.size = 0
    }
}
