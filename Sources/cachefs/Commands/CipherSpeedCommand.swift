import ArgumentParser
import CacheCore

/// `cachefs cipher-speed`: the CPU an encrypted store's block seals and opens cost here, per
/// MiB, at each block size asked; hidden (a measurement for scripts/bench, not a tool).
struct CipherSpeedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cipher-speed", abstract: "Print the CPU per MiB of sealing and opening file blocks.",
        shouldDisplay: false)

    @Option(name: .customLong("block-size"), help: "Block sizes in bytes (repeatable).")
    var blockSizes: [Int] = [BlockLayout.defaultBlockSize]
    @Option(help: "MiB to seal and open at each size.") var mebibytes = 64

    func validate() throws {
        guard blockSizes.allSatisfy(BlockLayout.isValid(blockSize:)) else {
            throw ValidationError("a block size is a power of two from 512 to 1 MiB")
        }
        guard mebibytes > 0 else { throw ValidationError("--mebibytes must be positive") }
    }

    /// One line per size: block size, then µs of CPU per MiB sealed and per MiB opened.
    func run() throws {
        for blockSize in blockSizes {
            let figures = try CipherSpeed.measure(blockSize: blockSize, mebibytes: mebibytes)
            print(blockSize, String(format: "%.1f %.1f", figures.sealMicrosecondsPerMiB, figures.openMicrosecondsPerMiB))
        }
    }
}
