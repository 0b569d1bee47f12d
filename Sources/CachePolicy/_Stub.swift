// Temporary stand-in until the policy module lands (replaced at merge).
public enum Fingerprint {
    public static func of<S: Sequence>(_ bytes: S) -> UInt64 where S.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
    public static func of(parent: Int64, name: some Collection<UInt8>) -> UInt64 {
        var hash = of(name)
        hash ^= UInt64(bitPattern: parent) &* 0x9e37_79b9_7f4a_7c15
        return hash
    }
}

public struct AnyReplacementPolicy: Sendable {
    public private(set) var kind: PolicyKind
    private var order: [CacheKey] = []
    private var fingerprints: [CacheKey: UInt64] = [:]
    public init(kind: PolicyKind) { self.kind = kind }
    public var count: Int { order.count }
    public func contains(_ key: CacheKey) -> Bool { fingerprints[key] != nil }
    public mutating func insert(_ key: CacheKey, fingerprint: UInt64) {
        if contains(key) { access(key); return }
        order.append(key); fingerprints[key] = fingerprint
    }
    public mutating func restore(_ key: CacheKey, fingerprint: UInt64) { insert(key, fingerprint: fingerprint) }
    public mutating func access(_ key: CacheKey) {
        guard let index = order.firstIndex(of: key) else { return }
        order.remove(at: index); order.append(key)
    }
    public mutating func remove(_ key: CacheKey) {
        guard let index = order.firstIndex(of: key) else { return }
        order.remove(at: index); fingerprints[key] = nil
    }
    public mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        guard let index = order.firstIndex(where: isEligible) else { return nil }
        let key = order.remove(at: index); fingerprints[key] = nil
        return key
    }
    public func converted(to kind: PolicyKind) -> AnyReplacementPolicy {
        var copy = self; copy.kind = kind; return copy
    }
}

public struct PolicyAdvisor: Sendable {
    public private(set) var current: PolicyKind
    public init(current: PolicyKind, candidates: [PolicyKind] = PolicyKind.allCases, capacityBytes: Int64,
                capacityFiles: Int64) { self.current = current }
    public mutating func setCapacity(bytes: Int64, files: Int64) {}
    public mutating func setCurrent(_ kind: PolicyKind) { current = kind }
    public mutating func record(fingerprint: UInt64, size: Int64) {}
    public func hitRatios() -> [PolicyKind: Double] { [:] }
    public mutating func recommendation() -> (kind: PolicyKind, ratios: [PolicyKind: Double])? { nil }
    public func curve() -> [(multiplier: Double, sizeBytes: Int64, sizeFiles: Int64, hitRatio: Double)] { [] }
    public var sampledRequests: Int { 0 }
}
