import CacheCore
import CacheModel
import Foundation
import Testing

/// The event line is written by hand; `JSONEncoder` is the oracle for its text.
@Suite struct CacheEventTests {
    @Test(arguments: [
        "data/plain.txt", "data/with \"quotes\" and \\back\\slashes", "data/tab\there/new\nline\r",
        "data/\u{01}\u{08}\u{0C}\u{1F}\u{7F}", "thumbnails/ünïcödé/日本/🙂.png", "", "a/b/c/",
    ])
    func theLineIsWhatJSONEncoderWrites(path: String) throws {
        let event = CacheEvent(time: Timestamp(seconds: 1_790_000_000, nanoseconds: 0), event: .fetchFailed,
                               pool: "data", path: path, size: -3, reason: "removed by a \"user\"")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let expected = String(decoding: try encoder.encode(event), as: UTF8.self)
        #expect(event.jsonLine == expected)
        let decoded = try JSONDecoder().decode(CacheEvent.self, from: Data(event.jsonLine.utf8))
        #expect(decoded == event)
    }
}
