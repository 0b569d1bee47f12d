/// Belady's MIN, the offline optimum a policy is measured against: on a miss it evicts the
/// resident object whose next request is farthest away, and does not keep the new object
/// at all if its own next request is farther still (an optimal cache may bypass). With equal
/// sizes this is the best object hit ratio any cache of that capacity can have. With sizes
/// that differ (or costs) the exact optimum is NP-hard; this evicts by farthest next request
/// until the object fits, a heuristic an online policy can beat (GDSF does on the issue's
/// lognormal trace): there ``OptimumBound`` is the reference.
public enum BeladyOptimum {
    /// Requests before `warmup` fill the cache but are not counted.
    public static func run(_ trace: [TraceRequest], capacity: Int64, countsObjects: Bool = false,
                           warmup: Int = 0) -> HitFigures {
        let never = Int.max
        // The index of each get's next get of the same key.
        var nextUse = Array(repeating: never, count: trace.count)
        var seen: [CacheKey: Int] = [:]
        for index in trace.indices.reversed() where trace[index].operation == .get {
            nextUse[index] = seen[trace[index].key] ?? never
            seen[trace[index].key] = index
        }
        var figures = HitFigures()
        var sizes: [CacheKey: Int64] = [:]
        var currentNext: [CacheKey: Int] = [:]
        var heap = MaxHeap()
        var used: Int64 = 0
        func cost(_ size: Int64) -> Int64 { countsObjects ? 1 : size }

        for (index, request) in trace.enumerated() {
            switch request.operation {
            case .delete:
                if let size = sizes.removeValue(forKey: request.key) {
                    used -= cost(size)
                    currentNext[request.key] = nil
                }
                continue
            case .set:
                if let size = sizes.removeValue(forKey: request.key) {
                    used -= cost(size)
                    currentNext[request.key] = nil
                }
                // A new version is kept only for its next read (found from the next get).
                continue
            case .get:
                break
            }
            let next = nextUse[index]
            if sizes[request.key] != nil {
                if index >= warmup {
                    figures.record(hit: true, size: sizes[request.key] ?? request.size, cost: request.cost)
                }
                currentNext[request.key] = next
                heap.push(next, request.key)
                continue
            }
            if index >= warmup { figures.record(hit: false, size: request.size, cost: request.cost) }
            guard next != never, cost(request.size) <= capacity else { continue }
            // Make room from the farthest next use down; if the newcomer is the farthest, skip it.
            var admitted = true
            while used + cost(request.size) > capacity {
                guard let (farthest, victim) = heap.peekValid(currentNext) else { break }
                if farthest <= next {
                    admitted = false
                    break
                }
                heap.pop()
                used -= cost(sizes.removeValue(forKey: victim) ?? 0)
                currentNext[victim] = nil
            }
            guard admitted, used + cost(request.size) <= capacity else { continue }
            sizes[request.key] = request.size
            used += cost(request.size)
            currentNext[request.key] = next
            heap.push(next, request.key)
        }
        return figures
    }
}

/// A binary max-heap of (next use, key) with lazy deletion: entries whose key has another
/// next use by now are dropped when they surface.
struct MaxHeap {
    private var items: [(priority: Int, key: CacheKey)] = []

    mutating func push(_ priority: Int, _ key: CacheKey) {
        items.append((priority, key))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[parent].priority < items[child].priority else { break }
            items.swapAt(parent, child)
            child = parent
        }
    }

    /// The top entry that is still current, dropping stale ones on the way.
    mutating func peekValid(_ current: [CacheKey: Int]) -> (Int, CacheKey)? {
        while let top = items.first {
            if current[top.key] == top.priority { return (top.priority, top.key) }
            pop()
        }
        return nil
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var largest = parent
            if left < items.count && items[left].priority > items[largest].priority { largest = left }
            if right < items.count && items[right].priority > items[largest].priority { largest = right }
            guard largest != parent else { return }
            items.swapAt(parent, largest)
            parent = largest
        }
    }
}
