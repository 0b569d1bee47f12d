import CacheModel
import Foundation
import Glibc

/// Copies that stay current: an open of a fetched file past its pool's `revalidate` asks the
/// origin whether it changed (a conditional request, or a `stat` for `file://`). Unchanged,
/// the copy is served and trusted again for `revalidate`; changed, it is dropped and the
/// open answers ESTALE, so the kernel looks the name up again and opens the origin's new
/// version as a new file (a reader that has the old one open keeps reading the old one,
/// whole, since a dropped file's bytes stay while it is open). When the origin cannot be
/// asked, the copy is served within `stale_if_error` past its `revalidate`, else the open
/// fails with EIO.
extension ReadThrough {
    /// Whether `record` may be served now. Throws EIO when the origin cannot be asked and
    /// `stale_if_error` does not cover the copy. Only files of an origin pool with a
    /// `revalidate`, complete, and holding a version the origin told are ever asked about.
    func isCurrent(_ record: EntryRecord) throws(CacheError) -> Bool {
        guard let parent = record.parent, fetches.progress(of: record.entryID) == nil,
              fetches.pendingSize(of: record.entryID) == nil,
              let (settings, known) = freshnessRule(of: record) else { return true }
        let time = names.now.nanoseconds
        if let known, !settings.needsRevalidation(validatedAt: known.time, now: time) { return true }
        let stored = known == nil ? try storedVersion(of: record.entryID) : nil
        guard let version = known?.version ?? stored,
              version.etag != nil || version.lastModified != nil,
              let origin = origin(ofPool: record.pool) else { return true }
        let path: [[UInt8]]
        do {
            path = try names.originPath(of: parent).path + [[UInt8](record.name)]
        } catch {
            throw CacheError.stale
        }
        counters.countRevalidation(pool: record.pool)
        do {
            switch try origin.revalidate(path, version: version) {
            case .unchanged, .unknown:
                validations.record(record.entryID, at: time, version: version)
                return true
            case .changed:
                validations.forget(record.entryID)
                logger.info("\(display(path)) changed at the origin: its cached copy is dropped")
                return false
            }
        } catch {
            // Unknown since the mount: the copy's stale_if_error counts from this first failure.
            let due = known.map { settings.revalidationDue(validatedAt: $0.time) } ?? time
            let (validated, overflow) = time.subtractingReportingOverflow(PoolSettings.nanoseconds(settings.revalidateSeconds))
            if known == nil, !overflow { validations.record(record.entryID, at: validated, version: version) }
            guard settings.servesStale(dueSince: due, now: time) else {
                counters.countFetchError(pool: record.pool)
                logger.error("cannot ask the origin whether \(display(path)) changed: \(events.shown("\(error)"))")
                throw CacheError.io(EIO)
            }
            counters.countStaleServed(pool: record.pool)
            logger.warning("serving \(display(path)) as cached: the origin cannot be asked whether it changed (\(events.shown("\(error)")))")
            events.record([CacheEvent(time: names.now, event: .servedStale,
                                      pool: names.poolNames()[record.pool] ?? "", path: names.paths(of: [record])[0],
                                      size: record.size, reason: "the origin cannot be asked: \(error)")])
            return true
        }
    }

    /// Seconds until `record` must be asked about again, for the kernel's caches of its name
    /// and attributes when the kernel serves opens (`kernel_hits`): its next lookup then asks
    /// (``lookup(parent:name:)``). Nil if never; for a file not fetched yet, its pool's whole
    /// `revalidate` (its fetch, from now on, counts as its first answer); 0 for a copy this
    /// mount has no answer about.
    func secondsUntilRevalidation(of record: EntryRecord) -> Double? {
        guard record.parent != nil, let (settings, known) = freshnessRule(of: record) else { return nil }
        if fetches.progress(of: record.entryID) != nil || fetches.pendingSize(of: record.entryID) != nil {
            return Double(settings.revalidateSeconds)
        }
        guard let known else { return 0 }
        let due = settings.revalidationDue(validatedAt: known.time)
        guard due != .max else { return nil }
        return max(0, Double(due - names.now.nanoseconds) / 1_000_000_000)
    }

    /// The pool's settings that decide when a fetched file is asked about (its
    /// `revalidate`, or the origin's `Cache-Control` where the pool honours it), with the
    /// last answer of this mount; nil when it is never asked about.
    private func freshnessRule(of record: EntryRecord) -> (PoolSettings, Validations.Validation?)? {
        guard var settings = names.settings(ofPool: record.pool),
              settings.revalidateSeconds != PoolSettings.neverRevalidate || settings.cacheControl else { return nil }
        let known = validations.validation(of: record.entryID)
        if settings.cacheControl, let trust = known?.version.cachingWord.trustSeconds { settings.revalidateSeconds = trust }
        if settings.revalidateSeconds == PoolSettings.neverRevalidate { return nil }
        return (settings, known)
    }

    /// The version the index kept for a file fetched before this mount; nil for none.
    private func storedVersion(of id: EntryID) throws(CacheError) -> OriginDelivery? {
        do {
            let etag = try originVersions.xattr(id, name: Data(CacheAttribute.etag.fullName.utf8))
            let lastModified = try originVersions.xattr(id, name: Data(CacheAttribute.lastModified.fullName.utf8))
            guard etag != nil || lastModified != nil else { return nil }
            return OriginDelivery(bytes: 0, etag: etag.map { String(decoding: $0, as: UTF8.self) },
                                  lastModified: lastModified.map { String(decoding: $0, as: UTF8.self) })
        } catch {
            logger.error("cannot read the origin version of entry \(id) from the index: \(error)")
            throw .io(EIO)
        }
    }
}
