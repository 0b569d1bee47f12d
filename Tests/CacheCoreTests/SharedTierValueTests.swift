@testable import CacheCore
import CacheModel
import Testing

/// The shared tier's value format and key names, without a server: what another machine's
/// value must be to be served, and keys that keep every name's bytes apart.
@Suite struct SharedTierValueTests {
    @Test(arguments: [0, 1, 16 * 1024, 1_000_003])
    func aValueRoundTrips(size: Int) throws {
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let value = SharedTierValue.encode(content)
        #expect(value.count == SharedTierValue.headerSize + size)
        #expect(Array(value.prefix(6)) == Array("CFST1".utf8) + [1])
        #expect(try SharedTierValue.decode(value).get() == content)
    }

    @Test func aTruncatedValueIsRefused() {
        let value = SharedTierValue.encode(Array(repeating: 7, count: 1000))
        for cut in [0, 10, SharedTierValue.headerSize - 1, SharedTierValue.headerSize, value.count - 1] {
            guard case .failure = SharedTierValue.decode(Array(value.prefix(cut))) else {
                Issue.record("a value cut to \(cut) bytes was accepted")
                continue
            }
        }
        // Longer than the header says: refused too (a value that is not one file).
        guard case .failure = SharedTierValue.decode(value + [0]) else {
            Issue.record("a value with a byte appended was accepted")
            return
        }
    }

    @Test func aChangedByteOrDigestIsRefused() {
        let value = SharedTierValue.encode(Array("hello, shared tier".utf8))
        var changedContent = value
        changedContent[changedContent.count - 1] ^= 1
        var changedDigest = value
        changedDigest[SharedTierValue.headerSize - 1] ^= 0x80
        var otherVersion = value
        otherVersion[5] = 2
        for (what, bad) in [("content", changedContent), ("digest", changedDigest), ("version", otherVersion)] {
            guard case .failure(let reason) = SharedTierValue.decode(bad) else {
                Issue.record("a changed \(what) was accepted")
                continue
            }
            #expect(!reason.description.isEmpty)
        }
        guard case .failure = SharedTierValue.decode(Array("plain text someone SET".utf8)) else {
            Issue.record("a value without the header was accepted")
            return
        }
    }

    @Test func keysNameThePoolAndThePathByteForByte() {
        #expect(SharedTierKey.key(pool: Array("thumbnails".utf8), path: [Array("a".utf8), Array("b.jpg".utf8)])
            == Array("cachefs:1:thumbnails/a/b.jpg".utf8))
        // Spaces, newlines and bytes that are not UTF-8 stay as they are.
        let odd: [UInt8] = Array("two words\nline".utf8) + [0xFF, 0xFE]
        #expect(SharedTierKey.key(pool: Array("p".utf8), path: [odd]) == Array("cachefs:1:p/".utf8) + odd)
        // Another pool, or the same names in another directory, is another key.
        let keys: Set<[UInt8]> = [
            SharedTierKey.key(pool: Array("p".utf8), path: [Array("a".utf8), Array("b".utf8)]),
            SharedTierKey.key(pool: Array("q".utf8), path: [Array("a".utf8), Array("b".utf8)]),
            SharedTierKey.key(pool: Array("p".utf8), path: [Array("b".utf8), Array("a".utf8)]),
            SharedTierKey.key(pool: Array("p".utf8), path: [Array("ab".utf8)]),
        ]
        #expect(keys.count == 4)
    }

    @Test func settingsAcceptRedisURLsWithoutPasswordsOnly() throws {
        let location = try SharedTierURL.parse("redis://cache@127.0.0.1:6390/2").get()
        guard case .redis(let url) = location else {
            Issue.record("\(location) is not a Redis server")
            return
        }
        #expect(url.host == "127.0.0.1" && url.port == 6390 && url.database == 2 && url.username == "cache")
        for (text, says) in [("redis://:secret@127.0.0.1:6379/0", "shared_password_file"),
                             ("redis://user:secret@127.0.0.1:6379/0", "shared_password_file"),
                             ("rediss://127.0.0.1:6379/0", "not supported"),
                             ("redis+cluster://127.0.0.1:7000,127.0.0.1:7001", "not supported"),
                             ("http://example.com/", "redis://")] {
            guard case .failure(let reason) = SharedTierURL.parse(text) else {
                Issue.record("\(text) was accepted")
                continue
            }
            #expect(reason.description.contains(says), "\(text): \(reason)")
            #expect(!reason.description.contains("secret"), "\(text): \(reason)")
        }
        // What the log shows of a refused value.
        #expect(SharedTierURL.withoutCredentials("redis://user:secret@h:1/0") == "redis://***@h:1/0")
        #expect(SharedTierURL.withoutCredentials("redis://h:1/0") == "redis://h:1/0")
    }
}

/// The write-behind queue: bounded (the newest is refused when full), a file counts as
/// waiting until its write ends, and a stopped queue takes nothing.
@Suite struct SharedTierQueueTests {
    @Test func aFullQueueRefusesTheNewestAndCountsUntilWritten() {
        let queue = SharedTierQueue(limit: 2)
        let pool = EntryID(7)
        #expect(queue.add(.init(pool: pool, id: 1)) == .added)
        #expect(queue.add(.init(pool: pool, id: 2)) == .added)
        #expect(queue.add(.init(pool: pool, id: 3)) == .full)
        #expect(queue.waiting(inPool: pool) == 2)
        let first = queue.next()
        #expect(first == .init(pool: pool, id: 1))
        // Taken but not written yet: still waiting; room for one more.
        #expect(queue.waiting(inPool: pool) == 2)
        #expect(queue.add(.init(pool: pool, id: 3)) == .added)
        if let first { queue.finished(first) }
        #expect(queue.waiting(inPool: pool) == 2)
        #expect(queue.waiting(inPool: EntryID(8)) == 0)
        queue.stop()
        #expect(queue.next() == nil)
        #expect(queue.add(.init(pool: pool, id: 4)) == .stopped)
        #expect(queue.waiting(inPool: pool) == 0)
    }
}
