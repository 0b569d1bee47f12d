import CacheModel
import CachePolicy
import Foundation
import Glibc

/// Writing `user.cache.*`: file and directory flags, pool settings, root settings, actions.
/// Every value is validated first; a bad one changes nothing.
extension Attributes {
    func setCacheAttribute(_ id: EntryID, name: String, text: String) throws {
        guard let attribute = CacheAttribute(rawValue: String(name.dropFirst(CacheAttribute.prefix.count))) else {
            throw CacheError.unknownCacheAttribute(name)
        }
        if attribute == .purge || attribute == .clear {
            try runAction(attribute, on: id, text: text)
            return
        }
        if attribute == .removePool {
            guard id == WellKnownEntry.root else { throw CacheError.unknownCacheAttribute(name) }
            try names.removePool(named: text)
            return
        }
        // Recovery keeps a persistent file's bytes as they are: a file of an origin pool
        // becomes persistent only once all of them are stored.
        // A pin or `persistent` keeps a file its pool would not keep (`admit_*`).
        if attribute == .persistent || attribute == .pinned, ValueParsing.flag(text) != false {
            readThrough.fetches.keep(id)
        }
        if attribute == .persistent { try readThrough.fetchWhole(id) }
        // A pinned file is kept whole: one held in blocks is read whole first.
        if attribute == .pinned, ValueParsing.flag(text) != false, let file = readThrough.fetches.blockedFile(id) {
            try readThrough.makeWhole(file)
        }
        let current = try names.record(id)
        // A file removed (evicted, say) since the kernel looked it up keeps no flags: the
        // caller must learn that it is gone rather than believe it pinned.
        guard current.parent != nil else { throw CacheError.notFound }
        let place = place(of: current)
        guard CacheAttribute.writable(at: place).contains(attribute) else {
            if CacheAttribute.readable(at: place).contains(attribute) {
                throw CacheError.readOnlyAttribute(name)
            }
            throw CacheError.unknownCacheAttribute(name)
        }
        switch place {
        case .directory where attribute == .unit:
            try setUnit(id, text: text)
        case .directory:
            try names.keepingLoaded {
                names.loadSubtreeOutsideTheLock(id)
                try setEntryFlag(attribute, text: text, on: id)
            }
        case .file: try setEntryFlag(attribute, text: text, on: id)
        case .pool: try setPoolSettings(attribute, text: text, on: current)
        case .root: try setRootSetting(attribute, text: text)
        case .nameOnly: throw CacheError.unknownCacheAttribute(name)
        }
    }

    /// Parses the value first (a bad one changes nothing), then changes the entry, or a
    /// directory and everything beneath it, in one hold.
    func setEntryFlag(_ attribute: CacheAttribute, text: String, on id: EntryID) throws {
        let time = names.now
        let change: (inout EntryRecord) -> Void
        switch attribute {
        case .persistent:
            guard let flag = ValueParsing.flag(text) else {
                throw CacheError.invalidXattrValue(name: attribute.fullName, reason: "expected 0 or 1")
            }
            change = { updated in
                // Back in the pool, a file counts as most recently used.
                if updated.persistent && !flag { updated.lastAccess = time.nanoseconds }
                updated.persistent = flag
            }
        case .pinned:
            guard let pin = PinState.parse(text, now: time) else {
                throw CacheError.invalidXattrValue(
                    name: attribute.fullName, reason: "expected 0, 1, a duration such as 2h, or an RFC 3339 time")
            }
            change = { $0.pinnedUntil = pin.storedValue }
        case .cost:
            guard let milliseconds = ValueParsing.costMilliseconds(text) else {
                throw CacheError.invalidXattrValue(
                    name: attribute.fullName,
                    reason: AttributeValueCheck.problem(with: text, for: .cost, now: time) ?? "bad cost")
            }
            change = { $0.costMilliseconds = milliseconds }
        case .expiration:
            guard let seconds = ValueParsing.durationSeconds(text) else {
                throw CacheError.invalidXattrValue(
                    name: attribute.fullName, reason: "expected seconds or a duration such as 90s, 15m, 12h, 7d")
            }
            change = { $0.expiration = seconds }
        default:
            throw CacheError.readOnlyAttribute(attribute.fullName)
        }
        try names.setFlag(attribute, on: id, at: time, change) { after in
            if after.kind == .file { files.handles.updateLimit(for: after.entryID, names.sizeLimit(for: after)) }
        }
        // A pin or an expiration moves when its files expire (see `movesKernelTimeouts`).
        if attribute == .pinned || attribute == .expiration { kernelLooksUpAgain(inPool: try names.record(id).pool) }
    }

    /// Commits the pool's new settings, then applies it; `poolChanges` keeps two changes of
    /// one pool from losing each other's value, and no namespace hold waits for the commit.
    func setPoolSettings(_ attribute: CacheAttribute, text: String, on pool: EntryRecord) throws {
        // What a value may be is one rule, shared with the CLI, which checks before it writes.
        if let problem = AttributeValueCheck.problem(with: text, for: attribute, now: names.now)
            ?? (attribute == .shared ? readThrough.sharedTier.refusal(ofSetting: text) : nil) {
            throw CacheError.invalidXattrValue(name: attribute.fullName, reason: problem)
        }
        try names.changeSettings(of: pool) { current in try Self.settings(current, changing: attribute, to: text) }
        if attribute == .origin || attribute == .negativeTTL || attribute == .shared { readThrough.originChanged() }
        if attribute == .maxFetches { readThrough.fetchLimiter.limitsChanged() }
        if attribute == .minSize { checkFloors() }
        if Self.movesKernelTimeouts.contains(attribute) { kernelLooksUpAgain(inPool: pool.entryID) }
        evictor.requestEnforcement(of: [pool.entryID])
    }

    /// Settings that move when a file expires or must be revalidated: what the timeouts of
    /// its entry in the kernel carry.
    static let movesKernelTimeouts: Set<CacheAttribute> = [.maxAge, .ageBasis, .revalidate, .cacheControl]

    /// When the kernel serves opens (`kernel_hits`), no OPEN checks expiry or freshness: the
    /// names of the pool's files it holds are dropped from its caches, so the next use of
    /// each looks it up under the new settings.
    func kernelLooksUpAgain(inPool pool: EntryID) {
        guard files.servesOpensInKernel else { return }
        names.kernelLooksUpAgain(inPool: pool)
    }

    /// `current` with one attribute set from its text (already checked).
    private static func settings(_ current: PoolSettings, changing attribute: CacheAttribute, to text: String) throws
        -> PoolSettings
    {
        var updated = current
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // Each value parses, having passed the check; `??` keeps the old one otherwise.
        switch attribute {
        case .maxSize: updated.maxSize = ValueParsing.byteSize(text) ?? updated.maxSize
        case .minSize: updated.minSize = ValueParsing.byteSize(text) ?? updated.minSize
        case .maxAge: updated.maxAgeSeconds = ValueParsing.durationSeconds(text) ?? updated.maxAgeSeconds
        case .ageBasis: updated.ageBasis = AgeBasis(rawValue: trimmed) ?? updated.ageBasis
        case .maxFiles: updated.maxFiles = Int64(trimmed) ?? updated.maxFiles
        case .lowWatermark:
            updated.lowWatermarkPercent = Int64(trimmed.replacingOccurrences(of: "%", with: ""))
                ?? updated.lowWatermarkPercent
        case .origin: updated.origin = trimmed
        case .negativeTTL: updated.negativeTTLSeconds = ValueParsing.durationSeconds(text) ?? updated.negativeTTLSeconds
        case .maxFetches: updated.maxFetches = Int64(trimmed) ?? updated.maxFetches
        case .revalidate:
            updated.revalidateSeconds = trimmed == "never"
                ? PoolSettings.neverRevalidate : ValueParsing.durationSeconds(text) ?? updated.revalidateSeconds
        case .staleIfError: updated.staleIfErrorSeconds = ValueParsing.durationSeconds(text) ?? updated.staleIfErrorSeconds
        case .admitMaxSize: updated.admitMaxSize = ValueParsing.byteSize(text) ?? updated.admitMaxSize
        case .admitMinSize: updated.admitMinSize = ValueParsing.byteSize(text) ?? updated.admitMinSize
        case .blockSize: updated.blockSize = ValueParsing.byteSize(text) ?? updated.blockSize
        case .admitAfter: updated.admitAfter = Int64(trimmed) ?? updated.admitAfter
        case .admitWindow: updated.admitWindowSeconds = ValueParsing.durationSeconds(text) ?? updated.admitWindowSeconds
        case .trace: updated.recordsTrace = ValueParsing.flag(text) ?? updated.recordsTrace
        case .cacheControl: updated.cacheControl = ValueParsing.flag(text) ?? updated.cacheControl
        case .shared: updated.shared = trimmed
        case .sharedMaxFileSize: updated.sharedMaxFileSize = ValueParsing.byteSize(text) ?? updated.sharedMaxFileSize
        case .goal: updated.goal = CacheGoal(rawValue: trimmed) ?? updated.goal
        case .eviction:
            updated.eviction = EvictionChoice(rawValue: trimmed) ?? updated.eviction
            // `auto` starts from the policy the pool runs now, or from S3-FIFO instead of LRU
            // (see `PolicyAdvisor.autoStart`).
            if updated.eviction == .auto && current.eviction != .auto {
                let running = current.activePolicy
                updated.autoActive = running == .lru ? PolicyAdvisor.autoStart : running
            }
        default:
            throw CacheError.readOnlyAttribute(attribute.fullName)
        }
        return updated
    }

    func resetPoolSettings(_ pool: EntryRecord, attribute: CacheAttribute) throws {
        let name = String(decoding: pool.name, as: UTF8.self)
        let defaults = PoolSettings.defaultPools.first { $0.name == name }?.settings ?? PoolSettings()
        let values: [CacheAttribute: String] = [
            .maxSize: String(defaults.maxSize), .maxAge: String(defaults.maxAgeSeconds),
            .ageBasis: defaults.ageBasis.rawValue, .maxFiles: String(defaults.maxFiles),
            .lowWatermark: String(defaults.lowWatermarkPercent), .origin: "",
            .negativeTTL: String(defaults.negativeTTLSeconds), .maxFetches: String(defaults.maxFetches),
            .eviction: defaults.eviction.rawValue, .trace: "0", .minSize: String(defaults.minSize),
            .goal: defaults.goal.rawValue, .revalidate: "never", .staleIfError: String(defaults.staleIfErrorSeconds),
            .admitMaxSize: String(defaults.admitMaxSize), .admitMinSize: String(defaults.admitMinSize),
            .admitAfter: String(defaults.admitAfter), .admitWindow: String(defaults.admitWindowSeconds),
            .blockSize: String(defaults.blockSize), .cacheControl: defaults.cacheControl ? "1" : "0",
            .shared: "", .sharedMaxFileSize: String(defaults.sharedMaxFileSize),
        ]
        guard let text = values[attribute] else { throw CacheError.readOnlyAttribute(attribute.fullName) }
        try setPoolSettings(attribute, text: text, on: pool)
    }

    func setRootSetting(_ attribute: CacheAttribute, text: String) throws {
        guard attribute == .minFree else { throw CacheError.readOnlyAttribute(attribute.fullName) }
        guard let normalized = MinFree.parse(text)?.description else {
            throw CacheError.invalidXattrValue(name: attribute.fullName,
                                               reason: "expected a size such as 1G or a percentage such as 5%")
        }
        writer.enqueue(.setting(key: MinFree.settingKey, value: normalized))
        writer.flush()
        evictor.requestPressureCheck()
        checkFloors()
    }

    /// `purge` and `clear` run before setfattr returns, so a script can rely on the result.
    func runAction(_ attribute: CacheAttribute, on id: EntryID, text: String) throws {
        let target = try names.record(id)
        let place = place(of: target)
        guard place == .pool || place == .root else { throw CacheError.unknownCacheAttribute(attribute.fullName) }
        guard ValueParsing.flag(text) == true else {
            throw CacheError.invalidXattrValue(name: attribute.fullName, reason: "write 1 to run it")
        }
        let pools = place == .root ? names.poolIDs() : [id]
        if attribute == .purge { eviction.purge(pools: pools) } else { eviction.clear(pools: pools) }
    }

    func touchChangeTime(_ id: EntryID) throws {
        try names.touchChangeTime(id)
    }
}
