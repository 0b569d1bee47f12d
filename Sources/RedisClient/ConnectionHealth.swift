import Synchronization

/// Whether a connection has broken, readable from any thread. The command handler marks it on
/// its event loop before it fails the waiting commands, so a reconnecting client that sees
/// a failure never hands the same broken connection out again.
final class ConnectionHealth: Sendable {
    private let broken = Atomic<Bool>(false)

    var isBroken: Bool { broken.load(ordering: .acquiring) }

    func markBroken() {
        broken.store(true, ordering: .releasing)
    }
}
