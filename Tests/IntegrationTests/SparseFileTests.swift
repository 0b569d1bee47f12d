import Foundation
import Testing

/// Issue 8: `st_blocks` comes from the stored bytes' real allocation, so `du` of a sparse
/// file reports what the store holds (as ext4 does), while `ls -l` and the pool's usage
/// show the apparent size.
@Suite struct SparseFileTests {
    static let makeSparse = """
        truncate -s 5G sparse && dd if=/dev/zero of=sparse bs=1M count=1 seek=1024 conv=notrunc status=none && \
        stat -c '%s %b' sparse && du -k sparse | cut -f1
        """

    @Test func aSparseFileReportsItsAllocatedBlocksAsOnExt4() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let ext4 = mount.directory + "/ext4"
            try FileManager.default.createDirectory(atPath: ext4, withIntermediateDirectories: false)
            let expected = try Shell.bash("cd '\(ext4)' && \(Self.makeSparse)")
            try #require(expected.succeeded, "on ext4: \(expected.error)")
            let actual = try mount.sh("cd data && \(Self.makeSparse)")
            #expect(actual.succeeded, "\(actual.error)")
            #expect(actual.output == expected.output, "size, st_blocks, du -k: ext4 \(expected.output) cachefs \(actual.output)")
            // usage counts the apparent size (docs/ext4-compatibility.md).
            #expect(try mount.xattr("data", "user.cache.usage") == "5368709120")
        }
    }
}
