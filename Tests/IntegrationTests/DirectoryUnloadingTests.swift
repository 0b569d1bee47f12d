import Foundation
import Testing

/// A directory the kernel has forgotten leaves the daemon's memory past `memory_budget`, and
/// comes back from the index with the same names, sizes and attributes; one a process holds
/// a file of open stays.
@Suite struct DirectoryUnloadingTests {
    /// Sizes, times and every `user.` attribute of a directory's files, in name order.
    static func snapshot(_ directory: String) -> String {
        """
        ls -l --time-style=full-iso \(directory)
        getfattr -d -m '^user\\.' \(directory)/*
        """
    }

    @Test func aForgottenDirectoryLeavesMemoryAndListsTheSameAfterwardWhileAnOpenOneStays() throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", "memory_budget=0,memory_idle=1"]) { mount in
            _ = try mount.mustSucceed("""
                mkdir data/big data/held
                python3 -c "
                for i in range(3000): open('data/big/f%04d' % i, 'w').write('x' * (i % 97))
                for i in range(200): open('data/held/h%03d' % i, 'w').write('held %d' % i)"
                for i in 0007 0100 2999; do setfattr -n user.note -v "note $i" data/big/f$i; done
                setfattr -n user.cache.pinned -v 1 data/big/f0042
                cat data/big/f0500 > /dev/null
                """)
            let before = try mount.mustSucceed(Self.snapshot("data/big"))
            let heldBefore = try mount.mustSucceed(Self.snapshot("data/held"))
            #expect(before.contains("note 2999") && before.contains("user.cache.pinned=\"1\""))
            let loaded = "\(MountedStore.executable) status . --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[\"loaded_entries\"])'"
            #expect(Int(try mount.mustSucceed(loaded)) ?? 0 > 3200, "both directories are loaded after listing")
            // The budget counts Tunables.bytesPerLoadedEntry, 96 bytes an entry (short names, as here), and what one
            // holds beyond; this mount's budget is 0.
            let counted = try mount.mustSucceed("""
                \(MountedStore.executable) status . --json | python3 -c 'import json, sys; r = json.load(sys.stdin)
                print(r["loaded_bytes"] // r["loaded_entries"], r["loaded_bytes_budget"])'
                """)
            #expect(["96 0", "97 0"].contains(counted), "bytes an entry, budget: \(counted)")

            // One process keeps a file of data/held open across the kernel's forgetting and
            // the daemon's unloading, then reads it.
            let held = try mount.mustSucceed("""
                exec 3< data/held/h007
                echo 2 > /proc/sys/vm/drop_caches
                for attempt in $(seq 150); do
                    [ "$(\(loaded))" -lt 1000 ] && break
                    sleep 0.2
                done
                echo "loaded $(\(loaded))"
                cat <&3
                """)
            let lines = held.split(separator: "\n")
            let after = lines.first.flatMap { Int($0.dropFirst("loaded ".count)) } ?? -1
            #expect(after < 1000, "data/big did not leave memory: \(held)")
            #expect(after >= 200, "data/held left memory while a file of it was open: \(held)")
            #expect(lines.last == "held 7", "the open file read \(held)")

            #expect(try mount.mustSucceed(Self.snapshot("data/big")) == before)
            // The read moved h007's last access; every other line is as it was.
            let heldAfter = try mount.mustSucceed(Self.snapshot("data/held"))
            let linesBefore = heldBefore.split(separator: "\n"), linesAfter = heldAfter.split(separator: "\n")
            let changed = zip(linesBefore, linesAfter).filter { $0 != $1 }.map(\.1)
            #expect(linesBefore.count == linesAfter.count && changed.count == 1
                && changed.allSatisfy { $0.hasPrefix("user.cache.last_access=") }, "\(changed)")
            #expect(Int(try mount.mustSucceed(loaded)) ?? 0 > 3200, "listing loads data/big again")
        }
    }
}
