@testable import CacheCore
import CacheModel
import Glibc
import Testing

@Suite struct EngineXattrTests {
    @Test func cacheFlagsRoundTripAndBadValuesChangeNothing() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let id = try engine.writeFile("f", in: data, content: [1])
        try engine.setxattr(id, name: "user.cache.pinned", value: Array("1".utf8), flags: 0)
        #expect(try engine.text(id, "user.cache.state") == "pinned")
        let bad: [(String, String)] = [
            ("user.cache.pinned", "banana"), ("user.cache.persistent", "2"), ("user.cache.expiration", "-1"),
            ("user.cache.expiration", ""), ("user.cache.pinned", String(repeating: "9", count: 65536)),
        ]
        for (name, value) in bad {
            #expect(throws: CacheError.self) { try engine.setxattr(id, name: name, value: Array(value.utf8), flags: 0) }
        }
        #expect(try engine.text(id, "user.cache.pinned") == "1")
        #expect(try engine.text(id, "user.cache.expiration") == "0")
        #expect(throws: CacheError.unknownCacheAttribute("user.cache.colour")) {
            try engine.setxattr(id, name: "user.cache.colour", value: Array("1".utf8), flags: 0)
        }
        #expect(throws: CacheError.readOnlyAttribute("user.cache.last_access")) {
            try engine.setxattr(id, name: "user.cache.last_access", value: Array("1".utf8), flags: 0)
        }
        #expect(throws: CacheError.unsupportedNamespace) { try engine.getxattr(id, name: "security.selinux") }
    }

    /// A stored min_free that does not parse is replaced by the default where space is
    /// judged; the attribute shows that value, not the stored text.
    @Test func minFreeShowsTheValueInForce() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        try engine.setxattr(WellKnownEntry.root, name: "user.cache.min_free", value: Array("2G".utf8), flags: 0)
        #expect(try engine.text(WellKnownEntry.root, "user.cache.min_free") == String(2 << 30))
        try engine.index.setSetting(MinFree.settingKey, "banana")
        #expect(try engine.eviction.minFree() == MinFree.defaultValue)
        #expect(try engine.text(WellKnownEntry.root, "user.cache.min_free") == MinFree.defaultValue.description)
    }

    @Test func persistentFilesLeaveTheUsage() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let id = try engine.writeFile("f", in: data, content: Array(repeating: 1, count: 10))
        try engine.setxattr(id, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
        #expect(try engine.text(data, "user.cache.usage") == "0")
        #expect(try engine.text(data, "user.cache.persistent_usage") == "10")
        try engine.removexattr(id, name: "user.cache.persistent")
        #expect(try engine.text(data, "user.cache.usage") == "10")
    }

    @Test func directoryFlagsCoverWhatIsBeneathNowAndLater() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let dir = try engine.mkdir(parent: data, name: Array("keep".utf8), mode: 0o755, caller: tester)
        let before = try engine.writeFile("before", in: dir.id, content: [1, 2])
        try engine.setxattr(dir.id, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
        let after = try engine.writeFile("after", in: dir.id, content: [3])
        #expect(try engine.text(before, "user.cache.state") == "persistent")
        #expect(try engine.text(after, "user.cache.state") == "persistent")
        #expect(try engine.text(data, "user.cache.persistent_usage") == "3")
    }

    @Test func userAttributesAreStored() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let id = try engine.writeFile("f", in: data, content: [1])
        try engine.setxattr(id, name: "user.foo", value: Array("bar".utf8), flags: 0)
        #expect(try engine.text(id, "user.foo") == "bar")
        #expect(try engine.listxattr(id).contains("user.foo"))
        #expect(throws: CacheError.attributeExists) {
            try engine.setxattr(id, name: "user.foo", value: [1], flags: XattrFlags.create)
        }
        try engine.removexattr(id, name: "user.foo")
        #expect(throws: CacheError.noAttribute) { try engine.getxattr(id, name: "user.foo") }
    }

    @Test func poolSettingsAreValidatedAndPersisted() throws {
        let store = try TestStore()
        do {
            let engine = try store.open()
            let data = try engine.pool("data")
            try engine.setxattr(data, name: "user.cache.max_size", value: Array("1G".utf8), flags: 0)
            try engine.setxattr(data, name: "user.cache.age_basis", value: Array("modification".utf8), flags: 0)
            #expect(throws: CacheError.self) {
                try engine.setxattr(data, name: "user.cache.max_size", value: Array("lots".utf8), flags: 0)
            }
            engine.shutdown()
        }
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        #expect(try engine.text(data, "user.cache.max_size") == String(1 << 30))
        #expect(try engine.text(data, "user.cache.age_basis") == "modification")
    }

    @Test func readingIsAnAccessButStatIsNot() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try store.open(clock: clock)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let id = try engine.writeFile("f", in: data, content: [1])
        let first = try engine.text(id, "user.cache.last_access")
        clock.advance(seconds: 60)
        _ = try engine.getattr(id)
        #expect(try engine.text(id, "user.cache.last_access") == first)
        _ = try engine.readAll(id)
        let second = try engine.text(id, "user.cache.last_access")
        #expect(second > first)
    }
}
