/// A cluster node's "not here" answer: `MOVED slot host:port` (the slot lives elsewhere now)
/// or `ASK slot host:port` (this one key is being migrated: ask there, once, after `ASKING`).
enum ClusterRedirection: Hashable {
    case moved(slot: Int, to: RedisNodeAddress)
    case ask(slot: Int, to: RedisNodeAddress)

    init?(errorMessage: String, answeringHost: String) {
        let parts = errorMessage.split(separator: " ")
        guard parts.count == 3, let slot = Int(parts[1]), (0..<KeySlot.count).contains(slot),
            let address = RedisNodeAddress(endpoint: parts[2], answeringHost: answeringHost)
        else { return nil }
        switch parts[0] {
        case "MOVED": self = .moved(slot: slot, to: address)
        case "ASK": self = .ask(slot: slot, to: address)
        default: return nil
        }
    }
}
