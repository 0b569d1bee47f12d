import CacheModel

/// The descriptor one READ is answered from, and the blocks of a file held in blocks that the
/// answer covers, pinned (never dropped) until ``done()`` or the end of its life: a block
/// dropped before the reply's splice read it would be a hole, read as zeros. A READ with no
/// handle (`kernel_hits`) borrows a kept descriptor of the file's bytes, given back then too.
public struct PinnedRead: ~Copyable {
    public let descriptor: Int32
    private let blocks: BlockedFile?
    private let pinned: Range<Int>
    private let borrowed: BorrowedDescriptor?

    init(descriptor: Int32, blocks: BlockedFile?, pinned: Range<Int>, borrowed: BorrowedDescriptor? = nil) {
        self.descriptor = descriptor
        self.blocks = blocks
        self.pinned = pinned
        self.borrowed = borrowed
    }

    /// The answer was sent: its blocks may go.
    public consuming func done() {}

    deinit {
        blocks?.endRead(pinned)
        borrowed?.giveBack(descriptor)
    }
}

/// Where a borrowed descriptor goes back (``ObjectFiles/closeDescriptor(_:of:kept:)``).
struct BorrowedDescriptor {
    let bytes: ObjectFiles
    let entry: EntryID
    let kept: Bool

    func giveBack(_ fd: Int32) {
        bytes.closeDescriptor(fd, of: entry, kept: kept)
    }
}
