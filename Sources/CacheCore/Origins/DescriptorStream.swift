import Glibc

/// Reads a descriptor to its end in chunks and hands each to `receive`, as origins deliver
/// bytes: a file's, or a program's standard output.
enum DescriptorStream {
    enum Ending {
        /// The descriptor reached its end.
        case end
        /// `receive` answered false: the fetch is no longer wanted.
        case stopped
        /// read(2) failed with this errno.
        case failed(Int32)
    }

    static func deliver(_ fd: Int32, chunkSize: Int, to receive: (UnsafeRawBufferPointer) -> Bool)
        -> (delivered: Int64, ending: Ending)
    {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var delivered: Int64 = 0
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                return (delivered, .failed(errno))
            }
            if count == 0 { return (delivered, .end) }
            delivered += Int64(count)
            guard receive(UnsafeRawBufferPointer(rebasing: buffer[..<count])) else { return (delivered, .stopped) }
        }
    }
}
