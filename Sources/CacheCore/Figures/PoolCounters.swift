import CacheModel
import Foundation
import Logging

/// Per-pool counts that survive restarts: hits and misses (as ``CounterBook`` defines them),
/// what cachefs itself removed and what it fetched. Kept in memory, saved with the
/// access-time batches and at unmount.
struct PoolCounters: Sendable, Codable, Equatable {
    var hits: [EntryID: Int64] = [:]
    var misses: [EntryID: Int64] = [:]
    var evictedFiles: [EntryID: Int64] = [:]
    var evictedBytes: [EntryID: Int64] = [:]
    var originRequests: [EntryID: Int64] = [:]
    var fetchedBytes: [EntryID: Int64] = [:]
    var fetchErrors: [EntryID: Int64] = [:]
    /// Fetches that stored a first byte, and the sum of their times to first byte.
    var firstBytes: [EntryID: Int64] = [:]
    var firstByteMicroseconds: [EntryID: Int64] = [:]
    /// Fetched files whose origin was asked whether they changed (`revalidate`), and opens
    /// served a stale copy because it could not be asked (`stale_if_error`).
    var revalidations: [EntryID: Int64] = [:]
    var staleServed: [EntryID: Int64] = [:]
    /// Files fetched for their readers and not kept (`admit_*`).
    var notAdmitted: [EntryID: Int64] = [:]

    static let settingKey = "counters"

    /// The saved counters; none (a new store) start at zero. An index that cannot be read
    /// fails the mount; counters that do not decode start at zero, with a word in the log.
    static func load(from index: IndexDatabase, logger: Logger) throws -> PoolCounters {
        guard let text = try index.setting(settingKey) else { return PoolCounters() }
        do {
            return try JSONDecoder().decode(PoolCounters.self, from: Data(text.utf8))
        } catch {
            logger.error("the saved hit, miss and eviction counters do not decode; they start at zero: \(error)")
            return PoolCounters()
        }
    }

    /// The JSON the counters are saved as, in the `setting` table.
    var encoded: String {
        // Dictionaries of integers always encode: the fallback is never taken.
        String(decoding: (try? JSONEncoder().encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

extension PoolCounters {
    /// Counters saved before a figure existed read it as zero.
    init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        hits = try values.decodeIfPresent([EntryID: Int64].self, forKey: .hits) ?? [:]
        misses = try values.decodeIfPresent([EntryID: Int64].self, forKey: .misses) ?? [:]
        evictedFiles = try values.decodeIfPresent([EntryID: Int64].self, forKey: .evictedFiles) ?? [:]
        evictedBytes = try values.decodeIfPresent([EntryID: Int64].self, forKey: .evictedBytes) ?? [:]
        originRequests = try values.decodeIfPresent([EntryID: Int64].self, forKey: .originRequests) ?? [:]
        fetchedBytes = try values.decodeIfPresent([EntryID: Int64].self, forKey: .fetchedBytes) ?? [:]
        fetchErrors = try values.decodeIfPresent([EntryID: Int64].self, forKey: .fetchErrors) ?? [:]
        firstBytes = try values.decodeIfPresent([EntryID: Int64].self, forKey: .firstBytes) ?? [:]
        firstByteMicroseconds = try values.decodeIfPresent([EntryID: Int64].self, forKey: .firstByteMicroseconds) ?? [:]
        revalidations = try values.decodeIfPresent([EntryID: Int64].self, forKey: .revalidations) ?? [:]
        staleServed = try values.decodeIfPresent([EntryID: Int64].self, forKey: .staleServed) ?? [:]
        notAdmitted = try values.decodeIfPresent([EntryID: Int64].self, forKey: .notAdmitted) ?? [:]
    }
}
