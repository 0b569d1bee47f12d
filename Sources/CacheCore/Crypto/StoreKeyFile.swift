import Crypto
import Foundation
import Glibc

/// `STORE/wrapped-key`: what makes a store encrypted. It holds the store's data key sealed by
/// the user's key, and how to get from the user's key to the sealing key. Named "wrapped" so
/// nobody mistakes it for a key to give `-o key_file=`, or thinks a backup holding it holds
/// the key: without the user's key it is useless. Only this file changes on `rekey`.
///
/// Layout (156 bytes, integers little-endian):
///
///     0   4  magic "CFSK"            12  1  KDF kind (0 HKDF, 1 scrypt)
///     4   2  format version (1)      13  3  scrypt log2 N, r, p
///     6   2  cipher suite (1)        16 32  KDF salt
///     8   4  block size              48 16  store id
///     64 60  data key sealed with AES-256-GCM: nonce 12, ciphertext 32, tag 16; the
///            associated data is bytes 0..<64, so no parameter can change unnoticed
///     124 32 SHA-256 of bytes 0..<124, which tells a damaged file from a wrong key
///
/// The seal's tag is the key check: a wrong key fails it before any other work. The sealing
/// key comes from a fresh salt each time the file is written, so its random nonce is safe.
public struct StoreKeyFile: Sendable, Equatable {
    public static let fileName = "wrapped-key"
    static let magic = Array("CFSK".utf8)
    static let formatVersion: UInt16 = 1
    /// Suite 1: contents AES-256-GCM per block, names AES-256-GCM-SIV, values AES-256-GCM,
    /// every subkey HKDF-SHA256 of the data key.
    static let cipherSuite: UInt16 = 1
    static let headerByteCount = 64
    static let sealedKeyByteCount = 12 + DataKey.byteCount + 16
    static let byteCount = headerByteCount + sealedKeyByteCount + 32
    static let storeIDByteCount = 16

    public var blockSize: Int
    public var derivation: KeyDerivation
    public var storeID: [UInt8]
    var sealedDataKey: [UInt8]

    public static func path(inStore store: String) -> String { store + "/" + fileName }

    public static func isEncrypted(store: String) -> Bool { access(path(inStore: store), F_OK) == 0 }

    // MARK: - Create, unlock, rekey

    /// Makes `store` an encrypted store: a new random data key sealed by `userKey`.
    public static func create(inStore store: String, userKey: UserKey, blockSize: Int = BlockLayout.defaultBlockSize,
                              derivation: KeyDerivation? = nil,
                              disk: any Disk = PosixDisk()) throws(EncryptionError) -> StoreEncryption {
        precondition(BlockLayout.isValid(blockSize: blockSize), "bad block size \(blockSize)")
        guard !isEncrypted(store: store) else { throw .alreadyEncrypted(store: store) }
        let dataKey = DataKey.random()
        let file = try StoreKeyFile(sealing: dataKey, with: userKey, blockSize: blockSize,
                                    derivation: derivation ?? .fresh(for: userKey),
                                    storeID: RandomBytes.make(storeIDByteCount))
        try file.writeDurably(inStore: store, disk: disk)
        return StoreEncryption(dataKey: dataKey, storeID: file.storeID, layout: BlockLayout(blockSize: blockSize),
                               userKey: userKey)
    }

    /// The store's keys, if `userKey` is the one that locked it. A `wrapped-key.new` left by
    /// an interrupted rekey never replaced the file, so the key that works is this file's;
    /// the leftover is removed.
    public static func unlock(store: String, userKey: UserKey,
                              disk: any Disk = PosixDisk()) throws(EncryptionError) -> StoreEncryption {
        let file = try read(store: store, disk: disk)
        let dataKey = try file.openDataKey(with: userKey)
        // Usually there is none; one that cannot go harms nothing: unlock never reads it and
        // the next rekey writes over it.
        try? disk.unlink(path(inStore: store) + ".new")
        return StoreEncryption(dataKey: dataKey, storeID: file.storeID, layout: BlockLayout(blockSize: file.blockSize),
                               userKey: userKey)
    }

    /// Replaces the user's key: the same data key sealed by `newKey`. Writes
    /// `wrapped-key.new`, fsyncs it, renames it over `wrapped-key` and fsyncs the store
    /// directory, so a crash at any point leaves the old key or the new one working.
    public static func rekey(store: String, from oldKey: UserKey, to newKey: UserKey, derivation: KeyDerivation? = nil,
                             disk: any Disk = PosixDisk()) throws(EncryptionError) {
        let old = try read(store: store, disk: disk)
        let dataKey = try old.openDataKey(with: oldKey)
        let new = try StoreKeyFile(sealing: dataKey, with: newKey, blockSize: old.blockSize,
                                   derivation: derivation ?? .fresh(for: newKey), storeID: old.storeID)
        try new.writeDurably(inStore: store, disk: disk)
    }

    // MARK: - Sealing

    init(sealing dataKey: DataKey, with userKey: UserKey, blockSize: Int, derivation: KeyDerivation,
         storeID: [UInt8]) throws(EncryptionError) {
        self.blockSize = blockSize
        self.derivation = derivation
        self.storeID = storeID
        sealedDataKey = []
        let wrappingKey = try derivation.wrappingKey(for: userKey)
        do {
            let box = try dataKey.key.withUnsafeBytes { key in
                try AES.GCM.seal(key, using: wrappingKey, nonce: AES.GCM.Nonce(), authenticating: encodedHeader())
            }
            sealedDataKey = Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw .cryptoFailure("seal the data key: \(error)")
        }
    }

    func openDataKey(with userKey: UserKey) throws(EncryptionError) -> DataKey {
        let wrappingKey = try derivation.wrappingKey(for: userKey)
        do {
            let box = try AES.GCM.SealedBox(combined: sealedDataKey)
            let key = try AES.GCM.open(box, using: wrappingKey, authenticating: encodedHeader())
            return DataKey(SymmetricKey(data: key))
        } catch {
            throw .wrongKey
        }
    }

    // MARK: - Encoding

    func encoded() -> [UInt8] {
        let body = encodedHeader() + sealedDataKey
        return body + Array(SHA256.hash(data: body))
    }

    private func encodedHeader() -> [UInt8] {
        var bytes = Self.magic
        bytes += Self.littleEndian(Self.formatVersion)
        bytes += Self.littleEndian(Self.cipherSuite)
        bytes += Self.littleEndian(UInt32(blockSize))
        bytes += [derivation.kind.rawValue, derivation.logRounds, derivation.blockSize, derivation.parallelism]
        return bytes + derivation.salt + storeID
    }

    init(decoding bytes: [UInt8], path: String) throws(EncryptionError) {
        func corrupt(_ reason: String) -> EncryptionError { .storeKeyFileCorrupt(path: path, reason: reason) }
        guard bytes.count == Self.byteCount else {
            throw corrupt("\(bytes.count) bytes, expected \(Self.byteCount)")
        }
        let checked = Self.byteCount - 32
        guard Array(SHA256.hash(data: bytes[..<checked])) == Array(bytes[checked...]) else {
            throw corrupt("its checksum does not match")
        }
        guard Array(bytes[0..<4]) == Self.magic else { throw corrupt("not a cachefs key file") }
        let version = Self.integer(bytes[4..<6], as: UInt16.self)
        guard version == Self.formatVersion else { throw corrupt("format \(version), this cachefs reads format 1") }
        let suite = Self.integer(bytes[6..<8], as: UInt16.self)
        guard suite == Self.cipherSuite else { throw corrupt("unknown cipher suite \(suite)") }
        blockSize = Int(Self.integer(bytes[8..<12], as: UInt32.self))
        guard BlockLayout.isValid(blockSize: blockSize) else { throw corrupt("bad block size \(blockSize)") }
        guard let kind = KeyDerivation.Kind(rawValue: bytes[12]) else { throw corrupt("unknown KDF \(bytes[12])") }
        derivation = KeyDerivation(kind: kind, logRounds: bytes[13], blockSize: bytes[14], parallelism: bytes[15],
                                   salt: Array(bytes[16..<48]))
        if kind == .scrypt {
            guard let memory = derivation.scryptMemory, memory <= KeyDerivation.maximumScryptMemory else {
                throw corrupt("scrypt parameters out of range")
            }
        }
        storeID = Array(bytes[48..<64])
        sealedDataKey = Array(bytes[64..<checked])
    }

    private static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    private static func integer<T: FixedWidthInteger>(_ bytes: ArraySlice<UInt8>, as type: T.Type) -> T {
        bytes.reversed().reduce(T(0)) { $0 << 8 | T($1) }
    }

    // MARK: - Disk

    static func read(store: String, disk: any Disk) throws(EncryptionError) -> StoreKeyFile {
        let path = path(inStore: store)
        let fd: Int32
        do {
            fd = try disk.open(path, flags: O_RDONLY, mode: 0)
        } catch {
            if error.errno == ENOENT { throw .notEncrypted(store: store) }
            throw .io(operation: "open \(path)", errno: error.errno)
        }
        defer { disk.close(fd) }
        let bytes: [UInt8]
        do {
            bytes = try disk.preadFully(fd, count: byteCount + 1, at: 0)
        } catch {
            throw .io(operation: "read \(path)", errno: error.errno)
        }
        return try StoreKeyFile(decoding: bytes, path: path)
    }

    func writeDurably(inStore store: String, disk: any Disk) throws(EncryptionError) {
        let path = Self.path(inStore: store)
        let temporary = path + ".new"
        let bytes = encoded()
        do {
            let fd = try disk.open(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600)
            defer { disk.close(fd) }
            try disk.pwriteFully(fd, from: bytes, at: 0)
            try disk.fsync(fd, dataOnly: false)
        } catch {
            throw .io(operation: "write \(temporary)", errno: error.errno)
        }
        do {
            try disk.rename(temporary, to: path)
            try disk.syncDirectory(store)
        } catch {
            throw .io(operation: "replace \(path)", errno: error.errno)
        }
    }
}
