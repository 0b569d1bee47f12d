/// The 32 bytes at the start of every encrypted byte file: magic "CFE1", format version (1),
/// log2 of the block size, 10 reserved zero bytes, and the file's random 16-byte id. The id
/// makes the file's own key (HKDF of the data key) and is bound into every block, so blocks
/// of one file never open as another's. The header itself needs no tag: a changed id or
/// block size makes every block fail.
public struct FileHeader: Sendable, Equatable {
    public static let byteCount = 32
    public static let idByteCount = 16
    static let magic = Array("CFE1".utf8)
    static let version: UInt8 = 1

    public let fileID: [UInt8]
    public let blockSize: Int

    public init(fileID: [UInt8], blockSize: Int) {
        precondition(fileID.count == Self.idByteCount && BlockLayout.isValid(blockSize: blockSize))
        self.fileID = fileID
        self.blockSize = blockSize
    }

    /// A header with a new random id, for a new file.
    public static func random(blockSize: Int) -> FileHeader {
        FileHeader(fileID: RandomBytes.make(idByteCount), blockSize: blockSize)
    }

    public var encoded: [UInt8] {
        Self.magic + [Self.version, UInt8(blockSize.trailingZeroBitCount)] + [UInt8](repeating: 0, count: 10) + fileID
    }

    public init(decoding bytes: some Collection<UInt8>) throws(EncryptionError) {
        let bytes = Array(bytes)
        guard bytes.count == Self.byteCount, Array(bytes[0..<4]) == Self.magic else {
            throw .badFileHeader(reason: "not an encrypted cachefs file")
        }
        guard bytes[4] == Self.version else { throw .badFileHeader(reason: "unknown version \(bytes[4])") }
        let shift = Int(bytes[5])
        guard shift < 32, BlockLayout.isValid(blockSize: 1 << shift) else {
            throw .badFileHeader(reason: "bad block size 2^\(shift)")
        }
        blockSize = 1 << shift
        fileID = Array(bytes[16..<32])
    }
}
