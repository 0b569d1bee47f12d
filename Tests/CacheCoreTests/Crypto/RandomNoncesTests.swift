@testable import CacheCore
import CacheModel
import Crypto
import Foundation
import Testing

/// A write's nonces: drawn in batches, yet every one fresh.
@Suite struct RandomNoncesTests {
    @Test func noNonceRepeatsWithinAWriteAcrossBatches() throws {
        var nonces = RandomNonces(expected: 10)
        let count = 3 * Tunables.nonceBatchBlocks + 5
        var seen = Set<Data>()
        for _ in 0..<count {
            seen.insert(Data(try nonces.take()))
        }
        #expect(seen.count == count)
    }

    @Test func twoWritesDrawDifferentNonces() throws {
        var first = RandomNonces(expected: 1)
        var second = RandomNonces(expected: 1)
        #expect(Data(try first.take()) != Data(try second.take()))
    }

    /// The bench's figures come from real seals and opens (it checks the round trip itself).
    @Test func cipherSpeedMeasuresEachBlockSize() throws {
        for blockSize in [512, 16384] {
            let figures = try CipherSpeed.measure(blockSize: blockSize, mebibytes: 1)
            #expect(figures.sealMicrosecondsPerMiB > 0 && figures.openMicrosecondsPerMiB > 0)
        }
    }
}
