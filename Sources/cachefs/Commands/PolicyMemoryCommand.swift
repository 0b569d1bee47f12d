import ArgumentParser
import CachePolicy

/// `cachefs policy-memory`: the bytes each replacement policy holds for a count of residents,
/// built as a pool's build builds it (its reservation, then every resident restored); hidden
/// (a reference for scripts/bench, which reads the running pool's `policy_memory_bytes`).
struct PolicyMemoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy-memory", abstract: "Print each policy's memory for a count of residents.",
        shouldDisplay: false)

    @Option(help: "Resident files.") var residents = 100_000
    @Option(help: "Each file's size in bytes.") var size: Int64 = 1024

    func validate() throws {
        guard residents > 0, size > 0 else { throw ValidationError("--residents and --size must be positive") }
    }

    /// One line per policy: its name, then the bytes its storage holds (`memoryBytes`).
    func run() throws {
        for kind in PolicyKind.allCases {
            var policy = AnyReplacementPolicy(kind: kind, goal: .files)
            policy.reserveCapacity(AnyReplacementPolicy.reservation(forResidents: residents))
            for key in 0..<residents {
                policy.restore(CacheKey(key), fingerprint: UInt64(key) &* 0x9e37_79b9_7f4a_7c15, size: size,
                               cost: CacheGoal.files.cost(size: size, measured: 1))
            }
            print(kind.rawValue, policy.memoryBytes)
        }
    }
}
