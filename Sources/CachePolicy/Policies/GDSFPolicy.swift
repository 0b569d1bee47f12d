/// GreedyDual-Size-Frequency (Cao and Irani '97; Cherkasova '98; Squid's `heap GDSF`): each
/// resident object has a priority H = L + frequency × cost / size, and the victim is the
/// object of lowest H (of equal ones, the one whose H was set first). The clock L rises to
/// each victim's H, so an object not read for a while falls behind newcomers: aging without
/// a sweep. A read adds one to the frequency and sets H again from the current L.
///
/// Cost comes from the cache's goal (``CacheGoal/cost(size:measured:)``): with 1 per object
/// GDSF keeps many small files (object hits); with the size, every object gains the same per
/// read and it is LFU with aging (byte hits); with the measured cost it keeps what was slow
/// to fetch per byte it takes. `gdsf-files` (`weighsEveryFileAlike`) takes 1 whatever the
/// goal: where the popular files are the small ones, keeping them saves more bytes than LFU
/// with aging does, since a large file read twice by chance no longer holds the room of
/// hundreds of small ones.
///
/// An indexed binary min-heap: O(log n) per insert, read, removal and eviction; an ineligible
/// object met by `evict` is set aside and put back with its priority unchanged. Memory per
/// object: a 32-byte ``GDSFEntry`` in one array (slots of removed objects are reused), a
/// 4-byte heap slot and a `SlotIndex`'s 4-byte buckets (1.3 to 2 of them): 41 to 44 bytes,
/// 46.5 with the eighth more a build from the index reserves.
public struct GDSFPolicy: ReplacementPolicy {
    private var entries: [GDSFEntry] = []
    /// The sizes of 4 GiB or more, by slot.
    private var sizes = NarrowSizes(bits: 32)
    private var freeSlots: [Int32] = []
    private var index = SlotIndex()
    /// Slots in heap order: the lowest priority at 0.
    private var heap: [Int32] = []
    /// L: the priority of the last victim (never lower than before).
    public private(set) var clock: Double = 0
    private var lastSequence: UInt32 = 0
    /// The last sequence handed out before the residents are numbered again (lower in tests).
    private let sequenceLimit: UInt32
    public private(set) var residentBytes: Int64 = 0

    /// Every miss costs 1, whatever `cost` the caller passes (`gdsf-files`).
    public let weighsEveryFileAlike: Bool

    public init() { self.init(sequenceLimit: .max) }

    public init(weighsEveryFileAlike: Bool) { self.init(sequenceLimit: .max, weighsEveryFileAlike: weighsEveryFileAlike) }

    init(sequenceLimit: UInt32, weighsEveryFileAlike: Bool = false) {
        self.sequenceLimit = sequenceLimit
        self.weighsEveryFileAlike = weighsEveryFileAlike
    }

    public var count: Int { heap.count }

    public var memoryBytes: Int {
        MemoryBytes.of(entries) + sizes.memoryBytes + MemoryBytes.of(freeSlots) + index.memoryBytes
            + MemoryBytes.of(heap)
    }

    private func entrySlot(of key: CacheKey) -> Int32? { index.slot(of: key, in: entries) }

    public func contains(_ key: CacheKey) -> Bool { entrySlot(of: key) != nil }

    /// GDSF keeps no fingerprints: nil for every key (a switch to another policy takes them
    /// from elsewhere).
    public func fingerprint(of key: CacheKey) -> UInt64? { nil }

    public func size(of key: CacheKey) -> Int64? { entrySlot(of: key).map { size(at: $0) } }

    private func size(at slot: Int32) -> Int64 { sizes.size(entries[Int(slot)].narrowSize, at: slot) }

    /// Sets a slot's size, narrow or wide (its entry must be in place).
    private mutating func setSize(_ size: Int64, at slot: Int32) {
        entries[Int(slot)].narrowSize = sizes.store(size, at: slot, replacing: entries[Int(slot)].narrowSize)
    }

    private func density(of slot: Int32) -> Double {
        entries[Int(slot)].weight.density(size: size(at: slot))
    }

    private func weight(cost: Double, size: Int64) -> MissWeight {
        weighsEveryFileAlike ? .one : MissWeight(cost: cost, size: size)
    }

    /// A resident object's priority (for tests and previews).
    public func priority(of key: CacheKey) -> Double? { entrySlot(of: key).map { entries[Int($0)].priority } }

    /// A resident object's read count since it entered.
    public func frequency(of key: CacheKey) -> Int? { entrySlot(of: key).map { Int(entries[Int($0)].frequency) } }


    private mutating func takeSequence() -> UInt32 {
        if lastSequence == sequenceLimit { renumberSequences() }
        lastSequence += 1
        return lastSequence
    }

    /// Numbers the residents 1, 2, … in the order of their sequences: every comparison of
    /// two residents comes out as before, so the heap stays in order and no decision changes.
    private mutating func renumberSequences() {
        precondition(heap.count < Int(sequenceLimit), "more residents than sequences")
        let order = heap.sorted { entries[Int($0)].sequence < entries[Int($1)].sequence }
        for (number, slot) in order.enumerated() { entries[Int(slot)].sequence = UInt32(number + 1) }
        lastSequence = UInt32(order.count)
    }

    public mutating func insert(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        if entrySlot(of: key) != nil {
            access(key)
            return
        }
        let weight = weight(cost: cost, size: size)
        let entry = GDSFEntry(key: key, priority: clock + weight.density(size: size), sequence: takeSequence(),
                              heapPosition: Int32(heap.count), narrowSize: 0, frequency: 1, weight: weight)
        let slot: Int32
        if let reused = freeSlots.popLast() {
            slot = reused
            entries[Int(slot)] = entry
        } else {
            slot = Int32(entries.count)
            entries.append(entry)
        }
        setSize(size, at: slot)
        index.insert(slot, in: entries)
        heap.append(slot)
        residentBytes += size
        siftUp(heap.count - 1)
    }

    /// Placed as a newcomer read once: the read counts of before the rebuild are lost.
    public mutating func restore(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        guard entrySlot(of: key) == nil else { return }
        insert(key, fingerprint: fingerprint, size: size, cost: cost)
    }

    public mutating func reserveCapacity(_ residents: Int) {
        entries.reserveCapacity(residents)
        heap.reserveCapacity(residents)
        index.reserveCapacity(residents, in: entries)
    }

    /// The priority keeps the clock it was set at; only its frequency × cost / size part
    /// changes with the new size and cost.
    public mutating func resize(_ key: CacheKey, size: Int64, cost: Double) {
        guard let slot = entrySlot(of: key) else { return }
        let frequency = Double(entries[Int(slot)].frequency)
        let base = entries[Int(slot)].priority - frequency * density(of: slot)
        residentBytes += size - self.size(at: slot)
        setSize(size, at: slot)
        entries[Int(slot)].weight = weight(cost: cost, size: size)
        entries[Int(slot)].priority = base + frequency * density(of: slot)
        restoreHeapOrder(at: Int(entries[Int(slot)].heapPosition))
    }

    public mutating func access(_ key: CacheKey) {
        guard let slot = entrySlot(of: key) else { return }
        let sequence = takeSequence()
        let density = density(of: slot)
        var entry = entries[Int(slot)]
        if entry.frequency < UInt16.max { entry.frequency += 1 }
        entry.priority = clock + Double(entry.frequency) * density
        entry.sequence = sequence
        entries[Int(slot)] = entry
        restoreHeapOrder(at: Int(entry.heapPosition))
    }

    public mutating func remove(_ key: CacheKey) {
        guard let slot = entrySlot(of: key) else { return }
        removeFromHeap(at: Int(entries[Int(slot)].heapPosition))
        forget(slot)
    }

    /// The lowest priority that may go; ineligible objects met first keep their priority.
    public mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        var setAside: [Int32] = []
        var victim: Int32?
        while let top = heap.first {
            removeFromHeap(at: 0)
            if isEligible(entries[Int(top)].key) {
                victim = top
                break
            }
            setAside.append(top)
        }
        for slot in setAside {
            entries[Int(slot)].heapPosition = Int32(heap.count)
            heap.append(slot)
            siftUp(heap.count - 1)
        }
        guard let victim else { return nil }
        let entry = entries[Int(victim)]
        clock = max(clock, entry.priority)
        forget(victim)
        return entry.key
    }

    private mutating func forget(_ slot: Int32) {
        index.remove(slot, in: entries)
        residentBytes -= size(at: slot)
        sizes.forget(entries[Int(slot)].narrowSize, at: slot)
        freeSlots.append(slot)
    }

    // MARK: - The heap

    private func isBelow(_ first: Int32, _ second: Int32) -> Bool {
        let left = entries[Int(first)]
        let right = entries[Int(second)]
        return left.priority < right.priority || left.priority == right.priority && left.sequence < right.sequence
    }

    private mutating func place(_ slot: Int32, at position: Int) {
        heap[position] = slot
        entries[Int(slot)].heapPosition = Int32(position)
    }

    private mutating func removeFromHeap(at position: Int) {
        let last = heap.removeLast()
        guard position < heap.count else { return }
        place(last, at: position)
        restoreHeapOrder(at: position)
    }

    private mutating func restoreHeapOrder(at position: Int) {
        if position > 0 && isBelow(heap[position], heap[(position - 1) / 2]) {
            siftUp(position)
        } else {
            siftDown(position)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var position = start
        let slot = heap[position]
        while position > 0 {
            let parent = (position - 1) / 2
            guard isBelow(slot, heap[parent]) else { break }
            place(heap[parent], at: position)
            position = parent
        }
        place(slot, at: position)
    }

    private mutating func siftDown(_ start: Int) {
        var position = start
        let slot = heap[position]
        while true {
            let left = 2 * position + 1
            guard left < heap.count else { break }
            let right = left + 1
            let lower = right < heap.count && isBelow(heap[right], heap[left]) ? right : left
            guard isBelow(heap[lower], slot) else { break }
            place(heap[lower], at: position)
            position = lower
        }
        place(slot, at: position)
    }
}
