import Synchronization

/// One backend per tier location, made at its first use and shared by the pools that name
/// it; closed at unmount. The lock is a leaf, never held while connecting.
final class SharedTierBackends: Sendable {
    private let password: String?
    private let trustedCAFile: String?
    private let backends = Mutex<[String: any SharedTierBackend]>([:])

    init(password: String?, trustedCAFile: String? = nil) {
        self.password = password
        self.trustedCAFile = trustedCAFile
    }

    func backend(for location: SharedTierLocation) throws -> any SharedTierBackend {
        let key = location.description
        if let backend = backends.withLock({ $0[key] }) { return backend }
        let made = try location.makeBackend(password: password, trustedCAFile: trustedCAFile)
        let (kept, spare) = backends.withLock { backends -> (any SharedTierBackend, (any SharedTierBackend)?) in
            if let existing = backends[key] { return (existing, made) }
            backends[key] = made
            return (made, nil)
        }
        spare?.close()
        return kept
    }

    /// Closes every backend; waits at most a second for each.
    func closeAll() {
        let all = backends.withLock { backends in
            defer { backends.removeAll() }
            return Array(backends.values)
        }
        for backend in all { backend.close() }
    }
}
