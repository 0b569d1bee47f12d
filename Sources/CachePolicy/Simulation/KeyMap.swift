/// A hash map from `CacheKey` to a small value, for the simulator's per-object
/// lookups: open addressing with linear probing and backward-shift deletion, and a
/// multiplicative hash (keys are entry ids or already-mixed fingerprints). About a tenth of
/// `Dictionary`'s cost per lookup, whose SipHash dominated a policy's work per request.
struct KeyMap<Value: FixedWidthInteger & Sendable>: Sendable {
    private var keys: [CacheKey] = []
    private var values: [Value] = []
    private var occupied: [Bool] = []
    private var mask = -1
    private(set) var count = 0

    /// Its arrays' bytes (see `MemoryBytes`).
    var memoryBytes: Int { MemoryBytes.of(keys) + MemoryBytes.of(values) + MemoryBytes.of(occupied) }

    init() {}

    private func bucket(_ key: CacheKey) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: key) &* 0x9e37_79b9_7f4a_7c15) >> 17) & mask
    }

    subscript(key: CacheKey) -> Value? {
        get {
            guard count > 0 else { return nil }
            var index = bucket(key)
            while occupied[index] {
                if keys[index] == key { return values[index] }
                index = (index + 1) & mask
            }
            return nil
        }
        set {
            if let newValue { set(key, newValue) } else { _ = removeValue(forKey: key) }
        }
    }

    private mutating func set(_ key: CacheKey, _ value: Value) {
        if (count + 1) * 4 > (mask + 1) * 3 { grow() }
        var index = bucket(key)
        while occupied[index] {
            if keys[index] == key {
                values[index] = value
                return
            }
            index = (index + 1) & mask
        }
        occupied[index] = true
        keys[index] = key
        values[index] = value
        count += 1
    }

    @discardableResult
    mutating func removeValue(forKey key: CacheKey) -> Value? {
        guard count > 0 else { return nil }
        var index = bucket(key)
        while occupied[index] {
            if keys[index] == key {
                let removed = values[index]
                shiftBack(from: index)
                count -= 1
                return removed
            }
            index = (index + 1) & mask
        }
        return nil
    }

    /// Backward-shift deletion: later entries of the probe run move into the hole, so no
    /// tombstones pile up and lookups stay short.
    private mutating func shiftBack(from hole: Int) {
        var hole = hole
        var index = (hole + 1) & mask
        while occupied[index] {
            let home = bucket(keys[index])
            // The entry may move to the hole if its home is not in (hole, index] cyclically.
            let distanceToHole = (index - home) & mask
            let distanceFromHole = (index - hole) & mask
            if distanceToHole >= distanceFromHole {
                keys[hole] = keys[index]
                values[hole] = values[index]
                hole = index
            }
            index = (index + 1) & mask
        }
        occupied[hole] = false
    }

    private mutating func grow() {
        let oldKeys = keys
        let oldValues = values
        let oldOccupied = occupied
        let capacity = max(16, (mask + 1) * 2)
        keys = Array(repeating: 0, count: capacity)
        values = Array(repeating: 0, count: capacity)
        occupied = Array(repeating: false, count: capacity)
        mask = capacity - 1
        count = 0
        for index in oldKeys.indices where oldOccupied[index] { set(oldKeys[index], oldValues[index]) }
    }

    /// Every key (in no particular order).
    var allKeys: [CacheKey] {
        keys.indices.filter { occupied[$0] }.map { keys[$0] }
    }
}
