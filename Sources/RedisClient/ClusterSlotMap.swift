/// Which node serves each of the 16384 slots, as `CLUSTER SLOTS` told it (primaries only).
struct ClusterSlotMap: Hashable {
    private(set) var owners: [RedisNodeAddress?] = Array(repeating: nil, count: KeySlot.count)

    var nodes: Set<RedisNodeAddress> { Set(owners.compactMap { $0 }) }

    subscript(slot: Int) -> RedisNodeAddress? {
        get { owners[slot] }
        set { owners[slot] = newValue }
    }

    /// The map a `CLUSTER SLOTS` reply describes: `[[start, end, [host, port, id...], replicas...], ...]`.
    init(clusterSlotsReply reply: RESPValue, answeringHost: String) throws(RedisError) {
        guard case .array(let ranges?) = reply else {
            throw .unexpectedReply("CLUSTER SLOTS answered \(reply)")
        }
        for range in ranges {
            guard case .array(let fields?) = range, fields.count >= 3,
                case .integer(let start) = fields[0], case .integer(let end) = fields[1],
                0 <= start, start <= end, end < KeySlot.count,
                case .array(let primary?) = fields[2], primary.count >= 2,
                case .bulkString(let hostBytes?) = primary[0], case .integer(let port) = primary[1]
            else {
                throw .unexpectedReply("CLUSTER SLOTS has a malformed range: \(range)")
            }
            let host = String(decoding: hostBytes, as: UTF8.self)
            let address = RedisNodeAddress(host: host.isEmpty || host == "?" ? answeringHost : host, port: Int(port))
            for slot in Int(start)...Int(end) {
                owners[slot] = address
            }
        }
    }

    init() {}
}
