import CacheModel
import CLinux
import Crypto
import Glibc

/// Fresh random AES-GCM nonces for the seals of one write, drawn from the kernel in batches:
/// one `getrandom` for up to `Tunables.nonceBatchBlocks` blocks instead of one per block.
/// Each nonce is still random and taken once; nothing outlives the write, so no state a
/// crash could roll back decides a nonce.
public struct RandomNonces: Sendable {
    private let batch: Int
    private var bytes: [UInt8] = []
    private var taken = 0

    /// Nonces for about `expected` seals (more are drawn if needed).
    public init(expected: Int) {
        batch = min(max(expected, 1), Tunables.nonceBatchBlocks)
    }

    public mutating func take() throws(EncryptionError) -> AES.GCM.Nonce {
        let size = BlockLayout.nonceSize
        if taken == bytes.count { try refill() }
        defer { taken += size }
        do {
            return try AES.GCM.Nonce(data: bytes[taken..<taken + size])
        } catch {
            throw .cryptoFailure("nonce: \(error)")
        }
    }

    private mutating func refill() throws(EncryptionError) {
        var fresh = [UInt8](repeating: 0, count: batch * BlockLayout.nonceSize)
        var filled = 0
        while filled < fresh.count {
            let count = fresh.withUnsafeMutableBytes { buffer in
                getrandom(buffer.baseAddress! + filled, buffer.count - filled, 0)
            }
            if count < 0 {
                guard errno == EINTR else { throw .cryptoFailure("getrandom: errno \(errno)") }
                continue
            }
            filled += count
        }
        bytes = fresh
        taken = 0
    }
}
