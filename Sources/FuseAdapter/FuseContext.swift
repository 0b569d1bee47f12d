import CacheModel
import CFuse3
import CacheCore
import Glibc
import Logging
import Synchronization

/// How long the kernel may trust what it was told. Long, because the daemon tells the
/// kernel itself whenever it removes something on its own (and changes no attribute behind
/// its back), so the timeout only bounds staleness if a notification were lost. An expired
/// entry costs a round trip per name (about 160 µs against 4 µs for a cached `stat`).
public struct CacheTimeouts: Sendable {
    public var entries: Double
    public var attributes: Double

    public init(entries: Double = Tunables.kernelCacheSeconds, attributes: Double = Tunables.kernelCacheSeconds) {
        self.entries = entries
        self.attributes = attributes
    }
}

/// What every callback needs, reached through libfuse's userdata pointer (never a global).
final class FuseContext: Sendable {
    let engine: CacheEngine
    let timeouts: CacheTimeouts
    let logger: Logger
    let maxWrite: UInt32
    /// Whether INIT asks for the kernel's writeback cache (when the kernel offers it).
    let writebackCache: Bool
    /// Whether INIT got it.
    let writebackActive = Atomic<Bool>(false)
    /// Whether INIT lets the kernel serve opens by itself (`kernel_hits`).
    let kernelHits: Bool
    /// Errors of bytes the kernel wrote back by itself, until a close reports them.
    let writebackErrors = WritebackErrors()
    /// Request timings, when the daemon exports metrics; nil costs nothing per request.
    let requestTimers: RequestTimers?

    init(engine: CacheEngine, timeouts: CacheTimeouts, logger: Logger, maxWrite: UInt32, writebackCache: Bool,
         kernelHits: Bool, requestTimers: RequestTimers?) {
        self.kernelHits = kernelHits
        self.engine = engine
        self.requestTimers = requestTimers
        self.timeouts = timeouts
        self.logger = logger
        self.maxWrite = maxWrite
        self.writebackCache = writebackCache
    }

    /// Whether a handle's reads and writes skip the kernel's page cache (`direct_io`). Never
    /// with the writeback cache: who asks for it wants `write()` to fill the page cache.
    func bypassesPageCache(_ handle: UInt64) -> Bool {
        !writebackActive.load(ordering: .acquiring) && engine.bypassesPageCache(handle)
    }

    /// The same for a create's open (whose handle may be 0 by now, with `kernel_hits`).
    func bypassesPageCache(_ created: CreatedFile) -> Bool {
        !writebackActive.load(ordering: .acquiring) && created.bypassesPageCache
    }

    /// The context of a request. (Its trace line is written once, by `timed`.)
    static func from(_ request: fuse_req_t) -> FuseContext {
        Unmanaged<FuseContext>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue()
    }

    static func caller(_ request: fuse_req_t) -> Caller {
        let context = fuse_req_ctx(request)!.pointee
        return Caller(uid: context.uid, gid: context.gid, pid: context.pid)
    }
}

/// A C name as the bytes it is: names are kept byte for byte, as ext4 does.
func nameBytes(_ name: UnsafePointer<CChar>?) -> [UInt8] {
    guard let name else { return [] }
    return Array(UnsafeBufferPointer(start: name, count: strlen(name))).map { UInt8(bitPattern: $0) }
}
