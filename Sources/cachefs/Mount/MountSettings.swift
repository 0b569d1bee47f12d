import CacheCore
import CacheModel
import FuseAdapter
import Logging

/// The parsed `--pool`, `-o`, `--log-level` and `--foreground` options of `cachefs mount`.
/// Every one of them can also be given with `-o` (`pool=NAME:SIZE[:AGE]`, `log_level=LEVEL`,
/// `foreground`), since mount(8) and /etc/fstab pass nothing else.
struct MountSettings {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    var pools: [PoolOverride] = []
    var fuse = FuseMountOptions()
    var minFree: MinFree?
    /// `memory_budget=SIZE`, `memory_idle=SECONDS`: when idle directories leave memory.
    var memoryBudget = MemoryBudget()
    var sweepSeconds = Tunables.sweepSeconds
    var syncSeconds = Tunables.durabilitySeconds
    /// How long the index writer lets changes gather before a group commit.
    var commitSeconds = Tunables.commitWindowSeconds
    var writebackBoost = false
    /// `kernel_hits[=on|off]`: nil when not given (then on where it can be; see `init`).
    var kernelHits: Bool?
    /// Where the daemon keeps Prometheus metrics for node_exporter's textfile collector.
    var metricsFile: String?
    var metricsSeconds = Tunables.metricsSeconds
    var logLevel: Logger.Level = .info
    var foreground = false
    /// Read-through pools: `--origin POOL=URL` (`-o origin=POOL=URL`).
    var origins: [OriginOverride] = []
    /// `-o s3_endpoint=URL`: where s3:// origins send their requests (else AWS).
    var s3Endpoint: S3Endpoint?
    /// `--encrypt` (`-o encrypt`): create the store encrypted (see `MountKeys`).
    var encrypt = false
    /// `--key-file PATH` (`-o key_file=PATH`): the key, or a passphrase, of an encrypted store.
    var keyFile: String?
    /// `-o shared_password_file=PATH`: the password of the pools' shared tier (never in their settings).
    var sharedPasswordFile: String?
    /// `-o shared_ca_file=PATH`: the CA bundle a TLS shared tier's certificate must verify against.
    var sharedCAFile: String?
    /// `-o shared_lookup_ms=N`: how long a miss waits for the shared tier before it is a miss.
    var sharedLookupMilliseconds: Int64?

    init(pools: [String], options: [String], logLevel: String, foreground: Bool = false, origins: [String] = []) throws {
        for text in origins { try addOrigin(text) }
        for text in pools {
            guard let override = PoolOverride.parse(text) else {
                throw Problem(description: "bad --pool '\(text)': expected NAME=SIZE[,AGE], e.g. data=100M or avatars=5M,7d")
            }
            self.pools.append(override)
        }
        self.logLevel = try Self.level(logLevel, option: "--log-level")
        self.foreground = foreground
        for option in options.flatMap({ $0.split(separator: ",") }) {
            try apply(String(option))
        }
        // The writeback cache's bytes reach the daemon at write-back, after the close that no
        // request marks any more: nothing would tell when such a file is complete.
        // An eviction pass may read the close events on a request's thread; the kernel's
        // first event descriptor can then send one more request, which needs a second thread.
        if kernelHits == true && fuse.singleThreaded {
            throw Problem(description: "kernel_hits and single_threaded cannot be used together: reading the kernel's close events can need a second request thread")
        }
        if kernelHits == true && fuse.writebackCache {
            throw Problem(description: "kernel_hits and writeback_cache cannot be used together: with kernel_hits no close reaches the daemon, and the writeback cache writes a file's bytes after its close (choose one; see docs/design-choices.md)")
        }
        // On unless turned off, or unless an option it cannot go with was chosen.
        fuse.kernelHits = kernelHits ?? !(fuse.singleThreaded || fuse.writebackCache)
    }

    private static func level(_ text: String, option: String) throws -> Logger.Level {
        guard let level = Logger.Level(rawValue: text) else {
            throw Problem(description: "bad \(option) '\(text)': expected trace, debug, info, notice, warning, error or critical")
        }
        return level
    }

    /// `pool=NAME:SIZE[:AGE]`, the `-o` form of `--pool NAME=SIZE[,AGE]` (a comma would end the option).
    /// A path option's value; one that is missing or empty says what it takes.
    private static func path(_ value: String?, option: String, example: String) throws -> String {
        guard let value, !value.isEmpty else {
            throw Problem(description: "mount option \(option) needs a path, as in \(option)=\(example)")
        }
        return value
    }

    private static func pool(_ text: String?) throws -> PoolOverride {
        let parts = text?.split(separator: ":", omittingEmptySubsequences: false).map(String.init) ?? []
        let asPoolArgument = parts.count == 2 ? "\(parts[0])=\(parts[1])"
            : parts.count == 3 ? "\(parts[0])=\(parts[1]),\(parts[2])" : ""
        guard let override = PoolOverride.parse(asPoolArgument) else {
            throw Problem(description: "bad mount option pool=\(text ?? ""): expected pool=NAME:SIZE[:AGE], e.g. pool=data:100M or pool=avatars:5M:7d")
        }
        return override
    }

    private mutating func addOrigin(_ text: String) throws {
        switch OriginOverride.parse(text) {
        case .success(let origin): origins.append(origin)
        case .failure(let reason): throw Problem(description: "bad origin '\(text)': \(reason)")
        }
    }

    private mutating func apply(_ option: String) throws {
        let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
        let key = parts[0]
        let value = parts.count > 1 ? parts[1] : nil
        func number(_ text: String?) throws -> Double {
            guard let text, let parsed = Double(text), parsed >= 0 else {
                throw Problem(description: "mount option \(key) needs a number, as in \(key)=1")
            }
            return parsed
        }
        switch key {
        case "allow_other": fuse.allowOther = true
        case "writeback_boost": writebackBoost = true
        case "writeback_cache": fuse.writebackCache = true
        case "kernel_hits":
            switch value {
            case nil, "1", "on", "yes": kernelHits = true
            case "0", "off", "no": kernelHits = false
            default: throw Problem(description: "kernel_hits takes on or off (kernel_hits=off), not '\(value ?? "")'")
            }
        case "debug": fuse.debug = true
        case "default_permissions": break
        case "single_threaded": fuse.singleThreaded = true
        case "threads":
            let count = try number(value)
            guard count >= 1, count <= 64 else { throw Problem(description: "threads must be from 1 to 64") }
            fuse.maxThreads = UInt32(count)
        case "entry_timeout": fuse.timeouts.entries = try number(value)
        case "attr_timeout": fuse.timeouts.attributes = try number(value)
        case "sweep_interval":
            let seconds = try number(value)
            guard seconds >= 0.1 else { throw Problem(description: "sweep_interval must be at least 0.1 seconds") }
            sweepSeconds = seconds
        case "commit_interval":
            let milliseconds = try number(value)
            guard (0...1000).contains(milliseconds) else {
                throw Problem(description: "commit_interval must be 0 to 1000 milliseconds")
            }
            commitSeconds = milliseconds / 1000
        case "sync_interval":
            let seconds = try number(value)
            guard seconds >= 0.1 else { throw Problem(description: "sync_interval must be at least 0.1 seconds") }
            syncSeconds = seconds
        case "metrics_file":
            metricsFile = try Self.path(value, option: "metrics_file", example: "/var/lib/node_exporter/cachefs.prom")
        case "metrics_interval":
            let seconds = try number(value)
            guard seconds >= 0.1 else { throw Problem(description: "metrics_interval must be at least 0.1 seconds") }
            metricsSeconds = seconds
        case "pool": pools.append(try Self.pool(value))
        case "origin": try addOrigin(value ?? "")
        case "s3_endpoint":
            switch S3Endpoint.parse(value ?? "") {
            case .success(let endpoint): s3Endpoint = endpoint
            case .failure(let reason): throw Problem(description: "bad mount option s3_endpoint: \(reason)")
            }
        case "log_level": logLevel = try Self.level(value ?? "", option: "log_level")
        case "foreground": foreground = true
        case "encrypt": encrypt = true
        case "key_file":
            keyFile = try Self.path(value, option: "key_file", example: "/etc/cachefs/store.key")
        case "shared_password_file":
            sharedPasswordFile = try Self.path(value, option: "shared_password_file", example: "/etc/cachefs/redis.password")
        case "shared_ca_file":
            sharedCAFile = try Self.path(value, option: "shared_ca_file", example: "/etc/cachefs/redis-ca.pem")
        case "shared_lookup_ms":
            guard let value, let milliseconds = Int64(value), (1...60_000).contains(milliseconds) else {
                throw Problem(description: "mount option shared_lookup_ms needs milliseconds from 1 to 60000, as in shared_lookup_ms=500")
            }
            sharedLookupMilliseconds = milliseconds
        case "memory_budget":
            guard let value, let bytes = ValueParsing.byteSize(value), bytes >= 0 else {
                throw Problem(description: "mount option memory_budget needs a size, as in memory_budget=128M")
            }
            memoryBudget.bytes = bytes
        case "memory_idle":
            let seconds = try number(value)
            guard seconds >= 1 else { throw Problem(description: "memory_idle must be at least 1 second") }
            memoryBudget.idleSeconds = seconds
        case "min_free":
            guard let value, let parsed = MinFree.parse(value) else {
                throw Problem(description: "mount option min_free needs a size or percentage, as in min_free=1G or min_free=5%")
            }
            minFree = parsed
        default:
            if GenericMountOptions.kernelFlags.contains(option) {
                fuse.kernelFlags.append(option)
            } else if !GenericMountOptions.isIgnored(option) {
                throw Problem(description: "unknown mount option '\(option)' (see cachefs mount --help)")
            }
        }
    }
}
