import Foundation
import Glibc

/// A `NOTIFY_SOCKET` of our own, standing in for systemd: a datagram socket bound to a path
/// or an abstract name, read by a thread that notes, as each message arrives, whether the
/// watched mountpoint is in /proc/mounts at that moment. Call ``stop()`` when done.
final class NotifyListener: @unchecked Sendable {
    struct Message {
        let text: String
        let mountedWhenReceived: Bool
    }

    /// The value for `NOTIFY_SOCKET`: a path, or `@name` for an abstract socket.
    let socketName: String
    private let descriptor: Int32
    private let lock = NSLock()
    private var messages: [Message] = []
    private var stopped = false

    init(directory: String, abstract: Bool, watching mountpoint: String) throws {
        socketName = abstract ? "@cachefs-test-\(UUID().uuidString)" : directory + "/notify.sock"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw MountError(message: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var nameBytes = Array(socketName.utf8)
        if abstract { nameBytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: nameBytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + nameBytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            close(descriptor)
            throw MountError(message: "bind \(socketName): \(String(cString: strerror(errno)))")
        }
        let thread = Thread { [self] in receiveUntilStopped(mountpoint: mountpoint) }
        thread.start()
    }

    private func receiveUntilStopped(mountpoint: String) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !isStopped {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let mounted = Self.isMounted(mountpoint)
            let text = String(decoding: buffer[..<count], as: UTF8.self)
            lock.withLock { messages.append(Message(text: text, mountedWhenReceived: mounted)) }
        }
        close(descriptor)
        if !socketName.hasPrefix("@") { unlink(socketName) }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    static func isMounted(_ mountpoint: String) -> Bool {
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        return mounts.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first.map(String.init) == mountpoint }
    }

    var received: [Message] { lock.withLock { messages } }

    /// The first message with a line `line`, waiting up to `seconds` for it.
    func waitForMessage(withLine line: String, seconds: Double) -> Message? {
        var found: Message?
        _ = Shell.waitUntil(seconds: seconds) {
            found = received.first { $0.text.split(separator: "\n").contains(Substring(line)) }
            return found != nil
        }
        return found
    }

    /// Ends the reading thread, which closes the socket (the thread holds the listener until then).
    func stop() {
        lock.withLock { stopped = true }
    }
}
