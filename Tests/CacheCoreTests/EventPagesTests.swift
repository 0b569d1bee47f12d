@testable import CacheCore
import CacheModel
import Foundation
import Logging
import Testing

/// The pages `user.cache.events?from=N` serves: whole lines from a byte offset, the next
/// offset to ask for, sealed paths opened, and a rotated (shorter) log read from its start.
@Suite struct EventPagesTests {
    private let store: TestStore
    private var path: String { store.path + "/events.jsonl" }

    init() throws {
        store = try TestStore()
    }

    private func event(_ name: String) -> CacheEvent {
        CacheEvent(time: Timestamp(nanoseconds: 0), event: .deleted, pool: "data", path: "data/" + name, size: 1,
                   reason: "rm")
    }

    /// Every line from 0, page by page of at most `limit` bytes.
    private func allLines(_ log: EventLog, limit: Int) throws -> [String] {
        var offset: Int64 = 0
        var lines: [String] = []
        while true {
            let page = try log.page(from: offset, limit: limit)
            #expect(page.lines.count <= limit)
            lines += String(decoding: page.lines, as: UTF8.self).split(separator: "\n").map(String.init)
            if page.next == offset { return lines }
            offset = page.next
        }
    }

    @Test func pagesHoldWholeLinesAndEndWhereTheLogEnds() throws {
        let log = EventLog(path: path, logger: Logger(label: "test"))
        log.record((0..<50).map { event("file-\($0)") })
        let lines = try allLines(log, limit: 300)
        #expect(lines.count == 50)
        #expect(lines.enumerated().allSatisfy { $0.element.contains("\"data/file-\($0.offset)\"") })
        let end = try log.page(from: 0, limit: 1 << 20).next
        #expect(try log.page(from: end, limit: 300).lines.isEmpty)
        // An offset past the end (the log was rotated) starts again from the beginning.
        #expect(try log.page(from: end + 1000, limit: 1 << 20).next == end)
    }

    @Test func anEncryptedStoresLogHoldsSealedPathsAndItsPagesOpenThem() throws {
        let encryption = try StoreKeyFile.create(inStore: store.path, userKey: TestKeys.random())
        let log = EventLog(path: path, logger: Logger(label: "test"), sealing: EventPathSealing(encryption))
        log.record([event("secret-name")])
        let stored = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!stored.contains("secret-name") && stored.contains("\"path\":\"sealed:"), "\(stored)")
        #expect(try allLines(log, limit: 4096) == [event("secret-name").jsonLine])
        // Another key's log shows its paths as not opening, never as garbage.
        let other = try TestStore()
        let otherLog = EventLog(path: path, logger: Logger(label: "test"),
                                sealing: EventPathSealing(try StoreKeyFile.create(inStore: other.path, userKey: TestKeys.random())))
        let unopened = try allLines(otherLog, limit: 4096)
        #expect(unopened.count == 1 && unopened.allSatisfy { $0.contains("(does not open)") }, "\(unopened)")
    }
}
