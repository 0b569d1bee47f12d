/// Where an encrypted file's bytes are: a 32-byte header, then blocks of `blockSize`
/// plaintext bytes, each stored as nonce (12) + ciphertext + tag (16). Every block but the
/// last is full; the last holds 1…blockSize bytes, or 0 in an empty file. A file always has
/// a last block, so cutting a file down to its header is detected like any other truncation.
/// Pure arithmetic on plaintext and stored offsets; no I/O.
public struct BlockLayout: Sendable, Equatable {
    public let blockSize: Int

    /// 16 KiB for new stores (older ones keep the size their key file names): sealing and
    /// opening cost about half the CPU per MiB of 4 KiB blocks here, most of a block's cost
    /// being swift-crypto's fixed cost per call (`cachefs cipher-speed`, see docs/encryption.md).
    public static let defaultBlockSize = 16384
    public static let headerSize = FileHeader.byteCount
    public static let nonceSize = 12
    public static let tagSize = 16
    public static let overhead = nonceSize + tagSize

    public static func isValid(blockSize: Int) -> Bool {
        (512...(1 << 20)).contains(blockSize) && blockSize.nonzeroBitCount == 1
    }

    public init(blockSize: Int = defaultBlockSize) {
        precondition(Self.isValid(blockSize: blockSize), "block size \(blockSize): a power of two from 512 to 1 MiB")
        self.blockSize = blockSize
    }

    public var storedBlockSize: Int { blockSize + Self.overhead }

    /// The last block's index; an empty file has block 0, empty.
    public func lastBlock(plaintextSize: Int64) -> Int64 {
        plaintextSize == 0 ? 0 : (plaintextSize - 1) / Int64(blockSize)
    }

    public func blockCount(plaintextSize: Int64) -> Int64 { lastBlock(plaintextSize: plaintextSize) + 1 }

    /// Plaintext bytes in block `index` of a file of `plaintextSize` (0 past its end).
    public func plaintextLength(ofBlock index: Int64, plaintextSize: Int64) -> Int {
        let last = lastBlock(plaintextSize: plaintextSize)
        if index > last { return 0 }
        return index < last ? blockSize : Int(plaintextSize - last * Int64(blockSize))
    }

    public func storedOffset(ofBlock index: Int64) -> Int64 {
        Int64(Self.headerSize) + index * Int64(storedBlockSize)
    }

    public func storedSize(plaintextSize: Int64) -> Int64 {
        Int64(Self.headerSize) + blockCount(plaintextSize: plaintextSize) * Int64(Self.overhead) + plaintextSize
    }

    /// The plaintext size of a stored file; nil for a stored size no file has (torn, or cut
    /// or grown by something other than whole blocks).
    public func plaintextSize(storedSize: Int64) -> Int64? {
        let body = storedSize - Int64(Self.headerSize)
        guard body >= Int64(Self.overhead) else { return nil }
        let stored = Int64(storedBlockSize)
        let count = (body + stored - 1) / stored
        let lastStored = body - (count - 1) * stored
        // Only a lone last block may be empty.
        guard lastStored > Int64(Self.overhead) || count == 1 else { return nil }
        return body - count * Int64(Self.overhead)
    }

    /// The blocks holding plaintext bytes `offset..<offset+length` (empty for no bytes).
    public func blocks(touchingOffset offset: Int64, length: Int) -> Range<Int64> {
        guard length > 0 else { return offset / Int64(blockSize) ..< offset / Int64(blockSize) }
        return offset / Int64(blockSize) ..< (offset + Int64(length) - 1) / Int64(blockSize) + 1
    }

    /// The stored bytes of `blocks` in a file of `plaintextSize` (one contiguous run).
    public func storedRange(ofBlocks blocks: Range<Int64>, plaintextSize: Int64) -> Range<Int64> {
        guard let last = blocks.last else { return storedOffset(ofBlock: blocks.lowerBound) ..< storedOffset(ofBlock: blocks.lowerBound) }
        let end = storedOffset(ofBlock: last) + Int64(Self.overhead + plaintextLength(ofBlock: last, plaintextSize: plaintextSize))
        return storedOffset(ofBlock: blocks.lowerBound) ..< end
    }
}
