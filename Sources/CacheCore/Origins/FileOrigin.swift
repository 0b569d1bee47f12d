import CacheModel
import Glibc

/// `file:///DIR`: a directory tree (a slow disk, an NFS mount); a name maps to the same
/// relative path. Read in chunks, so readers of a large file are served as it arrives.
struct FileOrigin: Origin {
    let root: String
    static let chunkSize = Tunables.fileOriginChunkBytes

    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry {
        var info = stat()
        let result = withPath(path) { stat($0, &info) }
        guard result == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return .missing }
            throw .failed("stat: \(String(cString: strerror(code)))")
        }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .file(size: Int64(info.st_size))
        default: return .missing
        }
    }

    func fetch(_ path: [[UInt8]], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> OriginDelivery {
        let (fd, before) = try openWithStat(path, missing: .notFound)
        defer { close(fd) }
        let (delivered, ending) = DescriptorStream.deliver(fd, chunkSize: Self.chunkSize, to: receive)
        if case .failed(let code) = ending { throw .failed("read: \(String(cString: strerror(code)))") }
        return OriginDelivery(bytes: delivered, etag: Self.version(before))
    }

    var fetchesRanges: Bool { true }

    /// `pread`s of the range into one buffer, after an `fstat` that tells the version
    /// (compared by the caller: a plain file has no conditional read).
    func fetch(_ path: [[UInt8]], range: Range<Int64>, sameVersionAs version: OriginDelivery?) throws(OriginFailure) -> OriginPart {
        let (fd, info) = try openWithStat(path, missing: .changed)
        defer { close(fd) }
        let delivery = OriginDelivery(bytes: 0, etag: Self.version(info))
        if let version, version.isOtherVersion(than: delivery) { throw .changed }
        let bytes = BlockBuffer(capacity: Int(range.upperBound - range.lowerBound))
        var failure: Int32 = 0
        while bytes.count < bytes.capacity && failure == 0 {
            let read = bytes.fill { room in pread(fd, room.baseAddress, room.count, off_t(range.lowerBound) + off_t(bytes.count)) }
            if read < 0 && errno != EINTR { failure = errno }
            if read == 0 { break }
        }
        if failure != 0 { throw .failed("read: \(String(cString: strerror(failure)))") }
        return OriginPart(bytes: bytes, delivery: OriginDelivery(bytes: Int64(bytes.count), etag: delivery.etag))
    }

    /// The file at `path` opened to read, and its `stat`; `missing` is thrown when it is gone.
    private func openWithStat(_ path: [[UInt8]], missing: OriginFailure) throws(OriginFailure) -> (Int32, stat) {
        let fd = withPath(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw missing }
            throw .failed("open: \(String(cString: strerror(code)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .failed("fstat: \(reason)")
        }
        return (fd, info)
    }

    /// A file's version as its `stat` tells it: inode, size and modification time to the
    /// nanosecond (a file replaced by a rename has another inode; one rewritten in place,
    /// another mtime). Shown as the fetched file's `user.cache.etag`.
    static func version(_ info: stat) -> String {
        "\(info.st_ino)-\(info.st_size)-\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
    }

    /// A `stat`: the same inode, size and mtime keep the copy; anything else, or no file, is a change.
    func revalidate(_ path: [[UInt8]], version: OriginDelivery) throws(OriginFailure) -> OriginFreshness {
        guard let stored = version.etag else { return .unknown }
        var info = stat()
        guard withPath(path, { stat($0, &info) }) == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return .changed }
            throw .failed("stat: \(String(cString: strerror(code)))")
        }
        return Self.version(info) == stored ? .unchanged : .changed
    }

    func list(_ path: [[UInt8]]) throws(OriginFailure) -> [OriginName]? {
        guard let directory = withPath(path, { opendir($0) }) else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return [] }
            throw .failed("opendir: \(String(cString: strerror(code)))")
        }
        defer { closedir(directory) }
        var names: [OriginName] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if name == [0x2e] || name == [0x2e, 0x2e] { continue }
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_DIR): names.append(OriginName(name: name, kind: .directory))
            case Int32(DT_REG): names.append(OriginName(name: name, kind: .file))
            case Int32(DT_UNKNOWN), Int32(DT_LNK):
                // Resolved as a lookup would: a symlink to a file shows as that file.
                switch try lookup(path + [name]) {
                case .directory: names.append(OriginName(name: name, kind: .directory))
                case .file, .fileWithBytes: names.append(OriginName(name: name, kind: .file))
                case .missing: break
                }
            default: break
            }
        }
        return names.sorted { $0.name.lexicographicallyPrecedes($1.name) }
    }

    /// The origin path of `path` as a C string; names are bytes, so none is re-encoded.
    private func withPath<T>(_ path: [[UInt8]], _ body: (UnsafePointer<CChar>) -> T) -> T {
        var bytes = Array(root.utf8)
        for component in path {
            bytes.append(0x2f)
            bytes.append(contentsOf: component)
        }
        bytes.append(0)
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }
}
