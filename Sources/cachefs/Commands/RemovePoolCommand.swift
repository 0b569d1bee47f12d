import ArgumentParser
import Glibc

/// `cachefs remove-pool MOUNT NAME`: the explicit way to remove a pool and its policy
/// (`rmdir` of a pool answers EBUSY, so emptying one never loses its policy).
struct RemovePoolCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-pool", abstract: "Remove an empty pool and its policy.",
        discussion: """
            A pool must be empty first (cachefs clear removes its cached files; remove pinned and \
            persistent ones with rm). Emptying a pool, even with rm -rf MOUNT/POOL, keeps it and its policy.
            Example:
              cachefs remove-pool ~/cache avatars
            Same as: setfattr -n user.cache.remove_pool -v NAME MOUNT
            """)

    @Argument(help: "The mount.") var mount: String
    @Argument(help: "The pool to remove.") var pool: String

    func run() throws {
        try reportingFailures {
            let root = try Xattr.mountRoot(containing: mount)
            _ = try poolDirectory(pool, of: root)
            do {
                try Xattr.set(root, "user.cache.remove_pool", pool)
            } catch let failure as Xattr.Failure where failure.code == ENOTEMPTY {
                throw Xattr.Failure(description: "pool \(pool) is not empty: remove its files first "
                    + "(cachefs clear \(root) \(pool) for cached ones, rm for pinned and persistent ones)")
            }
        }
    }
}
