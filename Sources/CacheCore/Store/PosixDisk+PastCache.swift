import CLinux
import Glibc

extension PosixDisk {
    /// Direct I/O wants the buffer's address, its size and the offset on this boundary (the
    /// page size: a multiple of every common logical block size).
    public static let directIOAlignment = 4096

    /// Reads into `buffer` at `offset`, at least `needed` bytes unless the file ends first:
    /// all from the page cache when it holds them (`RWF_NOWAIT` answers only from it), or
    /// else the whole buffer through a second descriptor opened `O_DIRECT`, so the
    /// disk's bytes land in `buffer` without a page-cache copy to touch first (on this
    /// machine, a VM, the first touch of a page just read from the disk cost about 1 ms of
    /// CPU per MiB). A filesystem without direct I/O gets a plain read.
    public func preadPastCache(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
                               needing needed: Int) throws(CacheError) -> Int {
        let alignment = Self.directIOAlignment
        precondition(Int(bitPattern: buffer.baseAddress) % alignment == 0 && buffer.count % alignment == 0
                     && offset % Int64(alignment) == 0, "an unaligned direct read")
        var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        let cached = preadv2(fd, &vector, 1, off_t(offset), cachefs_RWF_NOWAIT)
        if cached >= needed { return cached }
        let direct = Glibc.open("/proc/self/fd/\(fd)", O_RDONLY | cachefs_O_DIRECT | O_CLOEXEC)
        guard direct >= 0 else { return try preadFully(fd, into: buffer, at: offset) }
        defer { Glibc.close(direct) }
        var filled = 0
        while filled < buffer.count {
            let read = Glibc.pread(direct, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset) + filled)
            if read < 0 {
                if errno == EINTR { continue }
                throw .io(errno)
            }
            filled += read
            // The end of the file (a direct read comes back short only there).
            if read == 0 || read % alignment != 0 { break }
        }
        return filled
    }
}
