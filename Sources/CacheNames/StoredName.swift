import struct Foundation.Data
import func Glibc.memcmp

/// An entry's name as its ``Inode`` keeps it, in 16 bytes: up to 14 bytes inline (as `Data`
/// keeps them), a longer name in one allocation holding its bytes.
///
/// *Why not `Data`:* a `Data` of more than 14 bytes is two allocations (its storage object
/// and the bytes), about 140 bytes for a 32-byte name; here it is one of 64. A loaded
/// directory holds a name per entry, and real names (`IMG_20231005_123456.jpg`, a content
/// hash) are mostly longer than 14 bytes.
struct StoredName: Sendable {
    static let inlineCapacity = 14

    private enum Storage: Sendable {
        /// The bytes in the first `count` bytes of the three words.
        case inline(UInt64, UInt32, UInt16, count: UInt8)
        case outOfLine(NameBytes)
    }

    private let storage: Storage

    init(_ name: Data) {
        if name.count <= Self.inlineCapacity {
            var words: (UInt64, UInt32, UInt16) = (0, 0, 0)
            withUnsafeMutableBytes(of: &words) { words in
                name.withUnsafeBytes { bytes in words.copyMemory(from: bytes) }
            }
            storage = .inline(words.0, words.1, words.2, count: UInt8(name.count))
        } else {
            storage = .outOfLine(NameBytes.make(name))
        }
    }

    var count: Int {
        switch storage {
        case .inline(_, _, _, let count): Int(count)
        case .outOfLine(let bytes): bytes.count
        }
    }

    /// The name as a `Data` (no allocation up to 14 bytes).
    /// Bytes its out-of-line copy takes from the allocator (0 inline): the buffer's object
    /// header and count, the bytes, and malloc's own word, in 16-byte steps.
    var heapBytes: Int {
        switch storage {
        case .inline: 0
        case .outOfLine(let bytes): HeapSize.allocation(16 + MemoryLayout<Int>.stride + bytes.count)
        }
    }

    var data: Data {
        withBytes { Data($0) }
    }

    /// Whether `name` is this name, byte for byte.
    func equals(_ name: Data) -> Bool {
        guard name.count == count else { return false }
        guard count > 0 else { return true }
        // memcmp: every lookup compares candidates, and with kernel_hits every open and close
        // event does; the generic byte-by-byte comparison showed in the profile of a hit.
        return withBytes { stored in name.withUnsafeBytes { memcmp(stored.baseAddress!, $0.baseAddress!, count) == 0 } }
    }

    func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch storage {
        case .inline(let first, let second, let third, let count):
            var words = (first, second, third)
            return withUnsafeBytes(of: &words) { body(UnsafeRawBufferPointer(rebasing: $0.prefix(Int(count)))) }
        case .outOfLine(let bytes):
            return bytes.withBytes(body)
        }
    }
}

/// A long name's bytes, after their count. Written once, when made, and only read after:
/// that is what makes sharing them between threads safe (`ManagedBuffer` itself is not
/// `Sendable`, since most are written after they are shared).
struct NameBytes: @unchecked Sendable {
    private let buffer: ManagedBuffer<Int, UInt8>

    static func make(_ name: Data) -> NameBytes {
        let buffer = ManagedBuffer<Int, UInt8>.create(minimumCapacity: name.count) { _ in name.count }
        buffer.withUnsafeMutablePointerToElements { elements in
            name.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(elements).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            }
        }
        return NameBytes(buffer: buffer)
    }

    var count: Int { buffer.header }

    func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        buffer.withUnsafeMutablePointers { count, elements in
            body(UnsafeRawBufferPointer(start: elements, count: count.pointee))
        }
    }
}
