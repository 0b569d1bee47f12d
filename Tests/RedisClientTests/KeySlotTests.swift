import Testing

@testable import RedisClient

@Suite struct KeySlotTests {
    private func slot(_ key: String) -> Int { KeySlot.slot(of: Array(key.utf8)) }

    @Test func crc16MatchesTheClusterSpec() {
        #expect(KeySlot.crc16(Array("123456789".utf8)) == 0x31C3)
    }

    @Test func slotOfFoo() {
        #expect(slot("foo") == 12182)
    }

    @Test func hashtagsShareASlot() {
        #expect(slot("{user1000}.following") == slot("{user1000}.followers"))
        #expect(slot("{user1000}.following") == slot("user1000"))
    }

    @Test func anEmptyHashtagHashesTheWholeKey() {
        #expect(KeySlot.hashedPart(of: Array("foo{}{bar}".utf8)) == Array("foo{}{bar}".utf8)[...])
        #expect(slot("foo{}{bar}") == Int(KeySlot.crc16(Array("foo{}{bar}".utf8)) % 16384))
    }

    @Test func theHashtagEndsAtTheFirstClosingBrace() {
        #expect(KeySlot.hashedPart(of: Array("foo{{bar}}zap".utf8)) == Array("{bar".utf8)[...])
        #expect(slot("foo{{bar}}zap") == slot("{bar"))
        #expect(KeySlot.hashedPart(of: Array("foo{bar}{zap}".utf8)) == Array("bar".utf8)[...])
        #expect(KeySlot.hashedPart(of: Array("foo{bar".utf8)) == Array("foo{bar".utf8)[...])
    }

    @Test func slotsAreInRange() {
        for index in 0..<2000 {
            #expect((0..<16384).contains(slot("key-\(index)")))
        }
    }

    @Test func redirectionsParse() {
        #expect(
            ClusterRedirection(errorMessage: "MOVED 3999 127.0.0.1:6381", answeringHost: "h")
                == .moved(slot: 3999, to: RedisNodeAddress(host: "127.0.0.1", port: 6381)))
        #expect(
            ClusterRedirection(errorMessage: "ASK 3999 :6381", answeringHost: "10.0.0.1")
                == .ask(slot: 3999, to: RedisNodeAddress(host: "10.0.0.1", port: 6381)))
        #expect(
            ClusterRedirection(errorMessage: "MOVED 1 [::1]:7000", answeringHost: "h")
                == .moved(slot: 1, to: RedisNodeAddress(host: "::1", port: 7000)))
        #expect(ClusterRedirection(errorMessage: "ERR wrong", answeringHost: "h") == nil)
        #expect(ClusterRedirection(errorMessage: "MOVED 99999 h:1", answeringHost: "h") == nil)
    }
}
