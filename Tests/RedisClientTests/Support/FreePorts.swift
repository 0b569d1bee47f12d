import Foundation
import Synchronization

/// Loopback ports for test servers: free now (bindable), never handed out twice in this run,
/// below the ephemeral range, and with port + 10000 free too (a cluster node's bus port).
enum FreePorts {
    private static let handedOut = Mutex<Set<Int>>([])

    static func next() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20000..<30000)
            let fresh = handedOut.withLock { ports in ports.insert(port).inserted }
            if fresh && isBindable(port) && isBindable(port + 10000) { return port }
        }
        throw TestSetupError("found no free loopback port in 200 tries")
    }

    private static func isBindable(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return bound == 0
    }
}

struct TestSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
