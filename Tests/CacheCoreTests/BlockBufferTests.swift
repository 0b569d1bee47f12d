import CacheCore
import Testing

@Suite struct BlockBufferTests {
    @Test func aBufferTakesNoMoreThanItsCapacityAlsoOnLargerReusedStorage() {
        do {
            // Released at the end of this scope: its 8 KiB storage is kept idle for the next.
            let large = BlockBuffer(capacity: 8192)
            _ = large.fill { room in
                room.initializeMemory(as: UInt8.self, repeating: 7)
                return room.count
            }
            #expect(large.count == 8192)
        }
        let small = BlockBuffer(capacity: 5000)
        let part: [UInt8] = Array(0..<100).map { UInt8($0) }
        var added = 0
        for _ in 0..<60 { added += part.withUnsafeBytes { small.append($0) } }
        #expect(added == 5000 && small.count == 5000)
        #expect(Array(small.bytes.prefix(100)) == part)
        #expect(small.fill { room in room.count } == 0)
        let rest = BlockBuffer(capacity: 300)
        #expect(part.withUnsafeBytes { rest.append($0) } == 100)
        var room = 0
        let filled = rest.fill { free in
            room = free.count
            return 50
        }
        #expect(room == 200 && filled == 50)
        #expect(rest.count == 150 && Array(rest.bytes.prefix(100)) == part)
    }
}
