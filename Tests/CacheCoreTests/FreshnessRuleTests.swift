@testable import CacheCore
import CacheModel
import Testing

/// The rules of `revalidate` and `stale_if_error`, and when two versions are the same,
/// without an origin.
@Suite struct FreshnessRuleTests {
    static let second: Int64 = 1_000_000_000

    @Test func aCopyIsAskedAboutOnceRevalidateHasPassed() {
        let never = PoolSettings()
        #expect(never.revalidateSeconds == PoolSettings.neverRevalidate)
        #expect(!never.needsRevalidation(validatedAt: 0, now: .max))
        let everyOpen = PoolSettings(revalidateSeconds: 0)
        #expect(everyOpen.needsRevalidation(validatedAt: 100, now: 100))
        let minute = PoolSettings(revalidateSeconds: 60)
        #expect(!minute.needsRevalidation(validatedAt: 0, now: 60 * Self.second - 1))
        #expect(minute.needsRevalidation(validatedAt: 0, now: 60 * Self.second))
        // A duration of centuries is "never", not an overflow.
        let centuries = PoolSettings(revalidateSeconds: .max / 2)
        #expect(!centuries.needsRevalidation(validatedAt: 5, now: .max))
        #expect(centuries.revalidationDue(validatedAt: 5) == .max)
    }

    @Test func aStaleCopyIsServedOnlyWithinStaleIfErrorPastItsDueTime() {
        let strict = PoolSettings(revalidateSeconds: 60)
        #expect(!strict.servesStale(dueSince: 0, now: 1))
        let lenient = PoolSettings(revalidateSeconds: 60, staleIfErrorSeconds: 3600)
        let due = lenient.revalidationDue(validatedAt: 0)
        #expect(due == 60 * Self.second)
        #expect(lenient.servesStale(dueSince: due, now: due))
        #expect(lenient.servesStale(dueSince: due, now: due + 3600 * Self.second - 1))
        #expect(!lenient.servesStale(dueSince: due, now: due + 3600 * Self.second))
        let forever = PoolSettings(revalidateSeconds: 0, staleIfErrorSeconds: .max)
        #expect(forever.servesStale(dueSince: 0, now: .max))
    }

    @Test func versionsCompareByETagThenByDate() {
        let tagged = OriginDelivery(bytes: 1, etag: "\"abc\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(tagged.isSameVersion(etag: "\"abc\"", lastModified: nil))
        #expect(tagged.isSameVersion(etag: "W/\"abc\"", lastModified: nil))
        #expect(!tagged.isSameVersion(etag: "\"abd\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT"))
        let dated = OriginDelivery(bytes: 1, lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(dated.isSameVersion(etag: "\"x\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT"))
        #expect(!dated.isSameVersion(etag: nil, lastModified: "Tue, 02 Jan 2024 00:00:00 GMT"))
        // An answer with neither says nothing: not the same.
        #expect(!tagged.isSameVersion(etag: nil, lastModified: nil))
        #expect(tagged.conditionalHeaders.map(\.0) == ["If-None-Match"])
        #expect(dated.conditionalHeaders.map(\.0) == ["If-Modified-Since"])
    }

    @Test func aFullTableForgetsEverythingSoFilesAskAgain() {
        let validations = Validations(capacity: 2)
        validations.record(1, at: 10, version: OriginDelivery(bytes: 1, etag: "a"))
        validations.record(2, at: 20, version: OriginDelivery(bytes: 1, etag: "b"))
        validations.record(2, at: 30, version: OriginDelivery(bytes: 1, etag: "b"))
        #expect(validations.validation(of: 1)?.time == 10)
        validations.record(3, at: 40, version: OriginDelivery(bytes: 1, etag: "c"))
        #expect(validations.validation(of: 1) == nil)
        #expect(validations.validation(of: 2) == nil)
        #expect(validations.validation(of: 3)?.time == 40)
    }
}
