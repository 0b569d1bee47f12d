import CacheModel
import Crypto
import Foundation

/// Seals and opens one file's blocks with AES-256-GCM under the file's own key,
/// HKDF-SHA256(data key, salt: file id). Each seal takes a fresh random 96-bit nonce, also
/// when a block is rewritten in place: nonces never depend on state a crash could roll
/// back, and since every file has its own key, a repeat needs about 2^32 writes to one
/// file's blocks before its odds reach 2^-32 (NIST SP 800-38D's bound for random nonces).
///
/// The associated data is file id (16) + owner (8) + block index (8) + last-flag (1), the
/// integers big-endian: a block moved to another position or file fails, and so does a
/// file cut or grown by whole blocks, because its last block then carries the wrong flag.
/// The owner is the index entry whose bytes these are: a whole byte file, header included,
/// swapped with another entry's fails too, though its header alone would still match.
public struct FileCipher: Sendable {
    public let header: FileHeader
    public let owner: EntryID
    public let layout: BlockLayout
    private let key: SymmetricKey

    public init(dataKey: DataKey, header: FileHeader, owner: EntryID) {
        self.header = header
        self.owner = owner
        layout = BlockLayout(blockSize: header.blockSize)
        key = dataKey.subkey(for: .fileContents, salt: header.fileID)
    }

    /// The stored form of block `index`: nonce + ciphertext + tag.
    public func seal(block index: Int64, _ plaintext: UnsafeRawBufferPointer, isLast: Bool) throws(EncryptionError) -> [UInt8] {
        var stored: [UInt8] = []
        var nonces = RandomNonces(expected: 1)
        try seal(block: index, plaintext, isLast: isLast, nonces: &nonces, appendingTo: &stored)
        return stored
    }

    /// Appends the stored form of block `index` to `stored`, its nonce taken from `nonces`
    /// (a write seals all its blocks into one buffer, with one batch of nonces).
    public func seal(block index: Int64, _ plaintext: UnsafeRawBufferPointer, isLast: Bool,
                     nonces: inout RandomNonces, appendingTo stored: inout [UInt8]) throws(EncryptionError) {
        precondition(plaintext.count <= layout.blockSize && (isLast || plaintext.count == layout.blockSize))
        let nonce = try nonces.take()
        do {
            let box = try withAssociatedData(index, isLast: isLast) { associatedData in
                try AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: associatedData)
            }
            // Always present with a 12-byte nonce.
            guard let combined = box.combined else { throw EncryptionError.cryptoFailure("no combined form") }
            // One copy, as one run of bytes (appending a Data element by element is slow).
            combined.withUnsafeBytes { stored.append(contentsOf: $0) }
        } catch {
            throw .cryptoFailure("seal block \(index): \(error)")
        }
    }

    public func seal(block index: Int64, _ plaintext: [UInt8], isLast: Bool) throws(EncryptionError) -> [UInt8] {
        try plaintext.withUnsafeBytes { bytes in
            Result { () throws(EncryptionError) in try seal(block: index, bytes, isLast: isLast) }
        }.get()
    }

    /// The plaintext of stored block `index`, or `.tampered(block: index)`.
    public func open(block index: Int64, _ stored: some DataProtocol, isLast: Bool) throws(EncryptionError) -> [UInt8] {
        try Array(openData(block: index, stored, isLast: isLast))
    }

    /// As ``open(block:_:isLast:)``, as swift-crypto returns it: a read copies from it
    /// straight into its reply.
    public func openData(block index: Int64, _ stored: some DataProtocol, isLast: Bool) throws(EncryptionError) -> Data {
        guard stored.count >= BlockLayout.overhead, stored.count <= layout.storedBlockSize else {
            throw .tampered(block: index)
        }
        do {
            let box = try AES.GCM.SealedBox(combined: stored)
            return try withAssociatedData(index, isLast: isLast) { associatedData in
                try AES.GCM.open(box, using: key, authenticating: associatedData)
            }
        } catch {
            throw .tampered(block: index)
        }
    }

    /// Runs `body` with the block's associated data, built on the stack (no allocation per block).
    private func withAssociatedData<T>(_ index: Int64, isLast: Bool,
                                       _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let prefix = header.fileID.count
        return try withUnsafeTemporaryAllocation(byteCount: prefix + 17, alignment: 1) { buffer in
            header.fileID.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[0..<prefix]).copyMemory(from: $0) }
            buffer.storeBytes(of: UInt64(bitPattern: owner).bigEndian, toByteOffset: prefix, as: UInt64.self)
            buffer.storeBytes(of: UInt64(index).bigEndian, toByteOffset: prefix + 8, as: UInt64.self)
            buffer[prefix + 16] = isLast ? 1 : 0
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }
}
