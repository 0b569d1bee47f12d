import CacheModel

/// A pool's recorded accesses (`user.cache.trace`), gathered in memory by request threads
/// and written by the evictor's thread, so a read never writes to disk. Each line is
/// `FINGERPRINT,SIZE` (the fingerprint in hex: a trace names no file), or
/// `FINGERPRINT,SIZE,,COST` for a file whose miss cost is known (`user.cache.cost`, or its
/// fetch's time, in milliseconds), the CSV form `cachefs replay` reads.
struct AccessTraceBuffer: Sendable {
    private(set) var bytes: [UInt8] = []
    private(set) var dropped = 0

    mutating func append(fingerprint: UInt64, size: Int64, costMilliseconds: Int64) {
        guard bytes.count < Tunables.traceBufferBytes else {
            dropped += 1
            return
        }
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        for shift in stride(from: 60, through: 0, by: -4) {
            bytes.append(digits[Int((fingerprint >> UInt64(shift)) & 0xf)])
        }
        bytes.append(UInt8(ascii: ","))
        bytes.append(contentsOf: String(max(size, 0)).utf8)
        if costMilliseconds > 0 {
            bytes.append(contentsOf: ",,".utf8)
            bytes.append(contentsOf: String(costMilliseconds).utf8)
        }
        bytes.append(UInt8(ascii: "\n"))
    }

    /// Takes what was gathered.
    mutating func take() -> (bytes: [UInt8], dropped: Int) {
        defer {
            bytes = []
            dropped = 0
        }
        return (bytes, dropped)
    }
}
