import Glibc

/// A secret (a passphrase, a key file's content) in memory of its own that is zeroed when the
/// value goes away. Swift arrays and `Data` may be copied or grown behind our back, leaving
/// copies nobody wipes, so secrets are read straight into this buffer.
public final class SecretBytes: @unchecked Sendable {
    // Written only by the initializer; read-only afterwards, so sharing it is safe.
    private let storage: UnsafeMutableRawBufferPointer
    public let count: Int

    /// Lets `fill` write at most `capacity` bytes and return how many it wrote.
    public init<E: Error>(capacity: Int, fill: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 1)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        let used: Int
        do {
            used = try fill(UnsafeMutableRawBufferPointer(rebasing: buffer[..<capacity]))
        } catch {
            Self.wipe(buffer)
            buffer.deallocate()
            throw error
        }
        precondition((0...capacity).contains(used), "SecretBytes: fill returned \(used) of \(capacity)")
        storage = buffer
        count = used
    }

    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(capacity: bytes.count) { buffer in
            buffer.copyBytes(from: bytes)
            return bytes.count
        }
    }

    /// These bytes without their last line ending ("\n" or "\r\n"), as the user typed them.
    public func droppingLineEnding() -> SecretBytes {
        withUnsafeBytes { bytes in
            var end = bytes.count
            if end > 0 && bytes[end - 1] == UInt8(ascii: "\n") { end -= 1 }
            if end > 0 && end < bytes.count && bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            return SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[..<end]))
        }
    }

    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[..<count]))
    }

    deinit {
        Self.wipe(storage)
        storage.deallocate()
    }

    private static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        // explicit_bzero, unlike memset, is not removed as a dead store.
        if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
    }
}
