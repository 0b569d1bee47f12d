import Glibc

/// Every failure the core reports. The FUSE adapter turns these into errno values through
/// ``errno`` and nothing else, so the mapping lives in one place and has one test.
public enum CacheError: Error, Equatable, Sendable {
    case notFound
    case exists
    case notEmpty
    case notDirectory
    case isDirectory
    case crossPool
    case notPermitted
    case fileTooLarge
    case noSpace
    case invalidName
    case nameTooLong
    case invalidXattrValue(name: String, reason: String)
    case unknownCacheAttribute(String)
    case readOnlyAttribute(String)
    case unsupportedNamespace
    case noAttribute
    case attributeExists
    case rangeTooSmall
    case badHandle
    /// The inode the kernel holds was removed by cachefs itself (evicted, expired, cleared)
    /// before the kernel saw the notification: ESTALE makes the kernel look the name up once
    /// more (finding nothing, a new file, or creating one for O_CREAT). A user's own removal
    /// never answers it: that inode still opens while the kernel holds it.
    case stale
    case io(Int32)

    /// The errno a POSIX filesystem would answer; anything unexpected is EIO, never ENOSYS.
    public var errno: Int32 {
        switch self {
        case .notFound: return ENOENT
        case .exists: return EEXIST
        case .notEmpty: return ENOTEMPTY
        case .notDirectory: return ENOTDIR
        case .isDirectory: return EISDIR
        case .crossPool: return EXDEV
        case .notPermitted: return EPERM
        case .fileTooLarge: return EFBIG
        case .noSpace: return ENOSPC
        case .invalidName: return EINVAL
        case .nameTooLong: return ENAMETOOLONG
        case .invalidXattrValue, .unknownCacheAttribute, .readOnlyAttribute: return EINVAL
        case .unsupportedNamespace: return ENOTSUP
        case .noAttribute: return ENODATA
        case .attributeExists: return EEXIST
        case .rangeTooSmall: return ERANGE
        case .badHandle: return EBADF
        case .stale: return ESTALE
        case .io(let code): return code == 0 ? EIO : code
        }
    }

    /// Maps any error to an errno: a `CacheError` by its own rule, anything else to EIO.
    public static func errno(for error: any Error) -> Int32 {
        (error as? CacheError)?.errno ?? EIO
    }
}
