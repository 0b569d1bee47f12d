import CacheCore
import CacheModel
import Testing

@Suite struct ValueParsingTests {
    @Test(arguments: [
        ("26214400", Int64(26_214_400)), ("25M", 26_214_400), ("25MiB", 26_214_400), ("1G", 1 << 30),
        ("512k", 512 << 10), ("0", 0), ("7B", 7),
    ])
    func byteSizes(text: String, bytes: Int64) {
        #expect(ValueParsing.byteSize(text) == bytes)
    }

    @Test(arguments: ["", "M", "25X", "-1M", "1.5G", "banana", "99999999999999999999", "9999999999T"])
    func badByteSizes(text: String) {
        #expect(ValueParsing.byteSize(text) == nil)
    }

    /// `block_size`: 0 (whole files), or a multiple of 1 MiB from 1 MiB to 1 GiB.
    @Test(arguments: ["0", "1M", "3M", "4M", "8MiB", "1048576", "1024M", "1G"])
    func blockSizes(text: String) {
        #expect(AttributeValueCheck.problem(with: text, for: .blockSize, now: Timestamp(nanoseconds: 0)) == nil)
    }

    @Test(arguments: ["1536K", "2G", "abc", "", "-1M", "512K", "1025M", "1048577"])
    func badBlockSizes(text: String) {
        #expect(AttributeValueCheck.problem(with: text, for: .blockSize, now: Timestamp(nanoseconds: 0))
            == "expected 0 (whole files) or a multiple of 1 MiB from 1 MiB to 1 GiB, such as 4M, 8MiB")
    }

    /// `cache_control`: a flag, 0 or 1.
    @Test(arguments: ["0", "1"])
    func cacheControlFlags(text: String) {
        #expect(AttributeValueCheck.problem(with: text, for: .cacheControl, now: Timestamp(nanoseconds: 0)) == nil)
    }

    @Test(arguments: ["2", "yes-ish", ""])
    func badCacheControlFlags(text: String) {
        #expect(AttributeValueCheck.problem(with: text, for: .cacheControl, now: Timestamp(nanoseconds: 0))
            == "expected 0 or 1")
    }

    @Test(arguments: [("90s", Int64(90)), ("15m", 900), ("12h", 43200), ("7d", 604_800), ("3600", 3600), ("0", 0)])
    func durations(text: String, seconds: Int64) {
        #expect(ValueParsing.durationSeconds(text) == seconds)
    }

    @Test(arguments: ["", "h", "-5s", "1.5h", "5y", "tomorrow"])
    func badDurations(text: String) {
        #expect(ValueParsing.durationSeconds(text) == nil)
    }

    @Test func pinValues() {
        let now = Timestamp(seconds: 1000, nanoseconds: 0)
        #expect(PinState.parse("1", now: now) == .forever)
        #expect(PinState.parse("0", now: now) == .unpinned)
        #expect(PinState.parse("2h", now: now) == .until(Timestamp(seconds: 1000 + 7200, nanoseconds: 0)))
        #expect(PinState.parse("2026-11-23T10:00:00Z", now: now) == .until(Timestamp(seconds: 1_795_428_000, nanoseconds: 0)))
        #expect(PinState.parse("banana", now: now) == nil)
        #expect(PinState(storedValue: PinState.forever.storedValue) == .forever)
    }

    @Test func poolOverrides() {
        #expect(PoolOverride.parse("data=100M") == PoolOverride(name: "data", maxSize: 100 << 20, maxAgeSeconds: nil))
        #expect(PoolOverride.parse("avatars=5M,7d") == PoolOverride(name: "avatars", maxSize: 5 << 20, maxAgeSeconds: 604_800))
        #expect(PoolOverride.parse("data") == nil)
        #expect(PoolOverride.parse("=5M") == nil)
        #expect(PoolOverride.parse("a/b=5M") == nil)
        #expect(PoolOverride.parse("data=5M,soon") == nil)
    }

    @Test func rfc3339RoundTrip() {
        let time = Timestamp(seconds: 1_795_428_000, nanoseconds: 0)
        #expect(ValueParsing.formatRFC3339(time) == "2026-11-23T10:00:00Z")
        #expect(ValueParsing.rfc3339("2026-11-23T10:00:00Z") == time)
        #expect(ValueParsing.rfc3339("2026-11-23T11:00:00+01:00") == time)
        #expect(ValueParsing.formatRFC3339(Timestamp(seconds: 0, nanoseconds: 0)) == "1970-01-01T00:00:00Z")
        #expect(ValueParsing.formatRFC3339(Timestamp(seconds: 951_825_599, nanoseconds: 999_999_999))
                == "2000-02-29T11:59:59Z")
    }
}
