import CacheModel
import CacheNames
import Logging

/// Everything a ``CacheEngine`` is opened with. Its timing defaults are ``Tunables``'.
public struct EngineConfiguration: Sendable {
    public var storePath: String
    public var poolOverrides: [PoolOverride]
    /// A `min_free` mount option; persisted in the store. Nil keeps the stored value.
    public var minFree: MinFree?
    public var clock: any WallClock
    public var disk: any Disk
    public var notifier: any KernelNotifier
    public var logger: Logger
    /// How often access times gathered in memory are written to the index.
    public var accessFlushSeconds: Double
    /// How often the age sweep runs (lookups also expire files lazily in between).
    public var sweepSeconds: Double
    /// How often free space on the store's filesystem is checked against min_free.
    public var pressureCheckSeconds: Double
    /// How often closed files are synced to the disk in a batch and marked durable.
    public var durabilitySeconds: Double
    /// How long the index writer lets changes gather before it commits them as one group.
    public var commitWindowSeconds: Double
    /// Size at which events.jsonl is rotated.
    public var eventLogMaxBytes: Int64
    /// `--origin POOL=URL` options; persisted with the pool's policy.
    public var origins: [OriginOverride] = []
    public var originSettings = OriginSettings()
    /// The shared tier's password and deadlines (docs/shared-tier.md).
    public var sharedTier = SharedTierConfiguration()
    /// `-o memory_budget`, `memory_idle`: when idle directories leave memory.
    public var memoryBudget = MemoryBudget()
    /// The unlocked keys of an encrypted store (`cachefs mount --encrypt`, see
    /// ``StoreKeyFile``); nil for a plaintext store.
    public var encryption: StoreEncryption?
    /// Where the namespace reads directories not loaded yet: the index, or a test double
    /// around it.
    var directorySource: @Sendable (IndexDatabase) -> any DirectorySource = { $0 }

    public init(storePath: String, poolOverrides: [PoolOverride] = [], minFree: MinFree? = nil,
                clock: any WallClock = SystemClock(), disk: any Disk = PosixDisk(),
                notifier: any KernelNotifier = SilentNotifier(), logger: Logger = Logger(label: "cachefs"),
                accessFlushSeconds: Double = Tunables.accessFlushSeconds, sweepSeconds: Double = Tunables.sweepSeconds,
                pressureCheckSeconds: Double = Tunables.pressureCheckSeconds,
                durabilitySeconds: Double = Tunables.durabilitySeconds,
                commitWindowSeconds: Double = Tunables.commitWindowSeconds,
                eventLogMaxBytes: Int64 = Tunables.eventLogBytes) {
        self.storePath = storePath
        self.poolOverrides = poolOverrides
        self.minFree = minFree
        self.clock = clock
        self.disk = disk
        self.notifier = notifier
        self.logger = logger
        self.accessFlushSeconds = accessFlushSeconds
        self.sweepSeconds = sweepSeconds
        self.pressureCheckSeconds = pressureCheckSeconds
        self.durabilitySeconds = durabilitySeconds
        self.commitWindowSeconds = commitWindowSeconds
        self.eventLogMaxBytes = eventLogMaxBytes
    }
}
