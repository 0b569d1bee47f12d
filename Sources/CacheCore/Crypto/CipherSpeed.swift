import Glibc

/// This machine's cost of sealing and opening file blocks of one size, through the calls an
/// encrypted store's writes and reads make (a write's batch of nonces and buffer of stored
/// blocks; a read opening each block and copying it out), in CPU time of the calling thread
/// under a random key. `cachefs cipher-speed` prints it for scripts/bench, which compares
/// block sizes with it.
public enum CipherSpeed {
    public struct Figures: Sendable {
        public let sealMicrosecondsPerMiB: Double
        public let openMicrosecondsPerMiB: Double
    }

    public static func measure(blockSize: Int, mebibytes: Int) throws -> Figures {
        let cipher = FileCipher(dataKey: .random(), header: .random(blockSize: blockSize), owner: 1)
        let mebibyte = 1 << 20
        let blocks = mebibyte / blockSize
        let plaintext = [UInt8](repeating: 0x5a, count: mebibyte)
        var stored: [UInt8] = []
        stored.reserveCapacity(blocks * cipher.layout.storedBlockSize)
        var opened = [UInt8](repeating: 0, count: mebibyte)
        var sealNanoseconds = 0, openNanoseconds = 0
        for _ in 0..<mebibytes {
            stored.removeAll(keepingCapacity: true)
            let start = threadCPUNanoseconds()
            var nonces = RandomNonces(expected: blocks)
            try plaintext.withUnsafeBytes { source in
                for index in 0..<blocks {
                    let block = UnsafeRawBufferPointer(rebasing: source[index * blockSize..<(index + 1) * blockSize])
                    try cipher.seal(block: Int64(index), block, isLast: false, nonces: &nonces, appendingTo: &stored)
                }
            }
            let sealed = threadCPUNanoseconds()
            try opened.withUnsafeMutableBytes { destination in
                for index in 0..<blocks {
                    let from = index * cipher.layout.storedBlockSize
                    let block = try cipher.openData(block: Int64(index), stored[from..<from + cipher.layout.storedBlockSize],
                                                    isLast: false)
                    block.withUnsafeBytes { destination.baseAddress!.advanced(by: index * blockSize).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                }
            }
            sealNanoseconds += sealed - start
            openNanoseconds += threadCPUNanoseconds() - sealed
        }
        precondition(opened == plaintext, "blocks opened to other bytes than were sealed")
        return Figures(sealMicrosecondsPerMiB: Double(sealNanoseconds) / Double(mebibytes) / 1000,
                       openMicrosecondsPerMiB: Double(openNanoseconds) / Double(mebibytes) / 1000)
    }

    private static func threadCPUNanoseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return now.tv_sec * 1_000_000_000 + now.tv_nsec
    }
}
