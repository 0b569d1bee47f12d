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

    @Test func originPoolsKeysNameTheOriginAndTheVersion() throws {
        let exec = try #require(SharedTierKey.originSuffix(origin: "exec:/usr/bin/thumbs", version: nil, versions: .onePerName))
        #expect(exec.first == 0 && exec.count == 1 + "origin=".count + 16)
        // Another origin for the pool: another key.
        #expect(SharedTierKey.originSuffix(origin: "exec:/usr/bin/other", version: nil, versions: .onePerName) != exec)
        let http = "http://origin.example/"
        let v1 = OriginDelivery(bytes: 10, etag: "\"abc\"", lastModified: "Mon, 30 Nov 2026 04:00:00 GMT")
        let v2 = OriginDelivery(bytes: 10, etag: "\"abd\"", lastModified: "Mon, 30 Nov 2026 04:00:00 GMT")
        let one = try #require(SharedTierKey.originSuffix(origin: http, version: v1, versions: .askedOfTheOrigin))
        let etagPart: [UInt8] = [0] + Array("etag=\"abc\"".utf8)
        #expect(one.starts(with: [0] + Array("origin=".utf8)) && Array(one.suffix(etagPart.count)) == etagPart)
        #expect(SharedTierKey.originSuffix(origin: http, version: v2, versions: .askedOfTheOrigin) != one)
        // A weak ETag names the same bytes as its strong form.
        var weak = v1
        weak.etag = "W/\"abc\""
        #expect(SharedTierKey.originSuffix(origin: http, version: weak, versions: .askedOfTheOrigin) == one)
        // Without an ETag, the date; without either, nothing tells versions apart: not shared.
        let dated = OriginDelivery(bytes: 10, lastModified: "Mon, 30 Nov 2026 04:00:00 GMT")
        let datePart: [UInt8] = [0] + Array("modified=Mon, 30 Nov 2026 04:00:00 GMT".utf8)
        let byDate = try #require(SharedTierKey.originSuffix(origin: http, version: dated, versions: .askedOfTheOrigin))
        #expect(Array(byDate.suffix(datePart.count)) == datePart)
        #expect(SharedTierKey.originSuffix(origin: http, version: OriginDelivery(bytes: 10), versions: .askedOfTheOrigin) == nil)
        #expect(SharedTierKey.originSuffix(origin: http, version: nil, versions: .askedOfTheOrigin) == nil)
        #expect(SharedTierKey.originSuffix(origin: "file:///srv", version: v1, versions: .notShared) == nil)
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
                             ("rediss://:secret@127.0.0.1:6379/0", "shared_password_file"),
                             ("redis+cluster://u:secret@127.0.0.1:7000,127.0.0.1:7001/", "shared_password_file"),
                             ("redis+cluster://127.0.0.1:7000/3", "database 0 only"),
                             ("redis+cluster:///", "at least one seed"),
                             ("redis+cluster://127.0.0.1:7000,,127.0.0.1:7001/", "empty entry"),
                             ("redis+cluster://127.0.0.1:99999/", "port"),
                             ("s3://bucket/prefix/", "not supported"), ("http://example.com/", "redis://")] {
            guard case .failure(let reason) = SharedTierURL.parse(text) else {
                Issue.record("\(text) was accepted")
                continue
            }
            #expect(reason.description.contains(says), "\(text): \(reason)")
            #expect(!reason.description.contains("secret"), "\(text): \(reason)")
        }
        // TLS, one server: the URL's own form, its certificate checked at connect.
        let tls = try SharedTierURL.parse("rediss://cache@localhost:6390/1").get()
        guard case .redis(let tlsURL) = tls else {
            Issue.record("\(tls) is not a Redis server")
            return
        }
        #expect(tlsURL.usesTLS && tlsURL.host == "localhost" && tlsURL.database == 1)
        #expect(tls.description == "rediss://cache@localhost:6390/1")
        // A cluster by its seeds, plain or TLS; database 0 only, said or not.
        for (text, tlsWanted) in [("redis+cluster://cache@127.0.0.1:7000,[::1]:7001,node3/", false),
                                  ("rediss+cluster://cache@127.0.0.1:7000,[::1]:7001,node3/0", true)] {
            let location = try SharedTierURL.parse(text).get()
            guard case .redisCluster(let cluster) = location else {
                Issue.record("\(text): \(location) is not a cluster")
                continue
            }
            #expect(cluster.seeds.map(\.host) == ["127.0.0.1", "::1", "node3"], "\(cluster)")
            #expect(cluster.seeds.map(\.port) == [7000, 7001, 6379], "\(cluster)")
            #expect(cluster.username == "cache" && cluster.usesTLS == tlsWanted, "\(cluster)")
            #expect(location.description
                    == "\(tlsWanted ? "rediss" : "redis")+cluster://cache@127.0.0.1:7000,[::1]:7001,node3:6379/")
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
