/// One block a write or truncate changes: which of its old plaintext bytes to keep (read and
/// open the old block with `wasLast`), its new length and last-flag, and which of its bytes
/// the caller's data fills. Bytes kept or written nowhere are zeros.
public struct BlockChange: Equatable, Sendable {
    public var index: Int64
    /// Old plaintext bytes `0..<keptLength` to keep; 0 when none are needed (nothing to read).
    public var keptLength: Int
    public var wasLast: Bool
    public var newLength: Int
    public var isLast: Bool
    /// The bytes of this block the caller's data fills (empty when none).
    public var written: Range<Int>
}

/// The blocks a write or truncate must (re)seal, in order, computed one at a time so a
/// large grow costs no memory. Every changed block is sealed again with a fresh nonce.
/// Growing past the old last block also reseals that block, with `isLast` false and its
/// tail zero-filled, and fills any gap with sealed zeros: ciphertext has no holes, so a
/// zeroed stored block is tampering, never a hole.
public struct BlockPlan: RandomAccessCollection, Sendable {
    public let layout: BlockLayout
    public let oldSize: Int64
    public let newSize: Int64
    /// The plaintext bytes the caller's data fills.
    public let written: Range<Int64>
    public let blocks: Range<Int64>

    public var startIndex: Int64 { blocks.lowerBound }
    public var endIndex: Int64 { blocks.upperBound }

    /// A write of `length` bytes at `offset` into a file of `plaintextSize`.
    public init(layout: BlockLayout, writingAt offset: Int64, length: Int, plaintextSize: Int64) {
        let end = offset + Int64(length)
        let newSize = length > 0 ? Swift.max(plaintextSize, end) : plaintextSize
        let touched = layout.blocks(touchingOffset: offset, length: length)
        let first = Self.firstChanged(layout, touched.lowerBound, oldSize: plaintextSize, newSize: newSize)
        self.init(layout: layout, oldSize: plaintextSize, newSize: newSize, written: offset..<Swift.max(offset, end),
                  blocks: length > 0 ? first..<touched.upperBound : touched)
    }

    /// A truncate of a file of `plaintextSize` to `newSize`. A shrink reseals the new last
    /// block (after it the caller cuts the stored file to `storedSize(newSize)`); a grow
    /// writes zeros from the old end.
    public init(layout: BlockLayout, truncating plaintextSize: Int64, to newSize: Int64) {
        let last = layout.lastBlock(plaintextSize: newSize)
        let blocks: Range<Int64> = switch newSize {
        case plaintextSize: last..<last
        case ..<plaintextSize: last..<last + 1
        default: layout.lastBlock(plaintextSize: plaintextSize)..<last + 1
        }
        self.init(layout: layout, oldSize: plaintextSize, newSize: newSize, written: newSize..<newSize, blocks: blocks)
    }

    private init(layout: BlockLayout, oldSize: Int64, newSize: Int64, written: Range<Int64>, blocks: Range<Int64>) {
        self.layout = layout
        self.oldSize = oldSize
        self.newSize = newSize
        self.written = written
        self.blocks = blocks
    }

    /// A write that moves the end past the old last block changes that block too.
    private static func firstChanged(_ layout: BlockLayout, _ firstWritten: Int64, oldSize: Int64, newSize: Int64) -> Int64 {
        let oldLast = layout.lastBlock(plaintextSize: oldSize)
        return layout.lastBlock(plaintextSize: newSize) > oldLast ? Swift.min(firstWritten, oldLast) : firstWritten
    }

    public subscript(index: Int64) -> BlockChange {
        let oldLength = layout.plaintextLength(ofBlock: index, plaintextSize: oldSize)
        let newLength = layout.plaintextLength(ofBlock: index, plaintextSize: newSize)
        let start = index * Int64(layout.blockSize)
        let from = Swift.max(written.lowerBound, start) - start
        let to = Swift.min(written.upperBound, start + Int64(newLength)) - start
        let filled = from < to ? Int(from)..<Int(to) : 0..<0
        var kept = Swift.min(oldLength, newLength)
        if filled.lowerBound == 0 && filled.upperBound >= kept { kept = 0 }
        return BlockChange(index: index, keptLength: kept, wasLast: index == layout.lastBlock(plaintextSize: oldSize),
                           newLength: newLength, isLast: index == layout.lastBlock(plaintextSize: newSize), written: filled)
    }
}
