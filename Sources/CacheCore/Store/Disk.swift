import CacheModel
import CLinux
import Glibc
import SystemPackage

/// The one seam through which the core makes file syscalls on the store (object bytes,
/// spares, events and traces, the space reserve, the index log's headroom, the store lock,
/// the index's write-back, recovery's walk), so tests can inject faults (ENOSPC, EIO) and the
/// encryption layer has one place to plug in. SQLite's own I/O on the index is SQLite's.
public protocol Disk: Sendable {
    func open(_ path: String, flags: Int32, mode: mode_t) throws(CacheError) -> Int32
    func close(_ fd: Int32)
    func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(CacheError) -> Int
    func pwrite(_ fd: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) -> Int
    func ftruncate(_ fd: Int32, length: Int64) throws(CacheError)
    func fsync(_ fd: Int32, dataOnly: Bool) throws(CacheError)
    func truncate(_ path: String, length: Int64) throws(CacheError)
    func unlink(_ path: String) throws(CacheError)
    func rename(_ path: String, to newPath: String) throws(CacheError)
    func mkdir(_ path: String, mode: mode_t) throws(CacheError)
    func fileSize(_ path: String) throws(CacheError) -> Int64
    /// `st_blocks` of an open file: its allocation in 512-byte units.
    func allocatedBlocks(_ fd: Int32) throws(CacheError) -> Int64
    func fallocate(_ fd: Int32, mode: Int32, offset: Int64, length: Int64) throws(CacheError)
    /// Gives a file that is written in parts (an origin file held in blocks) its whole size,
    /// every part a hole until written. Only written parts may be read: a hole reads as zeros
    /// here, and fails its check on an encrypted store.
    func sizeForParts(_ fd: Int32, to length: Int64) throws(CacheError)
    /// Frees the stored bytes of a part of such a file (`offset` and `length` whole cipher
    /// blocks on an encrypted store; the file's last part may end at its size), keeping its size.
    func discardPart(_ fd: Int32, offset: Int64, length: Int64) throws(CacheError)
    func statvfs(_ path: String) throws(CacheError) -> Glibc.statvfs
    /// Flushes every dirty page of the filesystem holding `path` to the disk.
    func syncFilesystem(_ path: String) throws(CacheError)
    /// Writes at the file's offset (the end of an `O_APPEND` file); returns the bytes written.
    func write(_ fd: Int32, from buffer: UnsafeRawBufferPointer) throws(CacheError) -> Int
    /// `st_size` of an open file.
    func size(of fd: Int32) throws(CacheError) -> Int64
    /// Reads bytes read once (an encrypted store's uncached reads): at least `needed` of
    /// them unless the file ends first, those not in the page cache past it (see
    /// ``PosixDisk/preadPastCache(_:into:at:needing:)``, which sets the alignment).
    func preadPastCache(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
                        needing needed: Int) throws(CacheError) -> Int
    /// An exclusive `flock` without waiting: `.io(EWOULDBLOCK)` when another process holds it.
    func lockExclusively(_ fd: Int32) throws(CacheError)
    /// The names in a directory, without "." and "..".
    func contentsOfDirectory(_ path: String) throws(CacheError) -> [String]
    /// Makes a directory's entries durable (after a rename into it).
    func syncDirectory(_ path: String) throws(CacheError)
}

extension Disk {
    public func write(_ fd: Int32, from buffer: UnsafeRawBufferPointer) throws(CacheError) -> Int {
        try PosixDisk().write(fd, from: buffer)
    }

    public func size(of fd: Int32) throws(CacheError) -> Int64 { try PosixDisk().size(of: fd) }

    /// Through this disk's own `pread` (a test's disk keeps its faults).
    public func preadPastCache(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
                               needing needed: Int) throws(CacheError) -> Int {
        try preadFully(fd, into: buffer, at: offset)
    }

    public func lockExclusively(_ fd: Int32) throws(CacheError) { try PosixDisk().lockExclusively(fd) }

    public func contentsOfDirectory(_ path: String) throws(CacheError) -> [String] {
        try PosixDisk().contentsOfDirectory(path)
    }

    public func syncDirectory(_ path: String) throws(CacheError) {
        let fd = try open(path, flags: O_RDONLY | O_DIRECTORY, mode: 0)
        defer { close(fd) }
        try fsync(fd, dataOnly: false)
    }
}

/// The real disk: swift-system's `FileDescriptor` where it covers the call (open, close,
/// reads, writes, resize), thin Glibc wrappers for the rest; all retry on EINTR and report
/// errno as ``CacheError/io(_:)``. Descriptors stay `Int32`: FUSE replies splice from them.
public struct PosixDisk: Disk {
    public init() {}

    public func open(_ path: String, flags: Int32, mode: mode_t) throws(CacheError) -> Int32 {
        let access = FileDescriptor.AccessMode(rawValue: flags & O_ACCMODE)
        let options = FileDescriptor.OpenOptions(rawValue: flags & ~O_ACCMODE).union(.closeOnExec)
        let permissions = flags & O_CREAT != 0 ? FilePermissions(rawValue: mode) : nil
        return try system {
            try FileDescriptor.open(FilePath(path), access, options: options, permissions: permissions).rawValue
        }
    }

    public func close(_ fd: Int32) {
        // The descriptors closed here were only read, or their bytes' durability is fsync's
        // business: a failed close loses nothing `close` could report usefully.
        try? FileDescriptor(rawValue: fd).close()
    }

    public func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        try system { try FileDescriptor(rawValue: fd).read(fromAbsoluteOffset: offset, into: buffer) }
    }

    public func pwrite(_ fd: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        try system { try FileDescriptor(rawValue: fd).write(toAbsoluteOffset: offset, buffer) }
    }

    public func ftruncate(_ fd: Int32, length: Int64) throws(CacheError) {
        try system { try FileDescriptor(rawValue: fd).resize(to: length) }
    }

    /// Runs a swift-system call, its `Errno` as ``CacheError/io(_:)``.
    private func system<T>(_ call: () throws -> T) throws(CacheError) -> T {
        do {
            return try call()
        } catch let error as Errno {
            throw .io(error.rawValue)
        } catch {
            throw .io(EIO)
        }
    }

    public func fsync(_ fd: Int32, dataOnly: Bool) throws(CacheError) {
        _ = try retrying { dataOnly ? Glibc.fdatasync(fd) : Glibc.fsync(fd) }
    }

    public func truncate(_ path: String, length: Int64) throws(CacheError) {
        _ = try retrying { Glibc.truncate(path, off_t(length)) }
    }

    public func unlink(_ path: String) throws(CacheError) {
        _ = try retrying { Glibc.unlink(path) }
    }

    public func rename(_ path: String, to newPath: String) throws(CacheError) {
        _ = try retrying { Glibc.rename(path, newPath) }
    }

    public func mkdir(_ path: String, mode: mode_t) throws(CacheError) {
        if Glibc.mkdir(path, mode) != 0 && errno != EEXIST { throw .io(errno) }
    }

    public func fileSize(_ path: String) throws(CacheError) -> Int64 {
        var info = stat()
        _ = try retrying { fstatat(AT_FDCWD, path, &info, 0) }
        return Int64(info.st_size)
    }

    public func allocatedBlocks(_ fd: Int32) throws(CacheError) -> Int64 {
        var info = stat()
        _ = try retrying { fstat(fd, &info) }
        return Int64(info.st_blocks)
    }

    public func fallocate(_ fd: Int32, mode: Int32, offset: Int64, length: Int64) throws(CacheError) {
        _ = try retrying { CLinux.fallocate(fd, mode, off_t(offset), off_t(length)) }
    }

    public func sizeForParts(_ fd: Int32, to length: Int64) throws(CacheError) {
        try ftruncate(fd, length: length)
    }

    public func discardPart(_ fd: Int32, offset: Int64, length: Int64) throws(CacheError) {
        try fallocate(fd, mode: FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset: offset, length: length)
    }

    public func statvfs(_ path: String) throws(CacheError) -> Glibc.statvfs {
        var info = Glibc.statvfs()
        // Swift sees `statvfs` as the struct only, so ask through a descriptor.
        let fd = try open(path, flags: O_RDONLY | O_DIRECTORY, mode: 0)
        defer { close(fd) }
        _ = try retrying { fstatvfs(fd, &info) }
        return info
    }

    public func syncFilesystem(_ path: String) throws(CacheError) {
        let fd = try open(path, flags: O_RDONLY | O_DIRECTORY, mode: 0)
        defer { close(fd) }
        _ = try retrying { syncfs(fd) }
    }

    public func write(_ fd: Int32, from buffer: UnsafeRawBufferPointer) throws(CacheError) -> Int {
        try system { try FileDescriptor(rawValue: fd).write(buffer) }
    }

    public func size(of fd: Int32) throws(CacheError) -> Int64 {
        var info = stat()
        _ = try retrying { fstat(fd, &info) }
        return Int64(info.st_size)
    }

    public func lockExclusively(_ fd: Int32) throws(CacheError) {
        _ = try retrying { flock(fd, LOCK_EX | LOCK_NB) }
    }

    public func contentsOfDirectory(_ path: String) throws(CacheError) -> [String] {
        guard let directory = opendir(path) else { throw .io(errno) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private func retrying<T: BinaryInteger>(_ call: () -> T) throws(CacheError) -> T {
        while true {
            let result = call()
            if result >= 0 { return result }
            if errno != EINTR { throw .io(errno) }
        }
    }
}

extension Disk {
    /// The names in `folder`, none when it is missing; any other error is the caller's.
    func contentsIfPresent(_ folder: String) throws(CacheError) -> [String] {
        do {
            return try contentsOfDirectory(folder)
        } catch where error.errno == ENOENT {
            return []
        }
    }
}
