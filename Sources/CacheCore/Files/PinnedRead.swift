/// The descriptor one READ is answered from, and the blocks of a file held in blocks that the
/// answer covers, pinned (never dropped) until ``done()`` or the end of its life: a block
/// dropped before the reply's splice read it would be a hole, read as zeros.
public struct PinnedRead: ~Copyable {
    public let descriptor: Int32
    private let blocks: BlockedFile?
    private let pinned: Range<Int>

    init(descriptor: Int32, blocks: BlockedFile?, pinned: Range<Int>) {
        self.descriptor = descriptor
        self.blocks = blocks
        self.pinned = pinned
    }

    /// The answer was sent: its blocks may go.
    public consuming func done() {}

    deinit {
        blocks?.endRead(pinned)
    }
}
