@testable import CacheCore
import CacheModel
import CLinux
import Glibc
import Testing

/// The inode writers of `kernel_hits` (``KernelWriters``) and the parsing of the kernel's
/// close events (``KernelCloseEvents/parse(_:)``).
@Suite struct KernelWritersTests {
    @Test func aWriterEndedWhileARequestUsesItIsReleasedByThatRequest() {
        let writers = KernelWriters()
        #expect(writers.add(7, for: 10) == nil)
        // A second request takes the same writer.
        #expect(writers.take(10) == 7)
        // The close event ends it while both use it: nobody may release it yet.
        #expect(writers.end(10) == nil)
        #expect(writers.take(10) == nil, "an ended writer is not handed out again")
        #expect(writers.done(7, of: 10) == false)
        #expect(writers.done(7, of: 10) == true, "the last user releases it")
        #expect(writers.count == 0)
    }

    @Test func anUnusedWriterEndsAtOnceAndARacingAddKeepsTheFirst() {
        let writers = KernelWriters()
        #expect(writers.add(7, for: 10) == nil)
        #expect(writers.add(8, for: 10) == 7, "the second request uses the first writer")
        #expect(writers.done(7, of: 10) == false)
        #expect(writers.done(7, of: 10) == false)
        #expect(writers.end(10) == 7)
        #expect(writers.end(10) == nil)
    }

    @Test func atUnmountEveryWriterEnds() {
        let writers = KernelWriters()
        _ = writers.add(7, for: 10)
        _ = writers.add(8, for: 11)
        _ = writers.end(11)
        #expect(Set(writers.endAll()) == [7, 8])
        #expect(writers.count == 0)
    }

    /// Records as the kernel writes them: a reader's close, a writer's close, an overflow
    /// (no descriptor), each with a descriptor the parser closes.
    @Test func closeEventsAreSortedIntoReadersAndWriters() throws {
        var bytes: [UInt8] = []
        var opened: [Int32] = []
        func record(mask: UInt64, fd: Int32) {
            var event: [UInt8] = []
            withUnsafeBytes(of: UInt32(24)) { event += $0 }
            event += [3, 0]
            withUnsafeBytes(of: UInt16(24)) { event += $0 }
            withUnsafeBytes(of: mask) { event += $0 }
            withUnsafeBytes(of: fd) { event += $0 }
            withUnsafeBytes(of: Int32(1234)) { event += $0 }
            bytes += event
        }
        for _ in 0..<2 { opened.append(open("/", O_RDONLY)) }
        record(mask: UInt64(FAN_CLOSE_NOWRITE), fd: opened[0])
        record(mask: UInt64(FAN_CLOSE_WRITE), fd: opened[1])
        record(mask: UInt64(FAN_Q_OVERFLOW), fd: -1)
        let batch = bytes.withUnsafeBytes { KernelCloseEvents.parse($0) }
        let rootInode = EntryID(cachefs_cached_inode_number(opened[0]))
        #expect(rootInode == -1, "the parser closed the descriptor")
        var info = stat()
        #expect(stat("/", &info) == 0)
        #expect(batch.readers == [EntryID(info.st_ino)])
        #expect(batch.writers == [EntryID(info.st_ino)])
        #expect(batch.overflowed)
    }
}
