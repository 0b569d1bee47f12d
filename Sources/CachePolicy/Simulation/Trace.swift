/// One request of a cache trace: a read (`get`), a new version (`set`) or a removal.
public struct TraceRequest: Sendable, Equatable {
    public enum Operation: String, Sendable {
        case get, set, delete
    }

    public var key: CacheKey
    public var size: Int64
    public var operation: Operation
    /// What a miss of it costs, in milliseconds (the fetch's or the making's time); 0 when
    /// the trace does not say.
    public var cost: Double

    public init(key: CacheKey, size: Int64, operation: Operation = .get, cost: Double = 0) {
        self.key = key
        self.size = size
        self.operation = operation
        self.cost = cost
    }
}

/// Reads the CSV traces `cachefs replay` takes: `KEY,SIZE[,OPERATION[,COST]]` per line, COST
/// the milliseconds a miss of the key costs (a decimal number, 0 or more; an empty field is
/// 0, an empty operation is `get`). A first line whose size is not a number is a header;
/// blank lines are skipped. Keys are any text
/// (hashed with ``Fingerprint``); a pool's own trace (`user.cache.trace`) has hex
/// fingerprints there, which hash like any other key.
public enum TraceReader {
    public struct Problem: Error, CustomStringConvertible, Equatable {
        public var line: Int
        public var reason: String
        public var description: String { "line \(line): \(reason)" }
    }

    public static func parse(_ text: Substring) throws(Problem) -> [TraceRequest] {
        var requests: [TraceRequest] = []
        var number = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let trimmed = line.hasSuffix("\r") ? line.dropLast() : line
            if trimmed.allSatisfy(\.isWhitespace) { continue }
            let fields = trimmed.split(separator: ",", omittingEmptySubsequences: false)
            guard (2...4).contains(fields.count) else {
                throw Problem(line: number, reason: "expected KEY,SIZE[,OPERATION[,COST]]")
            }
            guard let size = Int64(fields[1].trimmingWhitespace), size >= 0 else {
                if number == 1 && requests.isEmpty { continue }
                throw Problem(line: number, reason: "size \(fields[1]) is not a number of bytes")
            }
            var operation = TraceRequest.Operation.get
            if fields.count >= 3, !fields[2].trimmingWhitespace.isEmpty {
                guard let parsed = TraceRequest.Operation(rawValue: String(fields[2].trimmingWhitespace)) else {
                    throw Problem(line: number, reason: "operation \(fields[2]) is not get, set or delete")
                }
                operation = parsed
            }
            var cost = 0.0
            if fields.count == 4, !fields[3].trimmingWhitespace.isEmpty {
                guard let parsed = Double(fields[3].trimmingWhitespace), parsed.isFinite, parsed >= 0 else {
                    throw Problem(line: number, reason: "cost \(fields[3]) is not a number of milliseconds (0 or more)")
                }
                cost = parsed
            }
            let key = Int64(bitPattern: Fingerprint.of(fields[0].utf8))
            requests.append(TraceRequest(key: key, size: size, operation: operation, cost: cost))
        }
        return requests
    }
}

extension Substring {
    var trimmingWhitespace: Substring {
        var text = self
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        return text
    }
}
