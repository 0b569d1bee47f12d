import CacheModel
import CLinux
import Glibc

/// The `Disk` of an encrypted store: object files (`objects/XX/ID`) are ``EncryptedFile``s
/// owned by entry ID, and every call on them speaks plaintext (offsets, sizes, allocation);
/// every other path (index, events, spares, reserve, lock) passes through to `base`. Object
/// files open read-write even when asked write-only: a partial block is read back to reseal.
public struct EncryptingDisk: Disk {
    let base: any Disk
    let encryption: StoreEncryption
    let alarm = TamperAlarm()
    private let objectsFolder: String
    private let objects = OpenObjects()

    public init(wrapping base: any Disk, encryption: StoreEncryption, layout: StoreLayout) {
        self.base = base
        self.encryption = encryption
        objectsFolder = layout.objectsPath + "/"
    }

    /// The entry an object file's path names, or nil for any other path.
    func owner(ofPath path: String) -> EntryID? {
        guard path.hasPrefix(objectsFolder) else { return nil }
        let parts = path.dropFirst(objectsFolder.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        return EntryID(parts[1])
    }

    public func open(_ path: String, flags: Int32, mode: mode_t) throws(CacheError) -> Int32 {
        guard let owner = owner(ofPath: path) else { return try base.open(path, flags: flags, mode: mode) }
        let readable = flags & O_ACCMODE == O_WRONLY ? flags & ~O_ACCMODE | O_RDWR : flags
        let fd = try base.open(path, flags: readable, mode: mode)
        let object = objects.add(fd, owner: owner)
        do {
            try object.withLock { (sealing: inout ObjectSealing) throws(EncryptionError) in
                // O_TRUNC emptied the file under any descriptor already open on it.
                if flags & O_TRUNC != 0 { sealing.emptied() }
                try sealing.loadHeader(fd, encryption: encryption, disk: base)
            }
        } catch {
            close(fd)
            throw failure(error, of: owner)
        }
        return fd
    }

    public func close(_ fd: Int32) {
        objects.remove(fd)
        base.close(fd)
    }

    public func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        guard let object = objects.object(of: fd) else { return try base.pread(fd, into: buffer, at: offset) }
        // Without the lock first, so reads of one file run side by side; a read that meets a
        // change in progress (the last block being resealed, the size mid-write) fails, and
        // is tried again holding the lock, where only damage fails.
        if let cipher = object.cipher,
           let count = try? EncryptedFile(fd: fd, cipher: cipher, disk: base).read(into: buffer, at: offset) {
            return count
        }
        return try change(fd, object) { (sealing: inout ObjectSealing) throws(EncryptionError) in
            guard let cipher = sealing.cipher else { return 0 }
            return try EncryptedFile(fd: fd, cipher: cipher, disk: base).read(into: buffer, at: offset)
        }
    }

    public func pwrite(_ fd: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        guard let object = objects.object(of: fd) else { return try base.pwrite(fd, from: buffer, at: offset) }
        return try change(fd, object) { (sealing: inout ObjectSealing) throws(EncryptionError) in
            try sealing.sealedFile(fd, encryption: encryption, disk: base).write(buffer, at: offset)
            return buffer.count
        }
    }

    public func ftruncate(_ fd: Int32, length: Int64) throws(CacheError) {
        guard let object = objects.object(of: fd) else { return try base.ftruncate(fd, length: length) }
        try change(fd, object) { (sealing: inout ObjectSealing) throws(EncryptionError) in
            try truncate(fd, &sealing, to: length)
        }
    }

    /// A cut to 0 leaves no header (see ``ObjectSealing``); any other size is resealed.
    private func truncate(_ fd: Int32, _ sealing: inout ObjectSealing, to length: Int64) throws(EncryptionError) {
        guard length > 0 else {
            do {
                try base.ftruncate(fd, length: 0)
            } catch {
                throw .from(error, "empty an encrypted file")
            }
            sealing.emptied()
            return
        }
        try sealing.sealedFile(fd, encryption: encryption, disk: base).truncate(to: length)
    }

    public func truncate(_ path: String, length: Int64) throws(CacheError) {
        guard owner(ofPath: path) != nil else { return try base.truncate(path, length: length) }
        let fd = try open(path, flags: O_RDWR, mode: 0)
        defer { close(fd) }
        try ftruncate(fd, length: length)
    }

    /// Ciphertext has no holes (a zeroed stored block would fail): punching a hole or zeroing
    /// a range writes sealed zeros, and allocating grows the file with them. The stored range
    /// is allocated first, so a full disk fails before anything changes.
    public func fallocate(_ fd: Int32, mode: Int32, offset: Int64, length: Int64) throws(CacheError) {
        guard let object = objects.object(of: fd) else {
            return try base.fallocate(fd, mode: mode, offset: offset, length: length)
        }
        let layout = encryption.layout
        let blocks = layout.blocks(touchingOffset: offset, length: Int(clamping: length))
        if mode & FALLOC_FL_PUNCH_HOLE == 0 {
            let stored = layout.storedOffset(ofBlock: blocks.lowerBound)
            try base.fallocate(fd, mode: FALLOC_FL_KEEP_SIZE, offset: stored,
                               length: layout.storedOffset(ofBlock: blocks.upperBound) - stored)
        }
        try change(fd, object) { (sealing: inout ObjectSealing) throws(EncryptionError) in
            let file = try sealing.sealedFile(fd, encryption: encryption, disk: base)
            let size = try file.size()
            let end = offset + length
            if mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE) != 0, offset < size {
                try Self.writeZeros(file, offset..<min(end, size))
            }
            if mode & FALLOC_FL_KEEP_SIZE == 0, end > size {
                try file.truncate(to: end)
            }
        }
    }

    /// The stored file grows to the stored size of `length` plaintext bytes with a hole: its
    /// blocks are sealed as their parts are written, each whole (see ``discardPart``).
    public func sizeForParts(_ fd: Int32, to length: Int64) throws(CacheError) {
        guard let object = objects.object(of: fd) else { return try base.sizeForParts(fd, to: length) }
        try change(fd, object) { (sealing: inout ObjectSealing) throws(EncryptionError) in
            _ = try sealing.sealedFile(fd, encryption: encryption, disk: base)
            do throws(CacheError) {
                try base.ftruncate(fd, length: encryption.layout.storedSize(plaintextSize: length))
            } catch {
                throw .from(error, "size an encrypted file for its parts")
            }
        }
    }

    /// Punches the stored bytes of the part's blocks: a hole that never passes a check, which
    /// is why only parts written since are read.
    public func discardPart(_ fd: Int32, offset: Int64, length: Int64) throws(CacheError) {
        guard let object = objects.object(of: fd) else { return try base.discardPart(fd, offset: offset, length: length) }
        try change(fd, object) { (sealing: inout ObjectSealing) throws(EncryptionError) in
            let layout = encryption.layout
            let size = try sealing.sealedFile(fd, encryption: encryption, disk: base).size()
            let blocks = layout.blocks(touchingOffset: offset, length: Int(clamping: length))
            let stored = layout.storedRange(ofBlocks: blocks, plaintextSize: size)
            do throws(CacheError) {
                try base.discardPart(fd, offset: stored.lowerBound, length: stored.upperBound - stored.lowerBound)
            } catch {
                throw .from(error, "discard a part of an encrypted file")
            }
        }
    }

    private static let zeroChunk = [UInt8](repeating: 0, count: Tunables.zeroChunkBytes)

    private static func writeZeros(_ file: EncryptedFile, _ range: Range<Int64>) throws(EncryptionError) {
        var start = range.lowerBound
        while start < range.upperBound {
            let count = Int(min(Int64(zeroChunk.count), range.upperBound - start))
            try zeroChunk.withUnsafeBytes { zeros in
                Result { () throws(EncryptionError) in
                    try file.write(UnsafeRawBufferPointer(rebasing: zeros[0..<count]), at: start)
                }
            }.get()
            start += Int64(count)
        }
    }

    public func fileSize(_ path: String) throws(CacheError) -> Int64 {
        let stored = try base.fileSize(path)
        guard let owner = owner(ofPath: path), stored > 0 else { return stored }
        guard let size = encryption.layout.plaintextSize(storedSize: stored) else {
            throw failure(.badStoredSize(stored), of: owner)
        }
        return size
    }

    public func size(of fd: Int32) throws(CacheError) -> Int64 {
        guard let object = objects.object(of: fd) else { return try base.size(of: fd) }
        let stored = try base.size(of: fd)
        guard stored > 0 else { return 0 }
        guard let size = encryption.layout.plaintextSize(storedSize: stored) else {
            throw failure(.badStoredSize(stored), of: object.owner)
        }
        return size
    }

    /// Every block of an encrypted file is stored (no holes): the figure is what a fully
    /// allocated plaintext file of the same size takes in 4 KiB filesystem blocks, whatever
    /// the cipher's block size.
    static let allocationUnit = 4096

    public func allocatedBlocks(_ fd: Int32) throws(CacheError) -> Int64 {
        guard objects.object(of: fd) != nil else { return try base.allocatedBlocks(fd) }
        let blockSize = Int64(Self.allocationUnit)
        let size = try size(of: fd)
        return (size + blockSize - 1) / blockSize * (blockSize / 512)
    }

    /// Runs a change of `object`'s bytes holding its lock; a failure becomes the errno it
    /// answers, and damage is reported.
    @discardableResult
    private func change<T>(_ fd: Int32, _ object: EncryptedObject,
                           _ body: (inout ObjectSealing) throws(EncryptionError) -> T) throws(CacheError) -> T {
        do {
            return try object.withLock(body)
        } catch {
            throw failure(error, of: object.owner)
        }
    }

    private func failure(_ error: EncryptionError, of owner: EntryID) -> CacheError {
        switch error {
        case .tampered(let block): alarm.report(owner: owner, "block \(block) failed authentication")
        case .badFileHeader(let reason): alarm.report(owner: owner, reason)
        case .badStoredSize(let stored): alarm.report(owner: owner, "stored size \(stored) is torn or cut")
        default: break
        }
        return .io(error.errno)
    }

    // MARK: - Passed through

    public func fsync(_ fd: Int32, dataOnly: Bool) throws(CacheError) { try base.fsync(fd, dataOnly: dataOnly) }
    public func unlink(_ path: String) throws(CacheError) { try base.unlink(path) }
    public func rename(_ path: String, to newPath: String) throws(CacheError) { try base.rename(path, to: newPath) }
    public func mkdir(_ path: String, mode: mode_t) throws(CacheError) { try base.mkdir(path, mode: mode) }
    public func statvfs(_ path: String) throws(CacheError) -> Glibc.statvfs { try base.statvfs(path) }
    public func syncFilesystem(_ path: String) throws(CacheError) { try base.syncFilesystem(path) }
    public func write(_ fd: Int32, from buffer: UnsafeRawBufferPointer) throws(CacheError) -> Int {
        try base.write(fd, from: buffer)
    }
    public func lockExclusively(_ fd: Int32) throws(CacheError) { try base.lockExclusively(fd) }
    public func contentsOfDirectory(_ path: String) throws(CacheError) -> [String] {
        try base.contentsOfDirectory(path)
    }
    public func syncDirectory(_ path: String) throws(CacheError) { try base.syncDirectory(path) }
}
