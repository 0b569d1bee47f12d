import Logging
import Foundation
import Glibc

/// systemd's readiness protocol (sd_notify), written out: one datagram of `KEY=VALUE` lines to
/// the socket named by `$NOTIFY_SOCKET`, a path or, with a leading `@`, an abstract name.
/// Without `$NOTIFY_SOCKET` (not started by a `Type=notify` unit) nothing is sent.
enum ServiceNotification {
    static let socketEnvironment = "NOTIFY_SOCKET"

    /// Sends `message`, logging a failure as a warning.
    static func sendOrWarn(_ message: String, logger: Logger) {
        if let failure = send(message) { logger.warning("\(failure)") }
    }

    /// Sends `message`; a failure is returned for the caller to log, since the mount works without it.
    @discardableResult
    static func send(_ message: String) -> String? {
        guard let name = ProcessInfo.processInfo.environment[socketEnvironment], !name.isEmpty else { return nil }
        guard name.hasPrefix("/") || name.hasPrefix("@") else {
            return "NOTIFY_SOCKET '\(name)' is neither a path nor an abstract name (@…)"
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var nameBytes = Array(name.utf8)
        // An abstract name starts with a zero byte instead of the '@' and is not terminated.
        if nameBytes[0] == UInt8(ascii: "@") { nameBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard nameBytes.count < capacity else { return "NOTIFY_SOCKET '\(name)' is too long" }
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path.copyBytes(from: nameBytes)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + nameBytes.count)
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { return "cannot open a socket for NOTIFY_SOCKET: \(String(cString: strerror(errno)))" }
        defer { close(socket) }
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                sendto(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL), generic, length)
            }
        }
        guard sent == bytes.count else {
            return "cannot notify \(name): \(String(cString: strerror(errno)))"
        }
        return nil
    }
}
