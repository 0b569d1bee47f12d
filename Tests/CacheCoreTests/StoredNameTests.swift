@testable import CacheNames
import Foundation
import Testing

/// An inode's name: 16 bytes, every name comes back byte for byte, and equality is exact.
@Suite struct StoredNameTests {
    @Test func itTakesSixteenBytes() {
        #expect(MemoryLayout<StoredName>.size == 16)
        #expect(MemoryLayout<StoredName>.stride == 16)
    }

    /// Every length from empty to past a filename's 255 bytes, across the inline limit, with
    /// bytes a C string would stop at (NUL) or a text decoder would reject (0xFF).
    @Test func everyNameComesBackByteForByte() {
        var generator = SplitMix(seed: 30)
        for length in Array(0...40) + [254, 255, 300, 4_096] {
            let name = Data((0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            let stored = StoredName(name)
            #expect(stored.count == length)
            #expect(stored.data == name, "length \(length)")
            #expect(stored.equals(name), "length \(length)")
            #expect(stored.equals(Data(name)), "length \(length)")
        }
        #expect(StoredName(Data([0, 0])).data == Data([0, 0]))
        #expect(StoredName(Data(repeating: 0xFF, count: 14)).data == Data(repeating: 0xFF, count: 14))
    }

    /// Names that differ in one byte, in length only, or only past the inline limit are different.
    @Test func equalityIsExact() {
        let name = Data("IMG_20231005_123456.jpg".utf8)
        let stored = StoredName(name)
        for position in name.indices {
            var other = name
            other[position] ^= 0x01
            #expect(!stored.equals(other), "differs at \(position)")
        }
        #expect(!stored.equals(name.dropLast()))
        #expect(!stored.equals(name + Data([0])))
        #expect(!StoredName(Data("abc".utf8)).equals(Data("abc\0".utf8)))
        #expect(!StoredName(Data()).equals(Data([0])))
        #expect(StoredName(Data()).equals(Data()))
        // A slice of a larger buffer (its indices do not start at 0) compares by its bytes.
        let slice = (Data("xx".utf8) + name).dropFirst(2)
        #expect(stored.equals(slice))
        #expect(StoredName(slice).data == name)
    }
}
