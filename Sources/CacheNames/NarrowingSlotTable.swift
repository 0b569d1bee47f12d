/// A ``SlotTable`` of 4-byte ``NarrowSlot`` buckets while every slot fits one (up to
/// 16,777,213), and of 8-byte ``WideSlot``s for good from the first slot past `narrowLimit`.
/// Its keys must be hashed again from their slots (`rehash`): a narrow bucket keeps 8 bits of
/// the hash, and moving to wide buckets needs the whole.
struct NarrowingSlotTable: Sendable {
    private var narrow = SlotTable<NarrowSlot>()
    private var wide: SlotTable<WideSlot>?
    private let narrowLimit: UInt32

    /// `narrowLimit` is ``NarrowSlot``'s largest slot; tests pass a small one to reach the wide table.
    init(narrowLimit: UInt32 = NarrowSlot.largestSlot) {
        self.narrowLimit = min(narrowLimit, NarrowSlot.largestSlot)
    }

    var count: Int { wide?.count ?? narrow.count }
    var slots: [UInt32] { wide?.slots ?? narrow.slots }
    var bucketBytes: Int { wide?.bucketBytes ?? narrow.bucketBytes }

    func first(hash: UInt32, where matches: (UInt32) -> Bool) -> UInt32? {
        if let wide { return wide.first(hash: hash, where: matches) }
        return narrow.first(hash: hash, where: matches)
    }

    mutating func insert(_ slot: UInt32, hash: UInt32, rehash: (UInt32) -> UInt32) {
        if wide == nil && slot > narrowLimit {
            var table = SlotTable<WideSlot>()
            for stored in narrow.slots { table.insert(stored, hash: rehash(stored)) }
            wide = table
            narrow = SlotTable()
        }
        if wide != nil {
            wide!.insert(slot, hash: hash)
        } else {
            narrow.insert(slot, hash: hash, rehash: rehash)
        }
    }

    /// See ``SlotTable/reserve(_:rehash:)``.
    mutating func reserve(_ total: Int, rehash: (UInt32) -> UInt32) {
        if wide != nil { wide!.reserve(total, rehash: WideSlot.storedHashOnly) } else { narrow.reserve(total, rehash: rehash) }
    }

    @discardableResult
    mutating func remove(_ slot: UInt32, hash: UInt32, rehash: (UInt32) -> UInt32) -> Bool {
        if wide != nil { return wide!.remove(slot, hash: hash) }
        return narrow.remove(slot, hash: hash, rehash: rehash)
    }

    /// See ``SlotTable/remapSlots(_:)``.
    mutating func remapSlots(_ newSlot: [UInt32]) {
        narrow.remapSlots(newSlot)
        wide?.remapSlots(newSlot)
    }
}
