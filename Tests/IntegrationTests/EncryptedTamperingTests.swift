import Foundation
import Testing

/// Issue 21's tampering list: each change is made to an unmounted encrypted store's stored
/// bytes, then the store is mounted and read with dd and cat (EIO on the changed blocks, the
/// rest readable), and `cachefs verify --deep` lists every damaged file with its blocks.
@Suite struct EncryptedTamperingTests {
    private typealias Stored = StoredLayout

    /// What the test knows of a file before the store is changed.
    private struct Written {
        let id: String
        let object: String
        let blockSums: [String]
    }

    private static let blocksPerFile = 5

    /// Writes data/NAME (five blocks of random bytes) for each name, unmounts, runs
    /// `change` on the stored files, mounts again for `reads`, then unmounts for `verify`.
    private func withChangedStore(files: [String], change: ([String: Written]) throws -> Void,
                                  reads: (MountedStore, [String: Written]) throws -> Void,
                                  verify: (MountedStore, [String: Written]) throws -> Void) throws {
        try withEncryptedMountedStore(arguments: ["--pool", "data=0"]) { mount in
            var written: [String: Written] = [:]
            for name in files {
                _ = try mount.mustSucceed("head -c \(Stored.plaintextBlock * Self.blocksPerFile) /dev/urandom > data/\(name)")
                let sums = try (0..<Self.blocksPerFile).map { try blockSum(mount, "data/\(name)", $0) }
                written[name] = Written(id: try mount.entryID("data/\(name)"), object: try mount.objectPath("data/\(name)"),
                                        blockSums: sums)
            }
            #expect(try mount.unmount() == 0)
            try change(written)
            try mount.mount()
            try reads(mount, written)
            #expect(try mount.unmount() == 0)
            try verify(mount, written)
        }
    }

    private func blockSum(_ mount: MountedStore, _ path: String, _ block: Int) throws -> String {
        try mount.mustSucceed("dd if=\(path) bs=\(Stored.plaintextBlock) skip=\(block) count=1 status=none | sha256sum")
    }

    /// Runs a Python snippet on the stored files; the change itself must succeed.
    private func change(_ script: String) throws {
        let result = try Shell.run(["python3", "-c", script])
        try #require(result.succeeded, "changing the stored bytes failed: \(result.error)")
    }

    /// The blocks in `readable` read as written, each block in `failing` answers EIO, and so
    /// does a read of the whole file; the daemon raised a `tampered` event for it.
    private func expectReads(_ mount: MountedStore, _ name: String, _ file: Written, readable: [Int], failing: [Int],
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        for block in readable {
            #expect(try blockSum(mount, "data/\(name)", block) == file.blockSums[block], "block \(block) of \(name)",
                    sourceLocation: sourceLocation)
        }
        for block in failing {
            let read = try mount.sh("dd if=data/\(name) bs=\(Stored.plaintextBlock) skip=\(block) count=1 status=none of=/dev/null")
            #expect(!read.succeeded && read.error.contains("Input/output error"),
                    "block \(block) of \(name): \(read.status) \(read.error)", sourceLocation: sourceLocation)
        }
        let whole = try mount.sh("cat data/\(name) > /dev/null")
        #expect(!whole.succeeded && whole.error.contains("Input/output error"), "cat \(name): \(whole.error)",
                sourceLocation: sourceLocation)
        #expect(try mount.sawTamperedEvent(entry: file.id), "no tampered event for \(name) (entry \(file.id))",
                sourceLocation: sourceLocation)
    }

    /// `cachefs verify` (with `extra`) exits 1 and prints exactly `lines` as its problems.
    private func expectVerify(_ mount: MountedStore, _ extra: [String], lines: [String],
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try mount.verify(extra)
        #expect(result.status == 1, "verify \(extra) exited \(result.status): \(result.output) \(result.error)",
                sourceLocation: sourceLocation)
        let problems = result.output.split(separator: "\n").map(String.init).filter { !$0.contains(" problems in ") }
        #expect(problems.sorted() == lines.sorted(), "verify \(extra) printed:\n\(result.output)", sourceLocation: sourceLocation)
    }

    private func damaged(_ name: String, _ file: Written, blocks: [Int]) -> String {
        let list = blocks.map(String.init).joined(separator: ", ")
        return "damaged: data/\(name) (entry \(file.id)): \(blocks.count == 1 ? "block \(list) fails" : "blocks \(list) fail") authentication"
    }

    @Test func aFlippedByteFailsThatBlockOnly() throws {
        try withChangedStore(files: ["f"], change: { files in
            let offset = Stored.offset(ofBlock: 1) + 12 + 2000
            try change("""
                f = open('\(files["f"]!.object)', 'r+b'); f.seek(\(offset)); b = f.read(1)
                f.seek(\(offset)); f.write(bytes([b[0] ^ 0x01])); f.close()
                """)
        }, reads: { mount, files in
            try expectReads(mount, "f", files["f"]!, readable: [0, 2, 3, 4], failing: [1])
        }, verify: { mount, files in
            try expectVerify(mount, ["--deep"], lines: [damaged("f", files["f"]!, blocks: [1])])
        })
    }

    /// Two files of the same size swap their stored bytes: every block is bound to its owner.
    @Test func swappedFilesBothFail() throws {
        try withChangedStore(files: ["f", "g"], change: { files in
            let f = files["f"]!.object, g = files["g"]!.object
            try change("""
                import os
                os.rename('\(f)', '\(f).swap'); os.rename('\(g)', '\(f)'); os.rename('\(f).swap', '\(g)')
                """)
        }, reads: { mount, files in
            try expectReads(mount, "f", files["f"]!, readable: [], failing: [0, 1, 2, 3, 4])
            try expectReads(mount, "g", files["g"]!, readable: [], failing: [0, 1, 2, 3, 4])
        }, verify: { mount, files in
            try expectVerify(mount, [], lines: [damaged("f", files["f"]!, blocks: [4]), damaged("g", files["g"]!, blocks: [4])])
            try expectVerify(mount, ["--deep"], lines: [damaged("f", files["f"]!, blocks: [0, 1, 2, 3, 4]),
                                                        damaged("g", files["g"]!, blocks: [0, 1, 2, 3, 4])])
        })
    }

    /// The stored file loses its last block: the block before it was not sealed as the last.
    @Test func aFileCutByOneBlockFails() throws {
        try withChangedStore(files: ["f"], change: { files in
            try change("""
                import os
                os.truncate('\(files["f"]!.object)', \(Stored.offset(ofBlock: 4)))
                """)
        }, reads: { mount, files in
            try expectReads(mount, "f", files["f"]!, readable: [0, 1, 2], failing: [3])
        }, verify: { mount, files in
            try expectVerify(mount, [], lines: [damaged("f", files["f"]!, blocks: [3])])
            try expectVerify(mount, ["--deep"], lines: [damaged("f", files["f"]!, blocks: [3])])
        })
    }

    /// Cut to nothing, a stored file has no header, as a file stored empty (docs/known-issues.md,
    /// issues: reads then answer no bytes, not EIO); `verify` finds the size it lost.
    @Test func aFileCutToNothingIsFoundByVerify() throws {
        try withChangedStore(files: ["f"], change: { files in
            try change("""
                import os
                os.truncate('\(files["f"]!.object)', 0)
                """)
        }, reads: { (mount, _) throws in
            #expect(try mount.mustSucceed("stat -c %s data/f") == "\(Stored.plaintextBlock * Self.blocksPerFile)")
        }, verify: { mount, files in
            try expectVerify(mount, [], lines: [
                "wrong size: data/f (entry \(files["f"]!.id)) is 0 bytes, the index says \(Stored.plaintextBlock * Self.blocksPerFile)",
            ])
        })
    }

    /// A copy of one of its own blocks appended: the old last block is no longer last, and the
    /// new one sits at a position it was not sealed for.
    @Test func anAppendedBlockFails() throws {
        try withChangedStore(files: ["f"], change: { files in
            try change("""
                f = open('\(files["f"]!.object)', 'r+b'); f.seek(\(Stored.offset(ofBlock: 1)))
                block = f.read(\(Stored.storedBlock)); f.seek(0, 2); f.write(block); f.close()
                """)
        }, reads: { mount, files in
            try expectReads(mount, "f", files["f"]!, readable: [0, 1, 2, 3], failing: [4])
        }, verify: { mount, files in
            try expectVerify(mount, [], lines: [damaged("f", files["f"]!, blocks: [5])])
            try expectVerify(mount, ["--deep"], lines: [damaged("f", files["f"]!, blocks: [4, 5])])
        })
    }

    /// Block 1's stored bytes copied over block 3 of the same file: its position is bound in.
    @Test func aBlockMovedWithinItsFileFails() throws {
        try withChangedStore(files: ["f"], change: { files in
            try change("""
                f = open('\(files["f"]!.object)', 'r+b'); f.seek(\(Stored.offset(ofBlock: 1)))
                block = f.read(\(Stored.storedBlock)); f.seek(\(Stored.offset(ofBlock: 3))); f.write(block); f.close()
                """)
        }, reads: { mount, files in
            try expectReads(mount, "f", files["f"]!, readable: [0, 1, 2, 4], failing: [3])
        }, verify: { mount, files in
            try expectVerify(mount, ["--deep"], lines: [damaged("f", files["f"]!, blocks: [3])])
            // --repair removes the damaged file; the store is clean afterwards.
            try expectVerify(mount, ["--deep", "--repair"], lines: [damaged("f", files["f"]!, blocks: [3])])
            let again = try mount.verify(["--deep"])
            #expect(again.succeeded && again.output.contains("clean: "), "\(again.output)")
        })
    }
}
