import Foundation
import Glibc
import Logging
import Synchronization

/// A bounded append-only file: past `maxBytes` it is rotated to `PATH.1` (one old file
/// kept). On a full disk the bytes wait in memory (up to `maxBytes`) for the next append:
/// the evictions that make room are what a full disk most needs recorded. Used by the
/// event log and the pools' access traces.
final class RotatingFile: Sendable {
    private struct State {
        var fd: Int32
        var size: Int64
        /// Bytes not written yet because the disk was full.
        var pending = Data()
    }

    let path: String
    private let maxBytes: Int64
    private let logger: Logger
    /// Guards the descriptor, the byte count and the waiting bytes together, so appends never
    /// interleave.
    private let state: Mutex<State>

    init(path: String, maxBytes: Int64, logger: Logger) {
        self.path = path
        self.maxBytes = maxBytes
        self.logger = logger
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        if fd < 0 { logger.error("could not open \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        let size = fd >= 0 && fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
        state = Mutex(State(fd: fd, size: size))
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
    }

    func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        state.withLock { state in
            state.pending.append(contentsOf: bytes)
            write(&state)
        }
    }

    /// Writes bytes a full disk held back (after an eviction made room).
    func retryPending() {
        state.withLock { state in
            if !state.pending.isEmpty { write(&state) }
        }
    }

    private func write(_ state: inout State) {
        if state.size + Int64(state.pending.count) > maxBytes { rotate(&state) }
        guard state.fd >= 0 else { return }
        let written = state.pending.withUnsafeBytes { Glibc.write(state.fd, $0.baseAddress, $0.count) }
        if written < 0 {
            let reason = errno
            // A full disk holds bytes back until an eviction makes room (`retryPending`):
            // only bytes that are dropped are worth a user's attention.
            if reason == ENOSPC && state.pending.count <= maxBytes {
                logger.debug("\(path): held back until the store's disk has room: \(String(cString: strerror(reason)))")
            } else {
                logger.error("could not append to \(path), \(state.pending.count) bytes dropped: \(String(cString: strerror(reason)))")
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
