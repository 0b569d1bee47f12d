import ArgumentParser
import CLinux
import Foundation
import Glibc

/// The management commands are thin layers over `user.cache.*` attributes, so everything
/// they do also works with setfattr and getfattr alone.
enum Xattr {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func get(_ path: String, _ name: String) throws -> String {
        let size = getxattr(path, name, nil, 0)
        guard size >= 0 else { throw failure(path, name) }
        var buffer = [UInt8](repeating: 0, count: size)
        let read = getxattr(path, name, &buffer, size)
        guard read >= 0 else { throw failure(path, name) }
        return String(decoding: buffer[..<read], as: UTF8.self)
    }

    static func set(_ path: String, _ name: String, _ value: String) throws {
        try requireCachefs(path)
        let bytes = Array(value.utf8)
        guard setxattr(path, name, bytes, bytes.count, 0) == 0 else { throw failure(path, name, value: value) }
    }

    /// Refuses paths outside a cachefs mount, where a `user.cache.*` attribute would be
    /// stored as an ordinary one and mean nothing.
    static func requireCachefs(_ path: String) throws {
        var info = statfs()
        let fuseSuperMagic = 0x6573_5546
        let identities = ["user.cache.persistent", "user.cache.max_size", "user.cache.store"]
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { if fd >= 0 { close(fd) } }
        guard fd >= 0, fstatfs(fd, &info) == 0, info.f_type == fuseSuperMagic,
              identities.contains(where: { getxattr(path, $0, nil, 0) >= 0 }) else {
            throw Failure(description: "\(path): not on a cachefs mount")
        }
    }

    private static func failure(_ path: String, _ name: String, value: String? = nil) -> Failure {
        let code = errno
        var message = "\(path): \(name)"
        if let value { message += "=\(value)" }
        switch code {
        case EINVAL: message += ": refused (bad value or unknown name; the daemon log says why)"
        case ENODATA: message += ": not a cachefs path (no such attribute)"
        case ENOTSUP: message += ": not on a cachefs mount"
        default: message += ": \(String(cString: strerror(code)))"
        }
        return Failure(description: message)
    }
}

/// Runs a command body, turning failures into one line on stderr and exit status 1.
func reportingFailures(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as Xattr.Failure {
        printError("cachefs: \(error.description)")
        throw ExitCode.failure
    }
}

/// The pool directories of a mount, in the order `ls` shows them.
func poolDirectories(of mount: String) throws -> [String] {
    guard (try? Xattr.get(mount, "user.cache.store")) != nil else {
        throw Xattr.Failure(description: "\(mount): not the root of a cachefs mount")
    }
    let names = try FileManager.default.contentsOfDirectory(atPath: mount)
    return names.sorted()
}
