import CacheModel

/// An unlocked store's keys and formats: what the engine holds while an encrypted store is
/// mounted. Made by ``StoreKeyFile/create(inStore:userKey:blockSize:derivation:disk:)`` or
/// ``StoreKeyFile/unlock(store:userKey:disk:)``.
public struct StoreEncryption: Sendable {
    public let dataKey: DataKey
    public let storeID: [UInt8]
    public let layout: BlockLayout
    public let names: NameCipher
    public let values: ValueCipher
    /// From the user's key, not the data key: the same on every store given that key.
    public let sharedTier: SharedTierKeys

    init(dataKey: DataKey, storeID: [UInt8], layout: BlockLayout, userKey: UserKey) {
        self.dataKey = dataKey
        self.storeID = storeID
        self.layout = layout
        names = NameCipher(dataKey: dataKey)
        values = ValueCipher(dataKey: dataKey)
        sharedTier = SharedTierKeys(userKey: userKey)
    }

    /// The cipher of a new byte file of entry `owner`, with a new random file id.
    public func newFileCipher(owner: EntryID) -> FileCipher {
        FileCipher(dataKey: dataKey, header: .random(blockSize: layout.blockSize), owner: owner)
    }

    public func fileCipher(for header: FileHeader, owner: EntryID) -> FileCipher {
        FileCipher(dataKey: dataKey, header: header, owner: owner)
    }
}
