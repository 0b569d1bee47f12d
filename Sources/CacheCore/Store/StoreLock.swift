import Glibc

/// Makes one daemon the owner of a store: an exclusive `flock` on `STORE/lock`, held for the
/// life of the process and released by the kernel even if the daemon is killed.
public final class StoreLock: Sendable {
    private let fd: Int32
    private let disk: any Disk

    public init(layout: StoreLayout, disk: any Disk = PosixDisk()) throws(StoreError) {
        self.disk = disk
        let fd: Int32
        do {
            fd = try disk.open(layout.lockPath, flags: O_RDWR | O_CREAT, mode: 0o600)
        } catch {
            throw .cannotOpen(layout.root, String(cString: strerror(error.errno)))
        }
        do {
            try disk.lockExclusively(fd)
        } catch {
            disk.close(fd)
            if error.errno == EWOULDBLOCK { throw .alreadyMounted(layout.root) }
            throw .cannotOpen(layout.root, String(cString: strerror(error.errno)))
        }
        self.fd = fd
    }

    deinit {
        disk.close(fd)
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
