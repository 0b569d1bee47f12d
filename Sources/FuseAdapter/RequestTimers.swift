import CFuse3
import CoreMetrics
import Glibc

/// The FUSE operations whose requests are counted and timed, one swift-metrics `Timer` each.
enum FuseOperation: Int, CaseIterable {
    case lookup, forget, forgetMulti, getattr, setattr, mknod, mkdir, unlink, rmdir, symlink, link, readlink, rename
    case create, open, read, write, flush, release, fsync, fallocate
    case opendir, readdir, readdirplus, fsyncdir, statfs, access
    case getxattr, setxattr, listxattr, removexattr

    var label: String {
        self == .forgetMulti ? "batch_forget" : String(describing: self)
    }
}

/// How long each request took, by operation. Built once at mount, so recording a request
/// costs two clock reads and one histogram update: no allocation, no lookup by name.
final class RequestTimers: Sendable {
    static let metricLabel = "cachefs_request_duration_seconds"

    private let timers: [CoreMetrics.Timer]

    init(factory: any MetricsFactory) {
        timers = FuseOperation.allCases.map { operation in
            CoreMetrics.Timer(label: Self.metricLabel, dimensions: [("op", operation.label)], factory: factory)
        }
    }

    func record(_ operation: FuseOperation, nanoseconds: Int64) {
        timers[operation.rawValue].recordNanoseconds(nanoseconds)
    }
}

/// Runs one callback and, when metrics are on, records how long it took; at log level
/// trace, writes one line naming the request. The context is read before the callback
/// runs: once it has replied, the request is gone.
@inline(__always)
func timed(_ request: fuse_req_t?, _ operation: FuseOperation, _ callback: () -> Void) {
    let context = FuseContext.from(request!)
    context.logger.trace("\(operation.label) from pid \(fuse_req_ctx(request!)!.pointee.pid)")
    guard let timers = context.requestTimers else {
        callback()
        return
    }
    let start = monotonicNanoseconds()
    callback()
    timers.record(operation, nanoseconds: monotonicNanoseconds() - start)
}

@inline(__always)
private func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
