import CacheCore
import CacheModel
import Glibc

/// Turns core attributes into the `struct stat` the kernel wants.
enum StatConversion {
    static func stat(_ attributes: FileAttributes) -> Glibc.stat {
        var info = Glibc.stat()
        info.st_ino = ino_t(attributes.id)
        info.st_mode = mode_t(fileType(attributes.kind)) | mode_t(attributes.permissions)
        info.st_nlink = nlink_t(attributes.linkCount)
        info.st_uid = attributes.uid
        info.st_gid = attributes.gid
        info.st_size = off_t(attributes.size)
        info.st_blksize = 4096
        info.st_blocks = blkcnt_t(attributes.blocks)
        info.st_rdev = dev_t(attributes.device)
        info.st_atim = timespec(attributes.accessTime)
        info.st_mtim = timespec(attributes.modificationTime)
        info.st_ctim = timespec(attributes.changeTime)
        return info
    }

    static func fileType(_ kind: EntryKind) -> mode_t {
        switch kind {
        case .directory: return S_IFDIR
        case .file: return S_IFREG
        case .symlink: return S_IFLNK
        case .fifo: return S_IFIFO
        case .socket: return S_IFSOCK
        case .characterDevice: return S_IFCHR
        case .blockDevice: return S_IFBLK
        }
    }

    static func timespec(_ time: Timestamp) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(time.seconds), tv_nsec: Int(time.subsecondNanoseconds))
    }

    static func timestamp(_ spec: Glibc.timespec) -> Timestamp {
        Timestamp(seconds: Int64(spec.tv_sec), nanoseconds: Int64(spec.tv_nsec))
    }
}
