import CacheModel

extension Disk {
    /// Reads until `buffer` is full or the file ends; returns the bytes read.
    func preadFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        var filled = 0
        while filled < buffer.count {
            let read = try pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), at: offset + Int64(filled))
            if read == 0 { break }
            filled += read
        }
        return filled
    }

    /// Up to `count` bytes at `offset`, fewer only where the file ends.
    func preadFully(_ fd: Int32, count: Int, at offset: Int64) throws(CacheError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        // Array's closures rethrow untyped errors; a Result keeps the type.
        let filled = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(CacheError) in try preadFully(fd, into: buffer, at: offset) }
        }.get()
        bytes.removeLast(count - filled)
        return bytes
    }

    func pwriteFully(_ fd: Int32, from bytes: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) {
        var written = 0
        while written < bytes.count {
            written += try pwrite(fd, from: UnsafeRawBufferPointer(rebasing: bytes[written...]), at: offset + Int64(written))
        }
    }

    func pwriteFully(_ fd: Int32, from bytes: [UInt8], at offset: Int64) throws(CacheError) {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(CacheError) in try pwriteFully(fd, from: buffer, at: offset) }
        }.get()
    }
}
