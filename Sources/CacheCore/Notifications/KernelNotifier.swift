import CacheModel
import Synchronization

/// How the core tells the kernel that it changed something by itself (an eviction, a
/// removal by policy), so `ls` and `inotifywait` see it at once. The FUSE adapter provides
/// the real one; tests use a recording fake.
///
/// Rule: call it only from a background thread, holding no core lock (libfuse forbids
/// notifications from inside a request or under a lock a request may need).
public protocol KernelNotifier: Sendable {
    /// The name `name` in directory `parent`, which pointed at `child`, is gone.
    func deleted(parent: EntryID, child: EntryID, name: [UInt8])
    /// The attributes of `id` the kernel holds are stale (cachefs moved its atime).
    func attributesChanged(_ id: EntryID)
    /// The kernel must look `name` in `parent` up again (its entry's timeout is stale).
    func entryChanged(parent: EntryID, name: [UInt8])
}

extension KernelNotifier {
    public func attributesChanged(_ id: EntryID) {}
    public func entryChanged(parent: EntryID, name: [UInt8]) {}
}

/// A notifier that tells nobody: for tools that open a store without a mount.
public struct SilentNotifier: KernelNotifier {
    public init() {}
    public func deleted(parent: EntryID, child: EntryID, name: [UInt8]) {}
}

/// A notifier that forwards to one set later: the engine is created before the FUSE
/// session that carries notifications exists.
public final class LateBoundNotifier: KernelNotifier {
    private let target = Mutex<(any KernelNotifier)?>(nil)

    public init() {}

    public func bind(_ notifier: any KernelNotifier) {
        target.withLock { $0 = notifier }
    }

    public func deleted(parent: EntryID, child: EntryID, name: [UInt8]) {
        target.withLock { $0 }?.deleted(parent: parent, child: child, name: name)
    }

    public func attributesChanged(_ id: EntryID) {
        target.withLock { $0 }?.attributesChanged(id)
    }

    public func entryChanged(parent: EntryID, name: [UInt8]) {
        target.withLock { $0 }?.entryChanged(parent: parent, name: name)
    }
}
