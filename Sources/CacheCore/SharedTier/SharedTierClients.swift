import NIOCore
import RedisClient
import Synchronization

/// One reconnecting ``RedisClient`` per tier URL, made at its first use and shared by the
/// pools that name it; closed at unmount. The lock is a leaf, never held while connecting.
final class SharedTierClients: Sendable {
    private let password: String?
    private let clients = Mutex<[String: RedisClient]>([:])

    init(password: String?) {
        self.password = password
    }

    func client(for url: RedisURL) throws -> RedisClient {
        let key = url.description
        if let client = clients.withLock({ $0[key] }) { return client }
        var options = RedisConnectionOptions(url: url, password: password)
        // A connect past this fails the commands waiting for it; theirs are shorter anyway.
        options.connectTimeout = .seconds(2)
        let made = try RedisClient(options: options)
        return clients.withLock { clients in
            if let existing = clients[key] { return existing }
            clients[key] = made
            return made
        }
    }

    /// Closes every client; waits at most a second for each.
    func closeAll() {
        let all = clients.withLock { clients in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { _ = try? client.close().wait() }
    }
}
