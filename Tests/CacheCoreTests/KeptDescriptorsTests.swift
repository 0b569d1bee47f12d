@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// Read-only descriptors shared by a file's readers and kept between hits: one `open(2)` for
/// many opens, a bounded number kept unused, and none outliving its bytes.
@Suite struct KeptDescriptorsTests {
    private static func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) != -1 }

    /// Opens /dev/null, counting the calls: a stand-in for a stored file's bytes.
    private final class Opener: @unchecked Sendable {
        var opens = 0
        func open() throws(CacheError) -> Int32 {
            opens += 1
            let fd = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw CacheError.io(errno) }
            return fd
        }
    }

    @Test func readersOfAFileShareOneDescriptorThatStaysOpenAfterTheLastClose() throws {
        let kept = KeptDescriptors(capacity: 4, disk: PosixDisk())
        defer { kept.closeAll() }
        let opener = Opener()
        let first = try kept.acquire(7) { () throws(CacheError) in try opener.open() }
        let second = try kept.acquire(7) { () throws(CacheError) in try opener.open() }
        #expect(first.kept && second.kept && first.fd == second.fd && opener.opens == 1)
        kept.release(7, fd: first.fd, kept: true)
        kept.release(7, fd: second.fd, kept: true)
        #expect(Self.isOpen(first.fd), "kept after the last close")
        let again = try kept.acquire(7) { () throws(CacheError) in try opener.open() }
        #expect(again.fd == first.fd && opener.opens == 1, "the next hit opens nothing")
        kept.release(7, fd: again.fd, kept: true)
    }

    @Test func atMostCapacityWaitUnusedAndTheLongestUnusedCloses() throws {
        let kept = KeptDescriptors(capacity: 2, disk: PosixDisk())
        defer { kept.closeAll() }
        let opener = Opener()
        var fds: [EntryID: Int32] = [:]
        for id: EntryID in [1, 2, 3] {
            let got = try kept.acquire(id) { () throws(CacheError) in try opener.open() }
            fds[id] = got.fd
        }
        // 2 is used again before it falls unused: 1 is then the longest unused.
        kept.release(2, fd: fds[2]!, kept: true)
        let reused = try kept.acquire(2) { () throws(CacheError) in try opener.open() }
        kept.release(1, fd: fds[1]!, kept: true)
        kept.release(2, fd: reused.fd, kept: true)
        kept.release(3, fd: fds[3]!, kept: true)
        #expect(kept.count == 2)
        #expect(!Self.isOpen(fds[1]!), "the longest unused is closed")
        #expect(Self.isOpen(fds[2]!) && Self.isOpen(fds[3]!))
    }

    @Test func aDroppedDescriptorClosesAtItsLastReleaseAndIsNeverHandedOutAgain() throws {
        let kept = KeptDescriptors(capacity: 4, disk: PosixDisk())
        defer { kept.closeAll() }
        let opener = Opener()
        let reading = try kept.acquire(9) { () throws(CacheError) in try opener.open() }
        kept.drop([9])
        #expect(Self.isOpen(reading.fd), "a reader's descriptor stays valid while it reads")
        let later = try kept.acquire(9) { () throws(CacheError) in try opener.open() }
        #expect(!later.kept && later.fd != reading.fd, "bytes being dropped are not shared again")
        kept.release(9, fd: later.fd, kept: later.kept)
        kept.release(9, fd: reading.fd, kept: true)
        #expect(!Self.isOpen(reading.fd) && !Self.isOpen(later.fd))
        #expect(kept.count == 0)

        let unused = try kept.acquire(10) { () throws(CacheError) in try opener.open() }
        kept.release(10, fd: unused.fd, kept: true)
        kept.drop([10])
        #expect(!Self.isOpen(unused.fd), "an unused descriptor closes at once")
    }

    /// An open that meets the descriptor limit (EMFILE) closes the unused kept descriptors
    /// and succeeds on its second try.
    @Test func anOpenOutOfDescriptorsClosesTheUnusedKeptOnesAndTriesAgain() throws {
        let store = try TestStore()
        let disk = FaultyDisk()
        let engine = try store.open(disk: disk)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let kept = try engine.writeFile("kept", in: data, content: Array("k".utf8))
        let next = try engine.writeFile("next", in: data, content: Array("n".utf8))
        #expect(try engine.readAll(kept) == Array("k".utf8))
        #expect(engine.bytes.kept.count == 1)
        disk.failNextOpens.withLock { $0[engine.layout.objectPath(for: next)] = EMFILE }
        #expect(try engine.readAll(next) == Array("n".utf8))
        #expect(engine.bytes.kept.count == 1, "the unused one closed; the new one is kept")
        #expect(disk.failNextOpens.withLock { $0.isEmpty }, "the first try met EMFILE")
    }

    @Test func withNoCapacityEveryDescriptorIsPrivate() throws {
        let kept = KeptDescriptors(capacity: 0, disk: PosixDisk())
        let opener = Opener()
        let got = try kept.acquire(3) { () throws(CacheError) in try opener.open() }
        #expect(!got.kept)
        kept.release(3, fd: got.fd, kept: got.kept)
        #expect(!Self.isOpen(got.fd))
    }
}
