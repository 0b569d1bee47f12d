import CacheModel
import CFuse3
import CacheCore
import CoreMetrics
import Foundation
import Glibc
import Logging
import Synchronization

/// Options of one mount that concern FUSE itself.
public struct FuseMountOptions: Sendable {
    public var allowOther: Bool
    public var singleThreaded: Bool
    public var maxThreads: UInt32
    public var timeouts: CacheTimeouts
    public var maxWrite: UInt32
    /// Ask for the kernel's writeback cache (`write()` returns once the bytes are in the
    /// page cache; the kernel sends them in large WRITEs, at the latest before each close).
    /// Off by default: an ENOSPC met at write-back reaches only the first `close()` of the
    /// file, which may be a reader's, so a writer can miss it (found by `scripts/torture`).
    public var writebackCache: Bool
    /// Let the kernel serve opens and closes of files by itself (`-o kernel_hits`; the daemon
    /// learns of hits from ``KernelCloseEvents``).
    public var kernelHits = false
    /// libfuse's trace of every request and reply, on stderr (`-o debug`).
    public var debug = false
    /// Kernel mount flags passed on to libfuse as they are (`ro`, `nodev`, `noexec`, …).
    public var kernelFlags: [String] = []
    /// The mount's source in /proc/mounts: the store's path, so `mount -a` sees that an
    /// fstab line is mounted already.
    public var source = "cachefs"

    public init(allowOther: Bool = false, singleThreaded: Bool = false, maxThreads: UInt32 = Tunables.fuseThreads,
                timeouts: CacheTimeouts = CacheTimeouts(), maxWrite: UInt32 = Tunables.maxWriteBytes, writebackCache: Bool = false) {
        self.allowOther = allowOther
        self.singleThreaded = singleThreaded
        self.maxThreads = maxThreads
        self.timeouts = timeouts
        self.maxWrite = maxWrite
        self.writebackCache = writebackCache
    }
}

public enum FuseSessionError: Error, CustomStringConvertible {
    case cannotCreateSession
    case cannotMount(String)

    public var description: String {
        switch self {
        case .cannotCreateSession: return "libfuse could not create a session (see the messages above)"
        case .cannotMount(let explanation): return explanation
        }
    }
}

/// One mounted filesystem: new session, mount, serve until unmounted or signalled, unmount.
/// Each step that succeeded is undone in reverse order, as libfuse's examples do.
public final class FuseSession {
    private let context: FuseContext
    private let session: OpaquePointer
    private let mountpoint: String
    private let options: FuseMountOptions
    /// The one notifier of this session: it falls silent when the loop ends, before the
    /// unmount closes the connection.
    public let notificationTarget: LibfuseNotifier
    /// argv must outlive the session: libfuse keeps pointers into it.
    private let arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let argumentCount: Int32

    /// With a `metricsFactory`, every request is timed by operation (a swift-metrics `Timer`).
    public init(engine: CacheEngine, mountpoint: String, options: FuseMountOptions, logger: Logger,
                metricsFactory: (any MetricsFactory)? = nil) throws {
        context = FuseContext(engine: engine, timeouts: options.timeouts, logger: logger, maxWrite: options.maxWrite,
                              writebackCache: options.writebackCache, kernelHits: options.kernelHits,
                              requestTimers: metricsFactory.map(RequestTimers.init(factory:)))
        self.mountpoint = mountpoint
        self.options = options
        var mountOptions = "fsname=\(Self.escapedOption(options.source)),subtype=cachefs,default_permissions"
        if options.allowOther { mountOptions += ",allow_other" }
        mountOptions += options.kernelFlags.map { "," + $0 }.joined()
        let words = ["cachefs", "-o", mountOptions] + (options.debug ? ["-d"] : [])
        argumentCount = Int32(words.count)
        arguments = .allocate(capacity: words.count + 1)
        for (position, word) in words.enumerated() { arguments[position] = strdup(word) }
        arguments[words.count] = nil
        var fuseArguments = fuse_args(argc: argumentCount, argv: arguments, allocated: 0)
        var operations = makeOperations()
        let userdata = Unmanaged.passRetained(context).toOpaque()
        guard let created = cachefs_session_new(&fuseArguments, &operations, userdata) else {
            Unmanaged<FuseContext>.fromOpaque(userdata).release()
            Self.free(arguments, count: argumentCount)
            throw FuseSessionError.cannotCreateSession
        }
        session = created
        notificationTarget = LibfuseNotifier(session: created, logger: logger)
        // Every stored property is set, so a throw from here on runs `deinit`, which destroys
        // the session and releases the context: doing it here too was a double free.
        let mount = MountFailure.capturingStandardError { fuse_session_mount(session, mountpoint) }
        guard mount.result == 0 else {
            throw FuseSessionError.cannotMount(MountFailure.explain(mount.text, mountpoint: mountpoint))
        }
        // A mount that worked may still have warned: pass the words on.
        if !mount.text.isEmpty { FileHandle.standardError.write(Data(mount.text.utf8)) }
    }

    /// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread and every thread it starts
    /// from now on. Call before anything starts a thread: libfuse's handler only ends the
    /// loop when the signal lands on the loop's own threads, which ``run()`` unblocks.
    public static func blockTerminationSignals() {
        var signals = terminationSignals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    private static var terminationSignals: sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
        return signals
    }

    /// Serves requests until `fusermount3 -u`, SIGTERM or SIGINT, then unmounts. Returns with
    /// the termination signals blocked again, so what the caller does after (the final flush)
    /// cannot die of one: systemd sends SIGTERM as soon as ExecStop's unmount returns.
    public func run() -> Int32 {
        fuse_set_signal_handlers(session)
        var signals = Self.terminationSignals
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        let result: Int32
        if options.singleThreaded {
            result = fuse_session_loop(session)
        } else {
            let config = fuse_loop_cfg_create()
            fuse_loop_cfg_set_max_threads(config, options.maxThreads)
            fuse_loop_cfg_set_idle_threads(config, min(options.maxThreads, 4))
            result = fuse_session_loop_mt(session, config)
            fuse_loop_cfg_destroy(config)
        }
        // Before the handlers go back to the default action (death): a SIGTERM from here on
        // stays pending until the process exits.
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        notificationTarget.end()
        fuse_session_unmount(session)
        fuse_remove_signal_handlers(session)
        return result
    }

    deinit {
        fuse_session_destroy(session)
        Unmanaged.passUnretained(context).release()
        Self.free(arguments, count: argumentCount)
    }

    /// libfuse splits options at commas and takes a backslash as an escape.
    private static func escapedOption(_ value: String) -> String {
        String(value.flatMap { $0 == "\\" || $0 == "," ? ["\\", $0] : [$0] })
    }

    private static func free(_ arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, count: Int32) {
        for position in 0..<Int(count) { Glibc.free(arguments[position]) }
        arguments.deallocate()
    }
}

/// Tells the kernel about removals the daemon made by itself. Safe to call only from a
/// thread that is not serving a request and holds no core lock (libfuse's rule).
public final class LibfuseNotifier: KernelNotifier, @unchecked Sendable {
    // The session pointer is only read; libfuse's notify calls are thread-safe.
    private let session: OpaquePointer
    private let logger: Logger
    /// Set when the session's loop ends: the connection is about to close.
    private let ended = Atomic<Bool>(false)

    init(session: OpaquePointer, logger: Logger) {
        self.session = session
        self.logger = logger
    }

    /// `notify_delete` drops the kernel's dentry and, when it finds one, marks the parent
    /// changed, which also drops its cached listing (`cache_readdir`). A name the kernel has
    /// no dentry for (listed by a plain READDIR, or pruned since) answers ENOENT and leaves
    /// a cached listing alone, so then the parent's cached pages are dropped instead.
    public func deleted(parent: EntryID, child: EntryID, name: [UInt8]) {
        guard !ended.load(ordering: .acquiring) else { return }
        let cName = name.map { CChar(bitPattern: $0) }
        let result = fuse_lowlevel_notify_delete(session, fuse_ino_t(parent), fuse_ino_t(child), cName, cName.count)
        guard result == -ENOENT else {
            report(result, of: "notify_delete", inode: parent)
            return
        }
        report(fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(parent), 0, 0), of: "notify_inval_inode",
               inode: parent)
    }

    /// A negative offset drops only the kernel's cached attributes, not its pages.
    public func attributesChanged(_ id: EntryID) {
        guard !ended.load(ordering: .acquiring) else { return }
        let result = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(id), -1, 0)
        // ENOENT: the kernel holds no inode for it, so nothing is stale.
        guard result != -ENOENT else { return }
        report(result, of: "notify_inval_inode (attributes)", inode: id)
    }

    /// `notify_inval_entry`: the kernel drops its dentry of the name (a process that has
    /// the file open keeps it) and looks it up at its next use.
    public func entryChanged(parent: EntryID, name: [UInt8]) {
        guard !ended.load(ordering: .acquiring) else { return }
        let cName = name.map { CChar(bitPattern: $0) }
        report(fuse_lowlevel_notify_inval_entry(session, fuse_ino_t(parent), cName, cName.count),
               of: "notify_inval_entry", inode: parent)
    }

    /// No notification after this: the mount is going away.
    func end() {
        ended.store(true, ordering: .releasing)
    }

    /// A failed notification leaves a stale name in the kernel until its timeout. At
    /// unmount the connection is gone (ENOTCONN, or EBADF for one sent as it closed), and
    /// ENOENT means the kernel had already forgotten the inode (nothing of it is cached, so
    /// nothing is stale): neither needs a word.
    private func report(_ result: Int32, of call: String, inode: EntryID) {
        guard result != 0, result != -ENOTCONN, result != -EBADF, result != -ENOENT else { return }
        logger.warning("\(call) for inode \(inode) failed: \(String(cString: strerror(-result)))")
    }
}
