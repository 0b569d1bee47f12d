@testable import CacheCore
import Foundation
import Glibc
import Testing

/// Reads past the page cache return the file's bytes, cached or not, up to its end.
@Suite struct PreadPastCacheTests {
    private let alignment = PosixDisk.directIOAlignment

    private func read(_ fd: Int32, pages: Int, at offset: Int64, needing needed: Int) throws -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pages * alignment, alignment: alignment)
        defer { buffer.deallocate() }
        let count = try PosixDisk().preadPastCache(fd, into: buffer, at: offset, needing: needed)
        return Array(buffer[0..<count])
    }

    @Test func cachedAndUncachedReadsReturnTheSameBytes() throws {
        let directory = try ScratchDirectory()
        var generator = SplitMix(seed: 7)
        let content = (0..<(3 * alignment + 100)).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        try directory.write(content, to: "f")
        let fd = open(directory.file("f"), O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        for dropped in [false, true] {
            if dropped {
                // Out of the page cache (where the filesystem allows), so the direct path runs.
                #expect(fsync(fd) == 0)
                #expect(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
            }
            #expect(try read(fd, pages: 4, at: 0, needing: content.count) == content)
            #expect(try read(fd, pages: 1, at: Int64(alignment), needing: alignment)
                    == Array(content[alignment..<2 * alignment]))
            #expect(try read(fd, pages: 2, at: Int64(3 * alignment), needing: 100) == Array(content[(3 * alignment)...]))
        }
    }
}
