import Foundation
import Testing

/// A handle opened only to write bypasses the kernel's page cache (`direct_io`), and so do
/// the file's other handles while it is open. What readers see must stay what ext4 shows:
/// each script runs in a folder of the store's disk (the oracle) and in a pool, and the
/// outputs must be equal.
@Suite struct PageCacheBypassTests {
    /// A reader that cached the file's last, partial page while a writer appends to it.
    static let readerDuringWrite = """
        import os
        w = os.open("f", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(w, b"a" * 100)
        r = os.open("f", os.O_RDONLY)
        print(len(os.pread(r, 4096, 0)))
        os.write(w, b"b" * 100)
        print(os.pread(r, 4096, 0).count(b"b"), len(os.pread(r, 4096, 0)))
        os.close(w)
        print(os.pread(r, 4096, 0).count(b"b"))
        os.close(r)
        print(open("f", "rb").read().count(b"b"))
        """

    /// A file read (and cached) before, then overwritten in place through a write-only handle.
    static let overwriteInPlace = """
        import os
        with open("g", "wb") as f: f.write(b"0123456789" * 1000)
        print(open("g", "rb").read()[:12])
        r = os.open("g", os.O_RDONLY)
        print(os.pread(r, 12, 0))
        os.close(r)
        w = os.open("g", os.O_WRONLY)
        os.pwrite(w, b"XYZ", 5000)
        os.pwrite(w, b"QQ", 0)
        os.close(w)
        data = open("g", "rb").read()
        print(data[:12], data[4998:5006], len(data))
        """

    /// A reader that opened first keeps the page cache; the writer that follows uses it too.
    static let writerAfterReader = """
        import os
        with open("h", "wb") as f: f.write(b"x" * 5000)
        r = os.open("h", os.O_RDONLY)
        print(len(os.pread(r, 8192, 0)))
        w = os.open("h", os.O_WRONLY | os.O_APPEND)
        os.write(w, b"y" * 10)
        print(os.pread(r, 8192, 0)[-12:])
        os.close(w)
        os.close(r)
        """

    @Test(arguments: [("reader during a write", readerDuringWrite), ("overwrite in place", overwriteInPlace),
                      ("writer after a reader", writerAfterReader)])
    func readersSeeWhatExt4Shows(name: String, script: String) throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let ext4 = mount.directory + "/ext4"
            try FileManager.default.createDirectory(atPath: ext4, withIntermediateDirectories: false)
            let scriptPath = mount.directory + "/script.py"
            try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
            let oracle = try Shell.bash("cd '\(ext4)' && python3 '\(scriptPath)'")
            #expect(oracle.succeeded, "\(oracle.error)")
            let expected = oracle.output.trimmingCharacters(in: .whitespacesAndNewlines)
            let actual = try mount.mustSucceed("cd data && python3 '\(scriptPath)'")
            #expect(!expected.isEmpty)
            #expect(actual == expected, "\(name): ext4 printed\n\(expected)\ncachefs printed\n\(actual)")
        }
    }
}
