/// The S3 object key of a tier key (``SharedTierKey``): the location's prefix, then the tier
/// key made valid UTF-8, as S3 keys must be. A name's bytes that are valid UTF-8 stay as they
/// are; each byte of a sequence that is not becomes `%XX` (upper-case hex), and so does every
/// `%` itself (`%25`), so a `%` in a key always starts an escape and two names never share an
/// object: `100%.jpg` is `100%25.jpg`, the byte 0xFF alone is `%FF`. ASCII's control characters
/// (which S3 asks to avoid, and XML listings cannot carry) are escaped too: a newline in a name
/// is `%0A`, and the NUL that begins an origin pool's key suffix (``SharedTierKey``) is `%00`.
enum S3TierKey {
    /// S3's longest key, in bytes of UTF-8.
    static let maxKeyBytes = 1024

    /// Nil when the key would be longer than S3 allows: such a file is never shared.
    static func objectKey(_ tierKey: [UInt8], prefix: [UInt8]) -> [UInt8]? {
        let key = prefix + escaped(tierKey)
        return key.count <= maxKeyBytes ? key : nil
    }

    /// `bytes` as valid UTF-8: see the type's comment.
    static func escaped(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var parser = Unicode.UTF8.ForwardParser()
        var input = bytes.makeIterator()
        var position = 0
        while true {
            switch parser.parseScalar(from: &input) {
            case .valid(let scalar):
                for byte in scalar {
                    if byte == UInt8(ascii: "%") || byte < 0x20 || byte == 0x7F {
                        appendEscape(of: byte, to: &result)
                    } else {
                        result.append(byte)
                    }
                }
                position += scalar.count
            case .error(let length):
                for byte in bytes[position..<position + length] { appendEscape(of: byte, to: &result) }
                position += length
            case .emptyInput:
                return result
            }
        }
    }

    private static func appendEscape(of byte: UInt8, to result: inout [UInt8]) {
        result.append(UInt8(ascii: "%"))
        result.append(hexDigits[Int(byte >> 4)])
        result.append(hexDigits[Int(byte & 0x0F)])
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}
