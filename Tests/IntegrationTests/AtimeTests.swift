import Foundation
import Testing

/// Issue 8: atime moves on read the way `relatime` does (when it is older than mtime or
/// ctime, or a day old), compared with the same reads on the store's own disk (ext4,
/// mounted relatime here).
@Suite struct AtimeTests {
    /// Prints, for each read, whether the read moved atime.
    static let reads = """
        moved() { [ "$1" != "$2" ] && echo moved || echo kept; }
        atime() { stat -c %x f; }
        echo x > f; a0=$(atime); sleep 0.05
        cat f > /dev/null; a1=$(atime); echo "first read after the write: $(moved "$a0" "$a1")"; sleep 0.05
        cat f > /dev/null; a2=$(atime); echo "second read: $(moved "$a1" "$a2")"; sleep 0.05
        echo y >> f; sleep 0.05
        cat f > /dev/null; a3=$(atime); echo "read after another write: $(moved "$a2" "$a3")"; sleep 0.05
        touch -a -d '2 days ago' f; a4=$(atime); sleep 0.05
        cat f > /dev/null; a5=$(atime); echo "read of an atime two days old: $(moved "$a4" "$a5")"; sleep 0.05
        chmod 600 f; sleep 0.05
        cat f > /dev/null; a6=$(atime); echo "read after a chmod: $(moved "$a5" "$a6")"; sleep 0.05
        head -c 1 f > /dev/null; a7=$(atime); echo "read again: $(moved "$a6" "$a7")"
        stat f > /dev/null; a8=$(atime); echo "stat: $(moved "$a7" "$a8")"
        """

    @Test func readsMoveAtimeAsRelatimeDoesOnExt4() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let ext4 = mount.directory + "/ext4"
            try FileManager.default.createDirectory(atPath: ext4, withIntermediateDirectories: false)
            let expected = try Shell.bash("cd '\(ext4)' && \(Self.reads)")
            try #require(expected.succeeded, "on ext4: \(expected.error)")
            #expect(expected.output.contains("first read after the write: moved"), "is /tmp relatime? \(expected.output)")
            let actual = try mount.sh("mkdir data/atime && cd data/atime && \(Self.reads)")
            #expect(actual.succeeded, "\(actual.error)")
            #expect(actual.output == expected.output, "ext4:\n\(expected.output)\ncachefs:\n\(actual.output)")
        }
    }
}
