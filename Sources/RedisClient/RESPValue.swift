/// One RESP2 value, as a Redis server sends it.
public enum RESPValue: Sendable, Hashable {
    /// `+OK\r\n`: a short status line (not binary safe).
    case simpleString(String)
    /// `-ERR message\r\n`: an error reply. `RedisConnection.send` turns it into a thrown `RedisError`.
    case error(String)
    /// `:42\r\n`
    case integer(Int64)
    /// `$3\r\nfoo\r\n`; `nil` is the null bulk string `$-1\r\n`.
    case bulkString([UInt8]?)
    /// `*2\r\n...`; `nil` is the null array `*-1\r\n`.
    case array([RESPValue]?)
}

extension RESPValue: CustomStringConvertible {
    public var description: String {
        switch self {
        case .simpleString(let text): return "+\(text)"
        case .error(let message): return "-\(message)"
        case .integer(let number): return ":\(number)"
        case .bulkString(nil): return "$nil"
        case .bulkString(let bytes?): return "$\(bytes.count) bytes"
        case .array(nil): return "*nil"
        case .array(let values?): return "[" + values.map(\.description).joined(separator: ", ") + "]"
        }
    }
}
