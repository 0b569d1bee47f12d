import CacheCore
import CacheModel
import Foundation
import Synchronization

/// Runs a pool action (`user.cache.clear` or `user.cache.purge`), which the daemon carries
/// out before the setxattr returns, and meanwhile shows how many files are gone by polling
/// the target's `user.cache.files` figure: the action stays one plain setxattr, as with
/// `setfattr`, and needs no protocol of its own.
enum ActionProgress {
    static func run(path: String, action: String, task: String) throws {
        guard let line = ProgressLine(task: task) else {
            try Xattr.set(path, action, "1")
            return
        }
        try Xattr.requireCachefs(path)
        let before = try fileCount(path)
        let outcome = ActionOutcome()
        let worker = Thread {
            outcome.finish(Result { try Xattr.set(path, action, "1") })
        }
        worker.start()
        while !outcome.wait(seconds: Tunables.progressSeconds) {
            // A count that fails mid-action only leaves the progress line where it was.
            line.update(max(before - ((try? fileCount(path)) ?? before), 0), of: before, verb: "removed")
        }
        // Only the summary's figure; the action's own outcome is reported from `outcome`.
        let after = (try? fileCount(path)) ?? before
        line.finish(max(before - after, 0), of: before, verb: "removed")
        try outcome.result()
    }

    private static func fileCount(_ path: String) throws -> Int {
        Int(try Xattr.get(path, "user.cache.files")) ?? 0
    }
}

/// The setxattr's result, handed from its thread to the one drawing progress.
private final class ActionOutcome: Sendable {
    private let outcome = Mutex<Result<Void, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ result: Result<Void, any Error>) {
        outcome.withLock { $0 = result }
        done.signal()
    }

    /// Whether the action finished within `seconds`.
    func wait(seconds: Double) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }

    func result() throws {
        try outcome.withLock { $0 }?.get()
    }
}
