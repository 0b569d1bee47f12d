import Crypto
import CryptoExtras
import Foundation

/// How an encrypted store's files go to the shared tier: ciphertext under sealed names only
/// (docs/shared-tier.md, "Encrypted stores"), with keys every machine given the same user key
/// derives alike (``SharedTierKeys``).
///
/// - **Key**: `cachefs:s1:POOLTAG/PATHTAG`, each tag the base64url of an HMAC-SHA256: of the
///   pool's name, and of the file's whole plaintext key (``SharedTierKey``: pool, directories,
///   name). Deterministic, so another machine finds it; one-way and of fixed length, so it shows
///   neither the names nor their lengths nor the depth, only which files share a pool. The
///   store's `NameCipher` cannot serve: it binds a name to its parent's entry id, which differs
///   from machine to machine. The `s` keeps these keys apart from a plaintext store's
///   (`cachefs:1:POOL/…`), whose pool names could look like tags.
/// - **Value**: `CFST1`, format version 2, a random 12-byte nonce, the content sealed with
///   AES-256-GCM-SIV, its 16-byte tag. The associated data is the header and the key, so a value
///   changed, cut short, moved to another key, or sealed with another user key fails to open.
///   GCM-SIV rather than GCM: a fleet seals many values under one key, and a repeated random
///   nonce would then reveal only that two values are equal, never the key stream.
struct SharedTierSealing: Sendable {
    let keys: SharedTierKeys

    static let keyPrefix: [UInt8] = Array("cachefs:s1:".utf8)
    static let version: UInt8 = 2
    static let header = SharedTierValue.magic + [version]
    static let nonceSize = 12
    static let tagSize = 16

    /// The tier's key of the file whose plaintext key is `plainKey`, in pool `pool`.
    func key(pool: [UInt8], plainKey: [UInt8]) throws(EncryptionError) -> [UInt8] {
        let names = try keys.keys().names
        let poolTag = HMAC<SHA256>.authenticationCode(for: [1] + pool, using: names)
        let pathTag = HMAC<SHA256>.authenticationCode(for: [2] + plainKey, using: names)
        return Self.keyPrefix + Array(Base64URL.encode(Data(poolTag)).utf8) + [UInt8(ascii: "/")]
            + Array(Base64URL.encode(Data(pathTag)).utf8)
    }

    /// `content` sealed for the tier's key `key`.
    func seal(_ content: [UInt8], at key: [UInt8]) throws(EncryptionError) -> [UInt8] {
        let values = try keys.keys().values
        do {
            let box = try AES.GCM._SIV.seal(content, using: values, nonce: AES.GCM._SIV.Nonce(),
                                            authenticating: Self.header + key)
            var value = Self.header
            value.reserveCapacity(Self.header.count + Self.nonceSize + content.count + Self.tagSize)
            value.append(contentsOf: box.nonce)
            value.append(contentsOf: box.ciphertext)
            value.append(contentsOf: box.tag)
            return value
        } catch {
            throw .cryptoFailure("seal a shared tier value: \(error)")
        }
    }

    /// The content of `value`, found at `key`, or why it is not a whole value sealed for that key.
    func open(_ value: [UInt8], at key: [UInt8]) -> Result<[UInt8], SharedTierValueError> {
        let values: SymmetricKey
        do {
            values = try keys.keys().values
        } catch {
            return .failure(.init("the shared tier's key could not be derived"))
        }
        let minimum = Self.header.count + Self.nonceSize + Self.tagSize
        guard value.count >= minimum else {
            return .failure(.init("\(value.count) bytes, shorter than a sealed value's \(minimum)"))
        }
        guard value.starts(with: SharedTierValue.magic) else {
            return .failure(.init("not a cachefs value (no CFST1 header)"))
        }
        let version = value[SharedTierValue.magic.count]
        guard version == Self.version else {
            return .failure(.init("format version \(version), an encrypted store reads sealed values (\(Self.version))"))
        }
        let sealed = value[Self.header.count...]
        do {
            let box = try AES.GCM._SIV.SealedBox(
                nonce: AES.GCM._SIV.Nonce(data: sealed.prefix(Self.nonceSize)),
                ciphertext: sealed.dropFirst(Self.nonceSize).dropLast(Self.tagSize),
                tag: sealed.suffix(Self.tagSize))
            return .success(Array(try AES.GCM._SIV.open(box, using: values, authenticating: Self.header + key)))
        } catch {
            return .failure(.init("it does not open under this store's key at this key "
                                  + "(changed, cut short, moved, or sealed with another key)"))
        }
    }
}
