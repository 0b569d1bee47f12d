import ArgumentParser
import CacheModel
import CLinux
import CacheCore
import Foundation
import Glibc

/// The management commands are thin layers over `user.cache.*` attributes, so everything
/// they do also works with setfattr and getfattr alone.
enum Xattr {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// The errno the daemon answered, when it answered one.
        var code: Int32 = 0
    }

    static func get(_ path: String, _ name: String) throws -> String {
        let size = getxattr(path, name, nil, 0)
        guard size >= 0 else { throw failure(path, name) }
        var buffer = [UInt8](repeating: 0, count: size)
        let read = getxattr(path, name, &buffer, size)
        guard read >= 0 else { throw failure(path, name) }
        return String(decoding: buffer[..<read], as: UTF8.self)
    }

    /// An attribute known to fit in `limit` bytes, in one call (a value computed anew at each
    /// call, such as a preview, is then computed once, not once for its size and again).
    static func bytes(_ path: String, _ name: String, atMost limit: Int) throws -> ArraySlice<UInt8> {
        var buffer = [UInt8](repeating: 0, count: limit)
        let read = getxattr(path, name, &buffer, limit)
        guard read >= 0 else { throw failure(path, name) }
        return buffer[..<read]
    }

    /// Sets a `user.cache.*` attribute after checking, as the daemon would, that the path
    /// exists on a cachefs mount and that the value means something.
    static func set(_ path: String, _ name: String, _ value: String) throws {
        try requireExisting(path)
        try requireCachefs(path)
        let key = String(name.dropFirst(CacheAttribute.prefix.count))
        guard let attribute = CacheAttribute(rawValue: key) else {
            throw Failure(description: "\(path): unknown setting '\(key)'")
        }
        if let place = place(of: path), !CacheAttribute.writable(at: place).contains(attribute) {
            throw Failure(description: "\(path): " + Self.misplaced(attribute, at: place))
        }
        if let problem = AttributeValueCheck.problem(with: value, for: attribute, now: SystemClock().now()) {
            throw Failure(description: "\(path): \(key) '\(value)' refused: \(problem)")
        }
        let bytes = Array(value.utf8)
        guard setxattr(path, name, bytes, bytes.count, 0) == 0 else { throw failure(path, name, value: value) }
    }

    /// Names a missing path as missing, before anything else is said about it; a missing pool
    /// (a name missing from a mount's root) with the pools there are.
    static func requireExisting(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let reason = errno
            let parent = (path as NSString).deletingLastPathComponent
            let directory = parent.isEmpty ? "." : parent
            if reason == ENOENT, isMountRoot(directory) {
                _ = try poolDirectory((path as NSString).lastPathComponent, of: directory)
            }
            throw Failure(description: "\(path): \(String(cString: strerror(reason)))")
        }
    }

    /// Only a mount's root has `user.cache.store`.
    private static func isMountRoot(_ path: String) -> Bool {
        getxattr(path, "user.cache.store", nil, 0) >= 0
    }

    /// Where `path` stands on its mount, as the daemon tells places apart; nil when that
    /// cannot be told here (the daemon then decides). A symlink is followed, as `setxattr` does.
    private static func place(of path: String) -> CacheAttribute.Place? {
        guard let resolved = realpath(path, nil) else { return nil }
        let target = String(cString: resolved)
        free(resolved)
        var info = stat()
        guard lstat(target, &info) == 0 else { return nil }
        if isMountRoot(target) { return .root }
        switch info.st_mode & S_IFMT {
        case S_IFDIR:
            return isMountRoot((target as NSString).deletingLastPathComponent) ? .pool : .directory
        case S_IFREG: return .file
        default: return .nameOnly
        }
    }

    /// Why `attribute` cannot be set at `place`: where it can, or that it is read-only.
    private static func misplaced(_ attribute: CacheAttribute, at place: CacheAttribute.Place) -> String {
        let places: [CacheAttribute.Place] = [.root, .pool, .directory, .file]
        let named = places.filter { CacheAttribute.writable(at: $0).contains(attribute) }.map(\.described)
        guard !named.isEmpty else { return "\(attribute.rawValue) is read-only" }
        return "\(attribute.rawValue) is set on \(named.joined(separator: " or ")), not on \(place.described)"
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

    /// The root of the cachefs mount that holds `path` (the mount itself, a pool, or
    /// anything inside one): the nearest directory upwards that has `user.cache.store`.
    static func mountRoot(containing path: String) throws -> String {
        try requireExisting(path)
        var candidate = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath()
        while true {
            if isMountRoot(candidate.path) { return candidate.path }
            guard candidate.path != "/" else { break }
            candidate.deleteLastPathComponent()
        }
        throw Failure(description: "\(path): not inside a cachefs mount")
    }

    private static func failure(_ path: String, _ name: String, value: String? = nil) -> Failure {
        let code = errno
        var message = "\(path): \(name)"
        if let value { message += "=\(value)" }
        switch code {
        case EINVAL: message += ": refused by the daemon; its log says why (\(logLocation(of: path)))"
        case ENODATA: message += ": no such attribute here"
        case ENOTSUP: message += ": not on a cachefs mount"
        default: message += ": \(String(cString: strerror(code)))"
        }
        return Failure(description: message, code: code)
    }

    /// Where the daemon serving `path` logs: STORE/daemon.log, or its stderr in the foreground.
    private static func logLocation(of path: String) -> String {
        // Only to point the user at the log: when the mount cannot say, the generic advice stands.
        guard let root = try? mountRoot(containing: path), let store = try? get(root, "user.cache.store") else {
            return "STORE/daemon.log, or its stderr with --foreground"
        }
        return StoreLayout(root: store).logPath + ", or its stderr with --foreground"
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
    do {
        _ = try Xattr.get(mount, "user.cache.store")
    } catch let failure as Xattr.Failure where failure.code == ENODATA || failure.code == ENOTSUP {
        // No such attribute there: not a cachefs mount root. Any other error says what it is.
        throw Xattr.Failure(description: "\(mount): not the root of a cachefs mount")
    }
    let names = try FileManager.default.contentsOfDirectory(atPath: mount)
    return names.sorted()
}

/// The directory of pool `name` on `mount`, or a failure that lists the pools there are.
func poolDirectory(_ name: String, of mount: String) throws -> String {
    let pools = try poolDirectories(of: mount)
    guard pools.contains(name) else {
        throw Xattr.Failure(description: "\(mount): no pool named '\(name)' (pools: \(pools.joined(separator: ", ")))")
    }
    return mount + "/" + name
}

extension CacheAttribute.Place {
    /// How the errors of `cachefs set` and friends name a place.
    var described: String {
        switch self {
        case .root: "the mount's root"
        case .pool: "a pool directory (MOUNT/POOL)"
        case .directory: "a directory inside a pool"
        case .file: "a file"
        case .nameOnly: "a symlink or special file"
        }
    }
}
