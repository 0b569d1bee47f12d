/// An unlocked store's keys and formats: what the engine holds while an encrypted store is
/// mounted. Made by ``StoreKeyFile/create(inStore:userKey:blockSize:derivation:disk:)`` or
/// ``StoreKeyFile/unlock(store:userKey:disk:)``.
public struct StoreEncryption: Sendable {
    public let dataKey: DataKey
    public let storeID: [UInt8]
    public let layout: BlockLayout
    public let names: NameCipher
    public let values: ValueCipher

    init(dataKey: DataKey, storeID: [UInt8], layout: BlockLayout) {
        self.dataKey = dataKey
        self.storeID = storeID
        self.layout = layout
        names = NameCipher(dataKey: dataKey)
        values = ValueCipher(dataKey: dataKey)
    }

    /// The cipher of a new file, with a new random file id.
    public func newFileCipher() -> FileCipher {
        FileCipher(dataKey: dataKey, header: .random(blockSize: layout.blockSize))
    }

    public func fileCipher(for header: FileHeader) -> FileCipher {
        FileCipher(dataKey: dataKey, header: header)
    }
}
