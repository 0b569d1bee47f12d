@testable import CacheCore
import CacheModel
import CLinux
import Foundation
import Glibc
import Testing

/// The inode writers of `kernel_hits` (``KernelWriters``) and the parsing of the kernel's
/// close events (``KernelCloseEvents``).
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

    /// A real inotify instance on a folder of the local disk: each read is a hit (two reads
    /// of one file in a row are two, not merged), each write's close names its writer, each
    /// open is listed, and a queue overflow is reported.
    @Test func closeEventsNameEveryReaderAndWriterInOrder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kh-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let events = try KernelCloseEvents(mountpoint: folder)
        try events.watch(1, path: [])
        try events.watch(7, path: Array("sub".utf8))
        let watching = (events.isWatching(7), events.isWatching(8))
        #expect(watching == (true, false))
        try Data("a".utf8).write(to: URL(fileURLWithPath: folder + "/sub/b"))
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder + "/a"))
        for _ in 0..<2 { _ = try Data(contentsOf: URL(fileURLWithPath: folder + "/a")) }
        var batches: [KernelCloseEvents.Batch] = []
        events.drainPending { batches.append($0) }
        let readers = batches.flatMap(\.readers), writers = batches.flatMap(\.writers)
        let a = KernelCloseEvents.NamedFile(directory: 1, name: Array("a".utf8))
        let b = KernelCloseEvents.NamedFile(directory: 7, name: Array("b".utf8))
        #expect(readers == [a, a])
        #expect(writers == [b, a])
        #expect(batches.flatMap(\.opened) == [b, a, a, a])
        let overflowed = batches.contains { $0.overflowed }
        #expect(!overflowed)
        let overflow = events.batch(of: [.init(watch: -1, mask: UInt32(IN_Q_OVERFLOW), name: [])])
        #expect(overflow.overflowed && overflow.readers.isEmpty)
    }

    /// Opens and closes read in one batch net out in any order; a file left with no open
    /// descriptor is reported once; FORGET and an overflow drop what is left.
    @Test func openCountsNetEachBatchAndReportFilesLeftClosed() {
        let counts = KernelOpenCounts()
        #expect(counts.apply(opened: [], closed: [4]) == [4])
        #expect(!counts.isOpen(4))
        #expect(counts.apply(opened: [5, 6, 5], closed: [5]).isEmpty)
        #expect(counts.isOpen(5) && counts.isOpen(6))
        #expect(counts.apply(opened: [], closed: [5]) == [5])
        #expect(!counts.isOpen(5) && counts.isOpen(6))
        #expect(counts.apply(opened: [7], closed: [7]).isEmpty)
        #expect(!counts.isOpen(7))
        counts.forget(6)
        #expect(counts.isEmpty)
        _ = counts.apply(opened: [8], closed: [])
        counts.removeAll()
        #expect(!counts.isOpen(8))
    }
}
