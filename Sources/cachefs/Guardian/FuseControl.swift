import Foundation
import Glibc

/// The kernel's control filesystem of FUSE connections (fusectl) at `/sys/fs/fuse/connections`:
/// a directory per connection, named by its mount's device number, holding `abort` (a write
/// ends every request the connection has pending or will get, answered ENOTCONN) and `waiting`
/// (how many requests wait), both owned by the mount's owner.
///
/// A descriptor opened on one of these files names that one connection: once the connection
/// is gone, the kernel unhooks the file (a write does nothing, a read gives no bytes), even if
/// a later mount reuses the same number. So a descriptor opened while the mount lives can
/// never reach another mount.
enum FuseControl {
    static let directory = "/sys/fs/fuse/connections"

    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// The files of one connection, open for the guardian.
    struct Connection {
        let name: String
        let abort: Int32
        let waiting: Int32

        func close() {
            Glibc.close(abort)
            Glibc.close(waiting)
        }
    }

    /// fusectl names a connection by the kernel's device number of its superblock,
    /// `(major << 20) | minor`, where mountinfo shows "major:minor" ("0:52" is "52").
    static func connectionName(device: String) -> String? {
        let parts = device.split(separator: ":")
        guard parts.count == 2, let major = UInt32(parts[0]), let minor = UInt32(parts[1]), minor < 1 << 20 else {
            return nil
        }
        return String(major << 20 | minor)
    }

    /// Opens `abort` and `waiting` of the FUSE mount on top at `mountpoint`, mounting fusectl
    /// first when it is missing and this process is root.
    static func open(mountpoint: String) throws -> Connection {
        let table = MountTable.current()
        guard let entry = table.entry(at: mountpoint), entry.type.hasPrefix("fuse"),
              let name = connectionName(device: entry.device) else {
            throw Problem(description: "\(mountpoint) is not a FUSE mount in /proc/self/mountinfo")
        }
        try mountIfMissing(table)
        let folder = directory + "/" + name
        let abort = try openFile(folder + "/abort", flags: O_WRONLY)
        do {
            return Connection(name: name, abort: abort, waiting: try openFile(folder + "/waiting", flags: O_RDONLY))
        } catch {
            Glibc.close(abort)
            throw error
        }
    }

    /// Ends every request of the connection behind `connection.abort`, if it still exists.
    static func abort(_ connection: Connection) {
        _ = "1".withCString { write(connection.abort, $0, 1) }
    }

    /// The requests the connection waits for, or nil once it is gone (no bytes to read).
    /// Once per descriptor: the kernel reads the count only at offset 0, and the file cannot
    /// seek (pread answers ESPIPE).
    static func waitingRequests(_ connection: Connection) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = read(connection.waiting, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return Int(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private static func mountIfMissing(_ table: MountTable) throws {
        guard !table.has(type: "fusectl", at: directory) else { return }
        let byHand = "as root: mount -t fusectl none \(directory)"
        guard geteuid() == 0 else {
            throw Problem(description: "the fusectl filesystem is not mounted at \(directory) (\(byHand))")
        }
        guard mount("fusectl", directory, "fusectl", 0, nil) == 0 || errno == EBUSY else {
            throw Problem(description: "cannot mount fusectl at \(directory): \(String(cString: strerror(errno)))")
        }
    }

    private static func openFile(_ path: String, flags: Int32) throws -> Int32 {
        let fd = Glibc.open(path, flags | O_CLOEXEC)
        guard fd >= 0 else { throw Problem(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        return fd
    }
}
