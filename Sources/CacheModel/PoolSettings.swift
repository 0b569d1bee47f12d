import CachePolicy

/// What "older" means for a pool's max age.
public enum AgeBasis: String, Sendable, Codable, CaseIterable {
    case access
    case modification
}

/// A pool's settings: its limits, origin, eviction choice and goal, and trace switch (the replacement
/// policy that `eviction` chooses is a ``PolicyKind``). Zero means unlimited (or never, for ages).
public struct PoolSettings: Sendable, Equatable, Codable {
    public var maxSize: Int64
    public var maxAgeSeconds: Int64
    public var ageBasis: AgeBasis
    public var maxFiles: Int64
    /// Percent of max_size (and max_files) the evictor brings a pool down to once over.
    public var lowWatermarkPercent: Int64
    /// The `user.cache.origin` URL of a read-through pool; empty for none.
    public var origin: String
    /// How long a name the origin lacks is answered ENOENT without asking it again.
    public var negativeTTLSeconds: Int64
    /// Concurrent fetches from the origin; further fetches wait for a slot.
    public var maxFetches: Int64
    /// `user.cache.revalidate`: how long a fetched file is trusted before its next open asks
    /// the origin whether it changed (0 = at every open); ``neverRevalidate`` (the default)
    /// trusts it for as long as it is cached.
    public var revalidateSeconds: Int64
    /// `user.cache.stale_if_error`: how long past its `revalidate` a fetched file is still
    /// served when the origin cannot be asked (0 = never: the open fails with EIO).
    public var staleIfErrorSeconds: Int64
    /// `user.cache.admit_max_size`, `admit_min_size`: files of the origin larger (smaller) than
    /// this are fetched for their readers but not kept (0 = no bound).
    public var admitMaxSize: Int64
    public var admitMinSize: Int64
    /// `user.cache.admit_after`, `admit_window`: a file of the origin is kept from its Nth miss
    /// within the window on; the misses before are served without being kept (1 = every miss).
    public var admitAfter: Int64
    public var admitWindowSeconds: Int64
    /// `user.cache.block_size`: the bytes a read-through pool fetches from the origin at a time
    /// (a multiple of 1 MiB from 1 MiB to 1 GiB); 0 fetches whole files.
    public var blockSize: Int64
    /// `user.cache.cache_control`: the pool honours the origin's HTTP `Cache-Control`
    /// (off by default).
    public var cacheControl: Bool
    /// `user.cache.shared`: the `redis://` or `s3://` URL of the shared tier the pool reads misses from
    /// and writes its finished files to (docs/shared-tier.md); empty for none. Never a password.
    public var shared: String
    /// `user.cache.shared_max_file_size`: larger files are not written to the shared tier.
    public var sharedMaxFileSize: Int64

    /// `user.cache.eviction`: which files go first.
    public var eviction: EvictionChoice
    /// The policy an `auto` pool runs now (kept so a remount starts from it).
    public var autoActive: PolicyKind

    /// `user.cache.min_size`: the floor a disk-pressure pass leaves the pool at while another
    /// pool is above its own (its `max_size` still evicts below it).
    public var minSize: Int64

    /// `user.cache.trace`: the pool appends its accesses to `STORE/traces/POOL.csv`, for
    /// `cachefs replay`.
    public var recordsTrace: Bool

    /// `user.cache.goal`: what the pool's evictions save (files, bytes or miss cost), and so
    /// what a size- and cost-aware policy (`gdsf`) weighs each file by.
    public var goal: CacheGoal

    /// The replacement policy that chooses victims now.
    public var activePolicy: PolicyKind { eviction.fixedKind ?? autoActive }

    public static let defaultNegativeTTLSeconds = Tunables.negativeTTLSeconds
    public static let defaultMaxFetches = Tunables.maxFetches
    /// `revalidate` of `never`: a fetched copy is trusted while it is cached.
    public static let neverRevalidate: Int64 = -1
    public static let defaultAdmitWindowSeconds = Tunables.admitWindowSeconds
    public static let defaultBlockSize: Int64 = 4 * 1024 * 1024
    public static let defaultSharedMaxFileSize = Tunables.sharedMaxFileSize

    /// Whether a file of the origin of `size` bytes may be kept, by the pool's size bounds.
    public func admits(size: Int64) -> Bool { admission.admits(size: size) }

    /// Its `admit_*` bounds as the simulator reads them too.
    public var admission: AdmissionRule {
        AdmissionRule(maxSize: admitMaxSize, minSize: admitMinSize, after: admitAfter)
    }

    /// Whether a file fetched (or last found unchanged) at `validated` needs the origin's word
    /// before it is served at `now` (both nanoseconds).
    public func needsRevalidation(validatedAt validated: Int64, now: Int64) -> Bool {
        let due = revalidationDue(validatedAt: validated)
        return due != .max && now >= due
    }

    /// When a file fetched (or last found unchanged) at `validated` is due to be asked about
    /// again: `Int64.max` for never.
    public func revalidationDue(validatedAt validated: Int64) -> Int64 {
        guard revalidateSeconds != Self.neverRevalidate else { return .max }
        let (due, overflow) = validated.addingReportingOverflow(Self.nanoseconds(revalidateSeconds))
        return overflow ? .max : due
    }

    /// Whether a file whose revalidation has been due since `due` may still be served at
    /// `now` when the origin cannot be asked.
    public func servesStale(dueSince due: Int64, now: Int64) -> Bool {
        let window = Self.nanoseconds(staleIfErrorSeconds)
        return staleIfErrorSeconds > 0 && now >= due && (window == .max || now - due < window)
    }

    /// `seconds` in nanoseconds, at most `Int64.max` (a duration of centuries is "forever").
    public static func nanoseconds(_ seconds: Int64) -> Int64 {
        let (value, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : value
    }

    public init(maxSize: Int64 = Tunables.poolMaxSizeBytes, maxAgeSeconds: Int64 = 0, ageBasis: AgeBasis = .access,
                maxFiles: Int64 = 0, lowWatermarkPercent: Int64 = Tunables.lowWatermarkPercent, origin: String = "",
                negativeTTLSeconds: Int64 = defaultNegativeTTLSeconds, maxFetches: Int64 = defaultMaxFetches,
                eviction: EvictionChoice = .lru, autoActive: PolicyKind = .lru, recordsTrace: Bool = false,
                minSize: Int64 = 0, goal: CacheGoal = .files, revalidateSeconds: Int64 = neverRevalidate,
                staleIfErrorSeconds: Int64 = 0, admitMaxSize: Int64 = 0, admitMinSize: Int64 = 0,
                admitAfter: Int64 = 1, admitWindowSeconds: Int64 = defaultAdmitWindowSeconds,
                blockSize: Int64 = defaultBlockSize, cacheControl: Bool = false, shared: String = "",
                sharedMaxFileSize: Int64 = defaultSharedMaxFileSize) {
        self.shared = shared
        self.sharedMaxFileSize = sharedMaxFileSize
        self.admitMaxSize = admitMaxSize
        self.admitMinSize = admitMinSize
        self.blockSize = blockSize
        self.cacheControl = cacheControl
        self.admitAfter = admitAfter
        self.admitWindowSeconds = admitWindowSeconds
        self.revalidateSeconds = revalidateSeconds
        self.staleIfErrorSeconds = staleIfErrorSeconds
        self.goal = goal
        self.minSize = minSize
        self.recordsTrace = recordsTrace
        self.eviction = eviction
        self.autoActive = autoActive
        self.origin = origin
        self.negativeTTLSeconds = negativeTTLSeconds
        self.maxFetches = maxFetches
        self.maxSize = maxSize
        self.maxAgeSeconds = maxAgeSeconds
        self.ageBasis = ageBasis
        self.maxFiles = maxFiles
        self.lowWatermarkPercent = lowWatermarkPercent
    }

    public static let defaultPools: [(name: String, settings: PoolSettings)] = [
        ("data", PoolSettings(maxSize: Tunables.poolMaxSizeBytes)),
        ("thumbnails", PoolSettings(maxSize: 5 << 20)),
        ("avatars", PoolSettings(maxSize: 5 << 20, maxAgeSeconds: 7 * 86400)),
    ]
}

/// Decoded by hand only so that settings sealed before `goal`, the freshness, the admission
/// settings, `block_size`, `cache_control` and `shared` existed (an encrypted store's `pool.sealed`) still
/// open: a missing one takes its default.
extension PoolSettings {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            maxSize: try container.decode(Int64.self, forKey: .maxSize),
            maxAgeSeconds: try container.decode(Int64.self, forKey: .maxAgeSeconds),
            ageBasis: try container.decode(AgeBasis.self, forKey: .ageBasis),
            maxFiles: try container.decode(Int64.self, forKey: .maxFiles),
            lowWatermarkPercent: try container.decode(Int64.self, forKey: .lowWatermarkPercent),
            origin: try container.decode(String.self, forKey: .origin),
            negativeTTLSeconds: try container.decode(Int64.self, forKey: .negativeTTLSeconds),
            maxFetches: try container.decode(Int64.self, forKey: .maxFetches),
            eviction: try container.decode(EvictionChoice.self, forKey: .eviction),
            autoActive: try container.decode(PolicyKind.self, forKey: .autoActive),
            recordsTrace: try container.decode(Bool.self, forKey: .recordsTrace),
            minSize: try container.decode(Int64.self, forKey: .minSize),
            goal: try container.decodeIfPresent(CacheGoal.self, forKey: .goal) ?? .files,
            revalidateSeconds: try container.decodeIfPresent(Int64.self, forKey: .revalidateSeconds)
                ?? Self.neverRevalidate,
            staleIfErrorSeconds: try container.decodeIfPresent(Int64.self, forKey: .staleIfErrorSeconds) ?? 0,
            admitMaxSize: try container.decodeIfPresent(Int64.self, forKey: .admitMaxSize) ?? 0,
            admitMinSize: try container.decodeIfPresent(Int64.self, forKey: .admitMinSize) ?? 0,
            admitAfter: try container.decodeIfPresent(Int64.self, forKey: .admitAfter) ?? 1,
            admitWindowSeconds: try container.decodeIfPresent(Int64.self, forKey: .admitWindowSeconds)
                ?? Self.defaultAdmitWindowSeconds,
            blockSize: try container.decodeIfPresent(Int64.self, forKey: .blockSize) ?? Self.defaultBlockSize,
            cacheControl: try container.decodeIfPresent(Bool.self, forKey: .cacheControl) ?? false,
            shared: try container.decodeIfPresent(String.self, forKey: .shared) ?? "",
            sharedMaxFileSize: try container.decodeIfPresent(Int64.self, forKey: .sharedMaxFileSize)
                ?? Self.defaultSharedMaxFileSize)
    }
}

/// A `--pool NAME=SIZE[,AGE]` mount option.
public struct PoolOverride: Sendable, Equatable {
    public var name: String
    public var maxSize: Int64
    public var maxAgeSeconds: Int64?

    public init(name: String, maxSize: Int64, maxAgeSeconds: Int64?) {
        self.name = name
        self.maxSize = maxSize
        self.maxAgeSeconds = maxAgeSeconds
    }

    /// Parses `NAME=SIZE[,AGE]`, for example `data=100M` or `avatars=5M,7d`.
    public static func parse(_ text: String) -> PoolOverride? {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let name = String(text[..<equals])
        guard PoolOverride.isValidPoolName(name) else { return nil }
        let parts = text[text.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let size = ValueParsing.byteSize(String(parts[0])) else {
            return nil
        }
        var age: Int64?
        if parts.count == 2 {
            guard let parsed = ValueParsing.durationSeconds(String(parts[1])) else { return nil }
            age = parsed
        }
        return PoolOverride(name: name, maxSize: size, maxAgeSeconds: age)
    }

    public static func isValidPoolName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && name.utf8.count <= 255
    }
}
