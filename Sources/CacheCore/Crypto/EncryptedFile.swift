import CacheModel

/// An encrypted byte file through an open descriptor, at the store's `Disk` seam. Reads
/// open only the blocks they touch; writes and truncates reseal the blocks a ``BlockPlan``
/// names, reading back the old plaintext of partly kept blocks. Durability (fsync) stays
/// the caller's, as for plain byte files. Not safe against concurrent writers of one file:
/// the engine already serializes writes to a file.
public struct EncryptedFile: Sendable {
    public let fd: Int32
    public let cipher: FileCipher
    private let disk: any Disk

    private var layout: BlockLayout { cipher.layout }

    /// The file at `fd`, whose header made `cipher` (read by ``open(fd:owner:encryption:disk:)``
    /// or written by ``create(fd:owner:encryption:disk:)`` earlier).
    init(fd: Int32, cipher: FileCipher, disk: any Disk) {
        self.fd = fd
        self.cipher = cipher
        self.disk = disk
    }

    /// Makes the file at `fd`, stored empty (0 bytes), a new, empty encrypted file of entry
    /// `owner`: a new header and the sealed empty last block. (Every new file passes here:
    /// an empty one needs no truncate after.)
    public static func create(fd: Int32, owner: EntryID, encryption: StoreEncryption,
                              disk: any Disk = PosixDisk()) throws(EncryptionError) -> EncryptedFile {
        let file = EncryptedFile(fd: fd, cipher: encryption.newFileCipher(owner: owner), disk: disk)
        let stored = try file.cipher.header.encoded + file.cipher.seal(block: 0, [], isLast: true)
        try file.writeFully(stored, at: 0)
        return file
    }

    /// The existing encrypted file of entry `owner`, its header read and checked against the
    /// store's.
    public static func open(fd: Int32, owner: EntryID, encryption: StoreEncryption,
                            disk: any Disk = PosixDisk()) throws(EncryptionError) -> EncryptedFile {
        let bytes = try readFully(disk, fd, 0..<Int64(FileHeader.byteCount))
        let header = try FileHeader(decoding: bytes)
        guard header.blockSize == encryption.layout.blockSize else {
            throw .badFileHeader(reason: "block size \(header.blockSize), the store's is \(encryption.layout.blockSize)")
        }
        return EncryptedFile(fd: fd, cipher: encryption.fileCipher(for: header, owner: owner), disk: disk)
    }

    /// The plaintext size, from the stored size.
    public func size() throws(EncryptionError) -> Int64 {
        let stored: Int64
        do {
            stored = try disk.size(of: fd)
        } catch {
            throw .from(error, "stat an encrypted file")
        }
        guard let size = layout.plaintextSize(storedSize: stored) else { throw .badStoredSize(stored) }
        return size
    }

    /// Up to `count` plaintext bytes at `offset` (fewer at the end of the file). A block that
    /// fails authentication fails the read with `.tampered(block:)`.
    public func read(at offset: Int64, count: Int) throws(EncryptionError) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        let filled = try result.withUnsafeMutableBytes { buffer in
            Result { () throws(EncryptionError) in try read(into: buffer, at: offset) }
        }.get()
        result.removeSubrange(filled...)
        return result
    }

    /// Fills `buffer` with the plaintext at `offset`, opening only the blocks it touches;
    /// returns the bytes read (fewer at the end of the file).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(EncryptionError) -> Int {
        precondition(offset >= 0)
        let size = try size()
        guard offset < size, !buffer.isEmpty else { return 0 }
        let length = Int(min(Int64(buffer.count), size - offset))
        let blocks = layout.blocks(touchingOffset: offset, length: length)
        let range = layout.storedRange(ofBlocks: blocks, plaintextSize: size)
        let last = layout.lastBlock(plaintextSize: size)
        return try withStoredBytesReadOnce(range) { stored throws(EncryptionError) in
            var filled = 0
            for index in blocks {
                let start = Int(layout.storedOffset(ofBlock: index) - range.lowerBound)
                let end = start + BlockLayout.overhead + layout.plaintextLength(ofBlock: index, plaintextSize: size)
                let plaintext = try cipher.openData(block: index, UnsafeRawBufferPointer(rebasing: stored[start..<end]),
                                                    isLast: index == last)
                let blockStart = index * Int64(layout.blockSize)
                let from = Int(max(offset, blockStart) - blockStart)
                let to = Int(min(offset + Int64(length), blockStart + Int64(plaintext.count)) - blockStart)
                plaintext.withUnsafeBytes { block in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<filled + to - from])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: block[from..<to]))
                }
                filled += to - from
            }
            return filled
        }
    }

    /// Calls `body` with the stored bytes `range`, read past the page cache where they are not
    /// in it: a read's ciphertext is opened once, and the mount's page cache keeps the
    /// plaintext. Read into a buffer aligned for direct I/O, from the aligned offset before.
    private func withStoredBytesReadOnce<T>(_ range: Range<Int64>,
                                            _ body: (UnsafeRawBufferPointer) throws(EncryptionError) -> T)
        throws(EncryptionError) -> T
    {
        let alignment = Int64(PosixDisk.directIOAlignment)
        let start = range.lowerBound / alignment * alignment
        let end = (range.upperBound + alignment - 1) / alignment * alignment
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(end - start), alignment: Int(alignment))
        defer { buffer.deallocate() }
        let needed = Int(range.upperBound - start)
        let read: Int
        do {
            read = try disk.preadPastCache(fd, into: buffer, at: start, needing: needed)
        } catch {
            throw .from(error, "read an encrypted file")
        }
        // The file ended early: it changed size under us, or was cut.
        guard read >= needed else { throw .badStoredSize(start + Int64(read)) }
        return try body(UnsafeRawBufferPointer(rebasing: buffer[Int(range.lowerBound - start)..<needed]))
    }

    public func write(_ bytes: [UInt8], at offset: Int64) throws(EncryptionError) {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(EncryptionError) in try write(buffer, at: offset) }
        }.get()
    }

    /// Writes `bytes` at `offset`, growing the file (with sealed zeros in any gap) if needed.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(EncryptionError) {
        precondition(offset >= 0)
        guard !bytes.isEmpty else { return }
        try apply(BlockPlan(layout: layout, writingAt: offset, length: bytes.count, plaintextSize: size()), data: bytes)
    }

    /// Shrinks the file, or grows it with sealed zeros.
    public func truncate(to newSize: Int64) throws(EncryptionError) {
        precondition(newSize >= 0)
        try apply(BlockPlan(layout: layout, truncating: size(), to: newSize), data: nil)
    }

    /// Every block that fails authentication (for `verify --deep`), each read on its own.
    /// With `lastOnly`, only the last block, the cheap check: a file cut or grown by whole
    /// blocks, or torn mid-append, ends in a block that was not sealed as the last.
    public func damagedBlocks(lastOnly: Bool = false) throws(EncryptionError) -> [Int64] {
        let size = try size()
        let last = layout.lastBlock(plaintextSize: size)
        var damaged: [Int64] = []
        for index in (lastOnly ? last : 0)...last {
            let stored = try Self.readFully(disk, fd, layout.storedRange(ofBlocks: index..<index + 1, plaintextSize: size))
            do {
                _ = try cipher.open(block: index, stored, isLast: index == last)
            } catch {
                damaged.append(index)
            }
        }
        return damaged
    }

    // MARK: - Applying a plan

    private func apply(_ plan: BlockPlan, data: UnsafeRawBufferPointer?) throws(EncryptionError) {
        var batch: [UInt8] = []
        batch.reserveCapacity(Tunables.sealedRunBytes + layout.storedBlockSize)
        var batchOffset = layout.storedOffset(ofBlock: plan.startIndex)
        var nonces = RandomNonces(expected: plan.count)
        for change in plan {
            if let data, change.keptLength == 0, change.written == 0..<change.newLength {
                // A whole block of new bytes (most of a large write): sealed straight from them.
                let source = Int(change.index * Int64(layout.blockSize) - plan.written.lowerBound)
                try cipher.seal(block: change.index, UnsafeRawBufferPointer(rebasing: data[source..<source + change.newLength]),
                                isLast: change.isLast, nonces: &nonces, appendingTo: &batch)
            } else {
                try sealMerged(change, plan: plan, data: data, nonces: &nonces, into: &batch)
            }
            if batch.count >= Tunables.sealedRunBytes {
                try writeFully(batch, at: batchOffset)
                batchOffset += Int64(batch.count)
                batch.removeAll(keepingCapacity: true)
            }
        }
        try writeFully(batch, at: batchOffset)
        if plan.newSize < plan.oldSize {
            do {
                try disk.ftruncate(fd, length: layout.storedSize(plaintextSize: plan.newSize))
            } catch {
                throw .from(error, "truncate an encrypted file")
            }
        }
    }

    /// A block whose new content mixes kept bytes, new bytes and zeros.
    private func sealMerged(_ change: BlockPlan.Element, plan: BlockPlan, data: UnsafeRawBufferPointer?,
                            nonces: inout RandomNonces, into batch: inout [UInt8]) throws(EncryptionError) {
        var plaintext = [UInt8](repeating: 0, count: change.newLength)
        if change.keptLength > 0 {
            let old = try readBlock(change.index, plaintextSize: plan.oldSize, isLast: change.wasLast)
            plaintext.replaceSubrange(0..<change.keptLength, with: old[0..<change.keptLength])
        }
        if let data, !change.written.isEmpty {
            let source = Int(change.index * Int64(layout.blockSize) - plan.written.lowerBound) + change.written.lowerBound
            plaintext.replaceSubrange(change.written, with: data[source..<source + change.written.count])
        }
        try plaintext.withUnsafeBytes { bytes in
            Result { () throws(EncryptionError) in
                try cipher.seal(block: change.index, bytes, isLast: change.isLast, nonces: &nonces, appendingTo: &batch)
            }
        }.get()
    }

    private func readBlock(_ index: Int64, plaintextSize: Int64, isLast: Bool) throws(EncryptionError) -> [UInt8] {
        let range = layout.storedRange(ofBlocks: index..<index + 1, plaintextSize: plaintextSize)
        return try cipher.open(block: index, Self.readFully(disk, fd, range), isLast: isLast)
    }

    // MARK: - Whole reads and writes

    private static func readFully(_ disk: any Disk, _ fd: Int32, _ range: Range<Int64>) throws(EncryptionError) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try disk.preadFully(fd, count: Int(range.count), at: range.lowerBound)
        } catch {
            throw .from(error, "read an encrypted file")
        }
        // The file ended early: it changed size under us, or was cut.
        guard bytes.count == range.count else { throw .badStoredSize(range.lowerBound + Int64(bytes.count)) }
        return bytes
    }

    private func writeFully(_ bytes: [UInt8], at offset: Int64) throws(EncryptionError) {
        do {
            try disk.pwriteFully(fd, from: bytes, at: offset)
        } catch {
            throw .from(error, "write an encrypted file")
        }
    }
}
