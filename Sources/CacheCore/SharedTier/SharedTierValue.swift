import Crypto

/// A file's bytes as the shared tier keeps them: `CFST1`, a format version byte, the length
/// (8 bytes, big-endian), the SHA-256 of the bytes (32 bytes), then the bytes. Another
/// machine's copy is served only if its length and digest match: a value cut short (a full
/// Redis, a torn write) or written by something else is corrupt, never a file.
enum SharedTierValue {
    static let magic: [UInt8] = Array("CFST1".utf8)
    static let version: UInt8 = 1
    static let headerSize = magic.count + 1 + 8 + SHA256.byteCount

    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var value = magic
        value.reserveCapacity(headerSize + bytes.count)
        value.append(version)
        let length = UInt64(bytes.count)
        for shift in stride(from: 56, through: 0, by: -8) { value.append(UInt8(truncatingIfNeeded: length >> UInt64(shift))) }
        value.append(contentsOf: SHA256.hash(data: bytes))
        value.append(contentsOf: bytes)
        return value
    }

    /// The bytes a value holds, or why it is not a whole, unchanged value of this format.
    static func decode(_ value: [UInt8]) -> Result<[UInt8], SharedTierValueError> {
        guard value.count >= headerSize else {
            return .failure(.init("\(value.count) bytes, shorter than the \(headerSize)-byte header"))
        }
        guard value.starts(with: magic) else { return .failure(.init("not a cachefs value (no CFST1 header)")) }
        guard value[magic.count] == version else {
            return .failure(.init("format version \(value[magic.count]), this cachefs reads \(version)"))
        }
        let lengthStart = magic.count + 1
        let length = value[lengthStart..<lengthStart + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let content = value[headerSize...]
        guard UInt64(content.count) == length else {
            return .failure(.init("\(content.count) bytes of content, the header says \(length)"))
        }
        let digest = value[lengthStart + 8..<headerSize]
        guard SHA256.hash(data: content).elementsEqual(digest) else {
            return .failure(.init("the content does not match its SHA-256"))
        }
        return .success(Array(content))
    }
}

struct SharedTierValueError: Error, Equatable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
