import Glibc

/// Makes one daemon the owner of a store: an exclusive `flock` on `STORE/lock`, held for the
/// life of the process and released by the kernel even if the daemon is killed.
public final class StoreLock: Sendable {
    private let fd: Int32

    public init(layout: StoreLayout) throws(StoreError) {
        let fd = Glibc.open(layout.lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotOpen(layout.root, String(cString: strerror(errno))) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            Glibc.close(fd)
            if code == EWOULDBLOCK { throw .alreadyMounted(layout.root) }
            throw .cannotOpen(layout.root, String(cString: strerror(code)))
        }
        self.fd = fd
    }

    deinit {
        Glibc.close(fd)
    }
}

/// Why a store cannot be opened, in words for the one-line message the CLI prints.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    case alreadyMounted(String)
    case cannotOpen(String, String)
    case corruptIndex(String, String)

    public var description: String {
        switch self {
        case .alreadyMounted(let store):
            return "store \(store) is already in use by another cachefs daemon"
        case .cannotOpen(let store, let reason):
            return "cannot open store \(store): \(reason)"
        case .corruptIndex(let store, let reason):
            return "cannot read the index of store \(store): \(reason)"
        }
    }
}
