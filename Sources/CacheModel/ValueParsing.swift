import Foundation

/// Parsers for the values users write into `user.cache.*` attributes and `--pool` options.
/// Each returns nil for anything it does not fully understand: a bad value changes nothing.
public enum ValueParsing {
    /// Bytes: `26214400`, `25M`, `25MiB`, `1G`, `512K`, `2T`; units are powers of 1024.
    public static func byteSize(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let split = trimmed.firstIndex(where: { !$0.isASCII || !$0.isNumber }) else {
            return Int64(trimmed)
        }
        guard split != trimmed.startIndex, let number = Int64(trimmed[..<split]) else { return nil }
        let shifts: [String: Int64] = [
            "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20,
            "G": 30, "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40,
        ]
        guard let shift = shifts[trimmed[split...].uppercased()] else { return nil }
        let (value, overflow) = number.multipliedReportingOverflow(by: Int64(1) << shift)
        return overflow ? nil : value
    }

    /// Seconds: `3600`, `90s`, `15m`, `12h`, `7d`, `2w`.
    public static func durationSeconds(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let last = trimmed.last else { return nil }
        let factors: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        if last.isASCII, last.isNumber { return Int64(trimmed).flatMap { $0 >= 0 ? $0 : nil } }
        guard let factor = factors[last], let number = Int64(trimmed.dropLast()), number >= 0 else { return nil }
        let (value, overflow) = number.multipliedReportingOverflow(by: factor)
        return overflow ? nil : value
    }

    /// A miss's cost in milliseconds (`user.cache.cost`): `300ms`, `2s`, `1.5s`, or a plain
    /// number of milliseconds, at most `UInt32.max` (about 49 days). Nil for a negative,
    /// empty, unreadable or larger value.
    public static func costMilliseconds(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let (number, factor): (Substring, Double)
        if trimmed.hasSuffix("ms") {
            (number, factor) = (trimmed.dropLast(2), 1)
        } else if trimmed.hasSuffix("s") {
            (number, factor) = (trimmed.dropLast(), 1000)
        } else {
            (number, factor) = (Substring(trimmed), 1)
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let value = Double(number), value.isFinite else { return nil }
        let milliseconds = (value * factor).rounded()
        return milliseconds <= Double(UInt32.max) ? Int64(milliseconds) : nil
    }

    /// `0`/`1` (also `false`/`true`, `no`/`yes`, `off`/`on`).
    public static func flag(_ text: String) -> Bool? {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: return nil
        }
    }

    /// An RFC 3339 time such as `2026-11-23T10:00:00Z` or with a UTC offset and fractions.
    public static func rfc3339(_ text: String) -> Timestamp? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        for options in [ISO8601DateFormatter.Options.withInternetDateTime,
                        [.withInternetDateTime, .withFractionalSeconds]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: trimmed) {
                return Timestamp(nanoseconds: Int64((date.timeIntervalSince1970 * 1e9).rounded()))
            }
        }
        return nil
    }

    /// Formats a time as RFC 3339 UTC with seconds precision, as `user.cache.last_access` shows it.
    /// Built from `gmtime_r`: a Foundation date formatter costs an ICU formatter per call,
    /// which was a third of the evictor's time (one event line per removed file).
    public static func formatRFC3339(_ time: Timestamp) -> String {
        var seconds = time_t(time.seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(width - text.count, 0)) + text
        }
        return digits(parts.tm_year + 1900, 4) + "-" + digits(parts.tm_mon + 1, 2) + "-" + digits(parts.tm_mday, 2)
            + "T" + digits(parts.tm_hour, 2) + ":" + digits(parts.tm_min, 2) + ":" + digits(parts.tm_sec, 2) + "Z"
    }
}
