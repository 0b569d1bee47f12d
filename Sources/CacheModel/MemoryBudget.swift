/// How many entries the daemon keeps loaded before idle directories leave memory
/// (`-o memory_budget=SIZE,memory_idle=SECONDS`), and after how long without use.
public struct MemoryBudget: Sendable, Equatable {
    /// Memory for loaded names, in bytes: ``Tunables/bytesPerLoadedEntry`` an entry, plus what
    /// its inode holds beyond (a name longer than 14 bytes, hard links, a symlink target).
    public var bytes: Int64
    /// How long a directory goes unused before it may leave memory.
    public var idleSeconds: Double

    public init(bytes: Int64 = Tunables.memoryBudgetBytes, idleSeconds: Double = Tunables.memoryIdleSeconds) {
        self.bytes = bytes
        self.idleSeconds = idleSeconds
    }

    /// The budget as a number of loaded entries with short names and nothing beyond.
    public var entries: Int { Int(bytes / Tunables.bytesPerLoadedEntry) }

    /// How often the unloader compares the loaded entries with the budget.
    public var checkSeconds: Double { min(Tunables.memoryCheckSeconds, max(0.1, idleSeconds / 2)) }
}
