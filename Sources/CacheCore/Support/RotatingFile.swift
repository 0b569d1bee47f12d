import CacheModel
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
    private let disk: any Disk
    private let logger: Logger
    /// Guards the descriptor, the byte count and the waiting bytes together, so appends never
    /// interleave.
    private let state: Mutex<State>

    init(path: String, maxBytes: Int64, disk: any Disk, logger: Logger) {
        self.path = path
        self.maxBytes = maxBytes
        self.disk = disk
        self.logger = logger
        let fd = Self.open(path, disk: disk, logger: logger)
        var size: Int64 = 0
        if fd >= 0 {
            do throws(CacheError) {
                size = try disk.size(of: fd)
            } catch {
                logger.error("could not read the size of \(path): \(error); rotating it counts from here")
            }
        }
        state = Mutex(State(fd: fd, size: size))
    }

    /// The file opened for appending, or -1 (said in the log; appends then wait in memory).
    private static func open(_ path: String, disk: any Disk, logger: Logger) -> Int32 {
        do throws(CacheError) {
            return try disk.open(path, flags: O_WRONLY | O_CREAT | O_APPEND, mode: 0o600)
        } catch {
            logger.error("could not open \(path): \(error)")
            return -1
        }
    }

    deinit {
        state.withLock { if $0.fd >= 0 { disk.close($0.fd) } }
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
        let fd = state.fd
        let result = state.pending.withUnsafeBytes { bytes in
            Result { () throws(CacheError) in try disk.write(fd, from: bytes) }
        }
        switch result {
        case .failure(let error):
            let reason = error.errno
            // A full disk holds bytes back until an eviction makes room (`retryPending`):
            // only bytes that are dropped are worth a user's attention.
            if reason == ENOSPC && state.pending.count <= maxBytes {
                logger.debug("\(path): held back until the store's disk has room: \(String(cString: strerror(reason)))")
            } else {
                logger.error("could not append to \(path), \(state.pending.count) bytes dropped: \(String(cString: strerror(reason)))")
                state.pending = Data()
            }
        case .success(let written):
            state.size += Int64(written)
            state.pending.removeFirst(written)
        }
    }

    private func rotate(_ state: inout State) {
        if state.fd >= 0 { disk.close(state.fd) }
        do throws(CacheError) {
            try disk.rename(path, to: path + ".1")
        } catch {
            logger.error("could not rotate \(path): \(error); it grows on until a rotation succeeds")
        }
        state.fd = Self.open(path, disk: disk, logger: logger)
        state.size = 0
    }
}
