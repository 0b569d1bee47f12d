/// Percent-encoding as AWS Signature V4 and S3 want it: every byte outside the unreserved
/// set `A-Z a-z 0-9 - . _ ~` becomes `%XX` (upper-case hex), once. The same text goes on the
/// wire and into the canonical request, so the server's view and the signature agree. The
/// segments of an http(s) origin's URLs are encoded the same way.
public enum S3Encoding {
    /// `keepingSlash` is for object keys in a path: S3 keeps `/` as is there; query names and
    /// values encode it as `%2F`.
    public static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes, keepingSlash: Bool = false) -> String {
        var encoded: [UInt8] = []
        for byte in bytes {
            if isUnreserved(byte) || (keepingSlash && byte == UInt8(ascii: "/")) {
                encoded.append(byte)
            } else {
                encoded.append(UInt8(ascii: "%"))
                encoded.append(hexDigits[Int(byte >> 4)])
                encoded.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    public static func encode(_ text: String, keepingSlash: Bool = false) -> String {
        encode(text.utf8, keepingSlash: keepingSlash)
    }

    /// Lower-case hex of a digest or MAC, as the signature and payload hashes are written.
    static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        var text: [UInt8] = []
        for byte in bytes {
            text.append(lowerHexDigits[Int(byte >> 4)])
            text.append(lowerHexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
    private static let lowerHexDigits = Array("0123456789abcdef".utf8)
}
