import CacheCore
import CacheModel
import Foundation
import Glibc
import Logging
import Synchronization

/// Where the daemon's log lines go: standard error until the mount is ready, then (in the
/// background) `STORE/daemon.log`, rotated to `daemon.log.1` once it passes ``maxBytes``, so
/// a `clear` of many files cannot fill the disk with log lines.
///
/// The file is placed on descriptors 1 and 2, so libfuse's `-o debug` trace and anything
/// else written to them land in the same file and follow each rotation.
final class DaemonLog: Sendable {
    static let shared = DaemonLog()
    /// `Tunables.daemonLogBytes`, or `CACHEFS_LOG_ROTATE_BYTES` (for tests).
    static let maxBytes: Int64 = ProcessInfo.processInfo.environment["CACHEFS_LOG_ROTATE_BYTES"].flatMap { Int64($0) }
        ?? Tunables.daemonLogBytes

    private struct State {
        /// Set once the log has moved to its file.
        var path: String?
    }

    /// Guards the move and the rotation, so lines never interleave with a rotation.
    private let state = Mutex(State())

    func append(_ line: String) {
        state.withLock { state in
            if let path = state.path, Self.size(of: 2) + Int64(line.utf8.count) > Self.maxBytes {
                rename(path, path + ".1")
                Self.place(path)
            }
            _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
        }
    }

    /// Sends descriptors 1 and 2, and every line from now on, to `path`.
    func moveToFile(_ path: String) {
        state.withLock { state in
            if Self.place(path) { state.path = path }
        }
    }

    @discardableResult
    private static func place(_ path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        dup2(fd, 1)
        dup2(fd, 2)
        close(fd)
        return true
    }

    private static func size(of fd: Int32) -> Int64 {
        var info = stat()
        return fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
    }
}

/// swift-log's handler for the daemon: one line per message, through ``DaemonLog``.
struct DaemonLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let time = ValueParsing.formatRFC3339(SystemClock().now())
        DaemonLog.shared.append("\(time) \(event.level) \(label):\(fields) \(event.message)\n")
    }
}
