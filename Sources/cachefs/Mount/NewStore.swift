import CacheCore
import Foundation
import Glibc

/// The store directory, and the missing parents, that this `cachefs mount` made. A mount that
/// then fails removes them again, so a failed mount leaves no store where there was none
/// (docs/mounting.md); a directory that existed before this attempt is never touched.
struct NewStore {
    /// The store directory, made by this attempt.
    let store: String
    /// The parents this attempt made, outermost first.
    let parents: [String]

    /// Makes the missing parents of `store` and `store` itself with mkdir(2): the parents as
    /// `mkdir -p` would (0777 less the umask), the store 0700. A failure removes what was made.
    /// Nil when the store appeared meanwhile: made by someone else, it is not this attempt's.
    static func make(_ store: String) throws -> NewStore? {
        var parents: [String] = []
        for parent in missingParents(of: store) {
            guard mkdir(parent, 0o777) == 0 else {
                guard errno == EEXIST else {
                    let reason = String(cString: strerror(errno))
                    removeParents(parents)
                    throw MountPreflight.Problem(description: "cannot create the parents of store \(store): \(reason)")
                }
                continue  // made meanwhile by someone else: not this attempt's
            }
            parents.append(parent)
        }
        guard mkdir(store, 0o700) == 0 else {
            if errno == EEXIST { return nil }
            let reason = String(cString: strerror(errno))
            removeParents(parents)
            throw MountPreflight.Problem(description: "cannot create store \(store): \(reason)")
        }
        return NewStore(store: store, parents: parents)
    }

    /// After a failed mount: removes the store with everything this attempt put in it, then the
    /// parents it made (each only while empty). A store whose lock another daemon holds now
    /// (a mount of the same new store that raced this one) is left to it.
    func remove() {
        let lock = open(StoreLayout(root: store).lockPath, O_RDONLY | O_CLOEXEC)
        defer { if lock >= 0 { close(lock) } }
        if lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) != 0 { return }
        var info = stat()
        guard lstat(store, &info) == 0 else { return }
        if let failure = Self.removeTree(store, device: info.st_dev) {
            printError("cachefs: warning: cannot remove the store this mount created, \(store): \(failure)")
            return
        }
        Self.removeParents(parents)
    }

    /// The ancestors of `store` that do not exist, outermost first.
    private static func missingParents(of store: String) -> [String] {
        var missing: [String] = []
        var path = (store as NSString).deletingLastPathComponent
        var info = stat()
        while path != "/" && !path.isEmpty && stat(path, &info) != 0 && errno == ENOENT {
            missing.insert(path, at: 0)
            path = (path as NSString).deletingLastPathComponent
        }
        return missing
    }

    /// Innermost first; stops at the first that is not empty (someone else's now).
    private static func removeParents(_ parents: [String]) {
        for parent in parents.reversed() where rmdir(parent) != 0 { return }
    }

    /// Removes `path` and what is beneath it, without following symbolic links and without
    /// entering another filesystem mounted inside. Returns strerror's text of the first failure.
    private static func removeTree(_ path: String, device: dev_t) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return errno == ENOENT ? nil : String(cString: strerror(errno)) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            return unlink(path) == 0 || errno == ENOENT ? nil : String(cString: strerror(errno))
        }
        guard info.st_dev == device else { return "\(path) is another filesystem's mountpoint" }
        guard let directory = opendir(path) else { return String(cString: strerror(errno)) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
        for name in names {
            if let failure = removeTree(path + "/" + name, device: device) { return failure }
        }
        return rmdir(path) == 0 ? nil : String(cString: strerror(errno))
    }
}
