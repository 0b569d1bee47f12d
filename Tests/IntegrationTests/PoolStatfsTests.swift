import Foundation
import Testing

/// `df MOUNT/POOL` describes the pool; `df MOUNT` and an unlimited pool, the store's disk.
@Suite struct PoolStatfsTests {
    @Test func dfOfAPoolShowsItsLimitAndWhatIsLeft() throws {
        try withMountedStore(arguments: ["--pool", "data=10M", "--pool", "avatars=0"]) { mount in
            _ = try mount.mustSucceed("head -c 1048576 /dev/zero > data/f")
            let pool = try mount.mustSucceed("df -B1 --output=size,avail data | tail -1").split(separator: " ")
            #expect(pool.map(String.init) == ["10485760", "9437184"], "\(pool)")
            let blocks = try mount.mustSucceed("stat -f -c '%S %b %a' data").split(separator: " ").compactMap { Int($0) }
            #expect(blocks.count == 3 && blocks[0] * blocks[1] == 10 << 20 && blocks[0] * blocks[2] == 9 << 20, "\(blocks)")
            let disk = try mount.mustSucceed("df -B1 --output=size '\(mount.store)' | tail -1")
            #expect(try mount.mustSucceed("df -B1 --output=size . | tail -1") == disk)
            #expect(try mount.mustSucceed("df -B1 --output=size avatars | tail -1") == disk)
        }
    }
}
