@testable import CacheCore
import Foundation
import Glibc
import Logging
import Testing

/// The 8 MiB the store keeps while unmounted, so a mount on a full disk can recover.
@Suite struct SpaceReserveTests {
    /// Only a reserve that is not there is no reserve: one whose size cannot be read is
    /// still released when the disk is full.
    @Test func aReserveWhoseSizeCannotBeReadIsStillReleased() throws {
        let store = try TestStore()
        let path = StoreLayout(root: store.path).reservePath
        #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 4096)))
        let disk = FaultyDisk()
        disk.failFileSizes.withLock { $0 = [path: EIO] }
        let reserve = SpaceReserve(path: path, disk: disk, logger: Logger(label: "test"))
        #expect(reserve.releaseForFullDisk())
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aMissingReserveIsNone() throws {
        let store = try TestStore()
        let reserve = SpaceReserve(path: StoreLayout(root: store.path).reservePath, disk: PosixDisk(),
                                   logger: Logger(label: "test"))
        #expect(!reserve.releaseForFullDisk())
    }
}
