import CacheModel
import CLinux
import Glibc
import Synchronization

/// The kernel's close events on the mount (fanotify, one mark on the whole mount), read in
/// batches: how the daemon learns of the hits the kernel serves by itself (`kernel_hits`),
/// with no request per hit. A close of a descriptor opened to read is a hit; a close of one
/// opened to write ends the inode's writer.
///
/// fanotify needs CAP_SYS_ADMIN: ``init()`` fails for an unprivileged daemon, which then
/// serves opens itself. Each event carries a descriptor of the closed file (opened by the
/// kernel without OPEN, since the kernel serves opens; closed here without FLUSH); its
/// inode number is the daemon's entry id, read without asking the daemon
/// (`cachefs_cached_inode_number`). Events the kernel could not queue (more than its queue
/// holds: 16,384) are lost: the batch says so, and those hits are not counted.
public final class KernelCloseEvents: Sendable {
    /// What one read of the queue brought.
    public struct Batch: Sendable, Equatable {
        public var readers: [EntryID] = []
        public var writers: [EntryID] = []
        public var overflowed = false
    }

    private let group: Int32
    /// Written once to end ``run(_:)``.
    private let stopPipe: (read: Int32, write: Int32)
    private let stopped = Atomic<Bool>(false)
    /// One reader at a time: the listener's thread, or an eviction pass catching up
    /// (``drainPending(_:)``), so batches are delivered in the kernel's order.
    private let reading = Mutex(())

    /// A notification group; fails with EPERM without CAP_SYS_ADMIN.
    public init() throws(CacheError) {
        let group = fanotify_init(UInt32(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK), UInt32(O_RDONLY | O_CLOEXEC))
        guard group >= 0 else { throw CacheError.io(errno) }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            let code = errno
            close(group)
            throw CacheError.io(code)
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.group = group
        stopPipe = (ends[0], ends[1])
    }

    deinit {
        close(group)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// Marks the whole mount at `mountpoint`. Its path lookup asks the daemon for the root's
    /// attributes, so this runs once the daemon serves requests.
    public func watch(mountpoint: String) throws(CacheError) {
        let mask = UInt64(FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE)
        guard fanotify_mark(group, UInt32(FAN_MARK_ADD | FAN_MARK_MOUNT), mask, AT_FDCWD, mountpoint) == 0 else {
            throw CacheError.io(errno)
        }
    }

    /// Reads events until ``stop()``, handing each read's batch to `deliver`.
    public func run(_ deliver: (Batch) -> Void) {
        var waiting = [pollfd(fd: group, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        while !stopped.load(ordering: .acquiring) {
            guard poll(&waiting, 2, -1) >= 0 else {
                if errno == EINTR { continue }
                return
            }
            if waiting[1].revents != 0 { return }
            drainPending(deliver)
        }
    }

    /// Reads every event queued so far, handing each read's batch to `deliver`: an eviction
    /// pass calls this before it picks victims, so every close before the pass counts.
    public func drainPending(_ deliver: (Batch) -> Void) {
        reading.withLock { _ in
            let capacity = 64 * 1024
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let length = read(group, buffer, capacity)
                guard length > 0 else {
                    if length < 0 && errno == EINTR { continue }
                    return
                }
                deliver(Self.parse(UnsafeRawBufferPointer(start: buffer, count: length)))
            }
        }
    }

    /// Ends ``run(_:)`` (its events not read yet are dropped).
    public func stop() {
        stopped.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    /// The events of one read: `struct fanotify_event_metadata` records (event_len u32, vers
    /// u8, reserved u8, metadata_len u16, mask u64, fd s32, pid s32), each closing its fd.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> Batch {
        var batch = Batch()
        var offset = 0
        while offset + 24 <= bytes.count {
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            guard length >= 24, offset + length <= bytes.count else { break }
            let mask = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
            let fd = bytes.loadUnaligned(fromByteOffset: offset + 16, as: Int32.self)
            offset += length
            if mask & UInt64(FAN_Q_OVERFLOW) != 0 { batch.overflowed = true }
            guard fd >= 0 else { continue }
            let inode = cachefs_cached_inode_number(fd)
            close(fd)
            guard inode > 0 else { continue }
            let id = EntryID(inode)
            if mask & UInt64(FAN_CLOSE_WRITE) != 0 { batch.writers.append(id) }
            if mask & UInt64(FAN_CLOSE_NOWRITE) != 0 { batch.readers.append(id) }
        }
        return batch
    }
}
