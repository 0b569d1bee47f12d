import NIOCore

/// A `RedisClusterClient`'s slot map, node clients and redirect counts; only reachable inside
/// the cluster client's `Mutex`.
struct ClusterState {
    var slotMap = ClusterSlotMap()
    /// False until a `CLUSTER SLOTS` answer was read; commands wait for the first one.
    var slotMapLoaded = false
    /// The `CLUSTER SLOTS` refresh under way, which later refreshes join.
    var refreshing: EventLoopFuture<Void>?
    /// One reconnecting client (one connection) per node.
    var nodes: [RedisNodeAddress: RedisClient] = [:]
    var movedRedirects = 0
    var askRedirects = 0
}
