/// Redis Cluster's key slot: CRC16 (XMODEM) of the key, or of its `{hashtag}`, modulo 16384.
enum KeySlot {
    static let count = 16384

    static func slot(of key: [UInt8]) -> Int {
        Int(crc16(hashedPart(of: key)) % UInt16(count))
    }

    /// The part of a key that is hashed: what is between the first `{` and the first `}` after
    /// it, when that is not empty; otherwise the whole key (the cluster spec's rules).
    static func hashedPart(of key: [UInt8]) -> ArraySlice<UInt8> {
        guard let open = key.firstIndex(of: UInt8(ascii: "{")),
            let close = key[(open + 1)...].firstIndex(of: UInt8(ascii: "}")),
            close > open + 1
        else { return key[...] }
        return key[(open + 1)..<close]
    }

    /// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection.
    static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 {
                crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }
}
