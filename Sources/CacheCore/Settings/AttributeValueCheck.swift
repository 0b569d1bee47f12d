import CacheModel
import CachePolicy
import Foundation

/// Why a value cannot be written to a `user.cache.*` setting, in the words the daemon logs,
/// so the CLI can refuse a bad value itself and say why (with the same parsers).
public enum AttributeValueCheck {
    /// The reason `value` is refused for `attribute`, or nil when the daemon would accept it.
    public static func problem(with value: String, for attribute: CacheAttribute, now: Timestamp) -> String? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        switch attribute {
        case .maxSize:
            return ValueParsing.byteSize(value).map { $0 >= 0 } == true
                ? nil : "expected bytes or a size such as 25M, 25MiB, 1G (0 = unlimited)"
        case .minSize:
            return ValueParsing.byteSize(value).map { $0 >= 0 } == true
                ? nil : "expected bytes or a size such as 16M, 16MiB, 1G (0 = no floor)"
        case .maxAge, .expiration:
            return ValueParsing.durationSeconds(value) != nil
                ? nil : "expected seconds or a duration such as 90s, 15m, 12h, 7d (0 = never)"
        case .ageBasis:
            return AgeBasis(rawValue: trimmed) != nil ? nil : "expected access or modification"
        case .maxFiles:
            return Int64(trimmed).map { $0 >= 0 } == true ? nil : "expected a whole number of files, 0 for unlimited"
        case .lowWatermark:
            let percent = Int64(trimmed.replacingOccurrences(of: "%", with: ""))
            return percent.map { (1...100).contains($0) } == true ? nil : "expected a percentage from 1 to 100"
        case .minFree:
            return MinFree.parse(value) != nil ? nil : "expected a size such as 1G or a percentage such as 5%"
        case .persistent, .trace, .unit, .cacheControl:
            return ValueParsing.flag(value) != nil ? nil : "expected 0 or 1"
        case .pinned:
            return PinState.parse(value, now: now) != nil
                ? nil : "expected 0, 1, a duration such as 2h, or an RFC 3339 time"
        case .purge, .clear:
            return ValueParsing.flag(value) == true ? nil : "write 1 to run it"
        case .removePool:
            return trimmed.isEmpty ? "expected the name of a pool" : nil
        case .negativeTTL:
            return ValueParsing.durationSeconds(value) != nil ? nil : "expected seconds or a duration such as 30s, 5m"
        case .revalidate:
            return trimmed == "never" || ValueParsing.durationSeconds(value) != nil
                ? nil : "expected never, or seconds or a duration such as 30s, 5m, 1h (0 = at every open)"
        case .staleIfError:
            return ValueParsing.durationSeconds(value) != nil
                ? nil : "expected seconds or a duration such as 30s, 5m, 1d (0 = never)"
        case .admitMaxSize, .admitMinSize:
            return ValueParsing.byteSize(value).map { $0 >= 0 } == true
                ? nil : "expected bytes or a size such as 64M, 1G (0 = no bound)"
        case .blockSize:
            // 0 fetches whole files; a block is whole MiBs, from 1 MiB to 1 GiB.
            let mebibyte: Int64 = 1 << 20
            let isBlockSize = ValueParsing.byteSize(value).map { size in
                size == 0 || ((mebibyte...(1024 * mebibyte)).contains(size) && size % mebibyte == 0)
            }
            return isBlockSize == true
                ? nil : "expected 0 (whole files) or a multiple of 1 MiB from 1 MiB to 1 GiB, such as 4M, 8MiB"
        case .admitAfter:
            return Int64(trimmed).map { (1...1000).contains($0) } == true
                ? nil : "expected a number of misses from 1 (keep at the first) to 1000"
        case .admitWindow:
            return ValueParsing.durationSeconds(value).map { $0 > 0 } == true
                ? nil : "expected a duration of 1s or more such as 10m, 1h, 1d"
        case .maxFetches:
            return Int64(trimmed).map { (1...256).contains($0) } == true ? nil : "expected a number of fetches from 1 to 256"
        case .eviction:
            return EvictionChoice(rawValue: trimmed) != nil
                ? nil : "expected one of \(EvictionChoice.accepted.joined(separator: ", "))"
        case .goal:
            return CacheGoal(rawValue: trimmed) != nil
                ? nil : "expected one of \(CacheGoal.allCases.map(\.rawValue).joined(separator: ", "))"
        case .cost:
            return ValueParsing.costMilliseconds(value) != nil
                ? nil : "expected a duration of 0 or more such as 300ms or 2s (a plain number is milliseconds)"
        case .origin:
            guard !trimmed.isEmpty, case .failure(let reason) = OriginURL.check(trimmed) else { return nil }
            return reason.description
        case .shared:
            guard !trimmed.isEmpty, case .failure(let reason) = SharedTierURL.parse(trimmed) else { return nil }
            return reason.description
        case .sharedMaxFileSize:
            return ValueParsing.byteSize(value).map { (0...Tunables.sharedMaxFileSizeLimit).contains($0) } == true
                ? nil : "expected a size from 0 (share nothing) to 512M, such as 1M or 256K"
        default:
            return "read-only"
        }
    }
}
