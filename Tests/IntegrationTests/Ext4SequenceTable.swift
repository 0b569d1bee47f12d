/// The operation sequences the differential tests run on ext4 and in a cachefs pool.
/// Steps are the words `scripts/lib/fs_sequences.py` understands: `create a`, `write a TEXT`
/// (write-only), `write-rw a TEXT`,
/// `fill a BYTES`, `mkdir d`, `symlink TARGET s`, `link a b`, `mkfifo p`, `mksock s`, `mknod-chr c 1 3`,
/// `rename a b`, `rename-noreplace a b`, `rename-exchange a b`, `unlink a`, `rmdir d`,
/// `chmod a 4755`, `chown a UID GID`, `truncate a N`, `utimens a ATIME MTIME` (`now`, `omit`
/// or seconds), `lutimens`, `fallocate a MODE OFFSET LENGTH` (`0`, `keep`, `punch`, `zero`,
/// `zero-keep`), `open a read|write|creat-excl|trunc`, `readlink s`.
struct OperationSequence: Encodable, Sendable {
    let name: String
    let steps: [String]
}

enum SequenceTable {
    /// Every sequence, for the given caller (chown targets differ: only root may give a file away).
    static func all(for user: TestUser) -> [OperationSequence] {
        basics + symlinks + hardLinks + specialFiles + renameMatrix + renameFlags
            + directoryLinkCounts + attributes(for: user) + truncateAndFallocate + permissions
    }

    // MARK: - Kinds of entries, for the rename matrix

    enum Kind: String, CaseIterable {
        case file, emptyDir = "empty dir", fullDir = "non-empty dir", symlink, fifo, socket
        case hardLinked = "hard-linked file"

        func make(_ name: String) -> [String] {
            switch self {
            case .file: ["create \(name)", "write \(name) bytes of \(name)"]
            case .emptyDir: ["mkdir \(name)"]
            case .fullDir: ["mkdir \(name)", "create \(name)/inner"]
            case .symlink: ["symlink target-of-\(name) \(name)"]
            case .fifo: ["mkfifo \(name)"]
            case .socket: ["mksock \(name)"]
            case .hardLinked: ["create \(name)", "write \(name) linked", "link \(name) \(name)-other-name"]
            }
        }
    }

    static let renameMatrix: [OperationSequence] = Kind.allCases.flatMap { source in
        let onto = Kind.allCases.map { target in
            OperationSequence(name: "rename \(source.rawValue) onto \(target.rawValue)",
                              steps: source.make("src") + target.make("dst") + ["rename src dst"]
                                  + (target == .hardLinked ? ["unlink dst-other-name"] : []))
        }
        let toMissing = OperationSequence(name: "rename \(source.rawValue) to a new name in a subdirectory",
                                          steps: source.make("src") + ["mkdir sub", "rename src sub/moved"])
        return onto + [toMissing]
    }

    static let renameFlags: [OperationSequence] = Kind.allCases.map { target in
        OperationSequence(name: "rename-noreplace file onto \(target.rawValue)",
                          steps: Kind.file.make("src") + target.make("dst") + ["rename-noreplace src dst"])
    } + [
        OperationSequence(name: "rename-noreplace to a new name",
                          steps: ["create a", "rename-noreplace a b"]),
        OperationSequence(name: "rename onto another name of the same inode does nothing",
                          steps: ["create a", "link a b", "rename a b", "rename b a"]),
        OperationSequence(name: "rename-exchange of a file and a directory",
                          steps: ["create f", "mkdir d", "create d/inner", "rename-exchange f d"]),
        OperationSequence(name: "rename-exchange with a missing name",
                          steps: ["create f", "rename-exchange f missing"]),
        OperationSequence(name: "rename a directory into itself",
                          steps: ["mkdir d", "mkdir d/sub", "rename d d/sub/d", "rename d d"]),
        OperationSequence(name: "rename a missing name", steps: ["rename missing b"]),
    ]

    // MARK: - Sequences by subject

    static let basics: [OperationSequence] = [
        OperationSequence(name: "create, write, unlink", steps: [
            "create a", "write a hello", "create a", "open a creat-excl", "open a trunc", "unlink a", "unlink a",
        ]),
        OperationSequence(name: "mkdir and rmdir errors", steps: [
            "mkdir d", "mkdir d", "create f", "mkdir f", "unlink d", "rmdir f", "create d/x", "rmdir d",
            "unlink d/x", "rmdir d", "rmdir d", "create missing/x",
        ]),
    ]

    static let symlinks: [OperationSequence] = [
        OperationSequence(name: "symlinks: dangling, to a file, to a directory, long target", steps: [
            "symlink nowhere dangling", "readlink dangling", "open dangling read", "open dangling creat-excl",
            "create f", "symlink f to-file", "write to-file through the link", "readlink to-file",
            "mkdir d", "symlink d to-dir", "create to-dir/inside",
            "symlink /absolute/target/\(String(repeating: "x", count: 300)) long",
            "symlink f dangling", "readlink f", "unlink to-file", "rmdir to-dir",
        ]),
        OperationSequence(name: "chmod follows a symlink, lutimens does not", steps: [
            "create f", "symlink f s", "chmod s 600", "lutimens s 1000000000 1000000000", "utimens s now now",
        ]),
    ]

    static let hardLinks: [OperationSequence] = [
        OperationSequence(name: "hard links in several directories", steps: [
            "create a", "write a data", "mkdir d1", "mkdir d2", "link a d1/b", "link d1/b d2/c",
            "write d2/c more", "link a d1/b", "unlink a", "unlink d1/b", "chmod d2/c 600", "unlink d2/c",
        ]),
        OperationSequence(name: "links to a directory, a symlink, a fifo", steps: [
            "mkdir d", "link d d2", "symlink target s", "link s s2", "mkfifo p", "link p p2", "unlink p",
            "link missing x",
        ]),
    ]

    /// Device nodes: as nobody, mknod is EPERM before any filesystem is asked.
    static let specialFiles: [OperationSequence] = [
        OperationSequence(name: "fifo and socket", steps: [
            "mkfifo p", "mkfifo p", "open p read", "chmod p 600", "mksock s", "open s read",
            "chmod s 700", "truncate p 0", "unlink p", "unlink s",
        ]),
        OperationSequence(name: "device nodes", steps: [
            "mknod-chr c 1 3", "mknod-blk b 7 0", "open c read", "chmod c 600", "rename c c2", "unlink c2", "unlink b",
        ]),
    ]

    static let directoryLinkCounts: [OperationSequence] = [
        OperationSequence(name: "directory link counts: mkdir, rmdir, rename across parents", steps: [
            "mkdir a", "mkdir a/s1", "mkdir a/s2", "create a/file", "mkdir b", "rename a/s1 b/s1",
            "rename a/s2 b/s1", "mkdir a/s3", "rename a/s3 b/s1", "rmdir b/s1", "rename a b/a",
            "rename b/a a", "mkdir a/x", "mkdir a/x/y", "rename a/x/y y", "rmdir a/x",
        ]),
        OperationSequence(name: "directory link counts: a file renamed between directories", steps: [
            "mkdir a", "mkdir b", "create a/f", "rename a/f b/f", "mkdir b/sub", "rename b/f b/sub/f",
        ]),
    ]

    static func attributes(for user: TestUser) -> [OperationSequence] {
        let someone = user == .root ? "1234 5678" : "\(TestUser.nobodyID) \(TestUser.nobodyID)"
        return [
            OperationSequence(name: "chmod: special bits, directories, no change", steps: [
                "create f", "chmod f 4755", "chmod f 2755", "chmod f 6777", "chmod f 0", "chmod f 0",
                "mkdir d", "chmod d 1777", "chmod d 2755", "chmod missing 644",
            ]),
            OperationSequence(name: "chown: to another owner, to nobody's, -1 -1, clears set-id bits", steps: [
                "create f", "chmod f 6755", "chown f -1 -1", "chown f \(someone)", "chown f 0 0",
                "mkdir d", "chown d \(someone)", "symlink f s", "chown s \(someone)",
            ]),
            // A write-only handle bypasses the kernel's page cache, so the daemon drops the
            // set-ID bits itself; a read-write one is written through the page cache.
            OperationSequence(name: "writes clear set-ID bits unless the writer is root", steps: [
                "create f", "chmod f 4755", "write f a", "chmod f 6755", "write f b", "chmod f 2745", "write f c",
                "chmod f 6755", "write-rw f d", "chmod f 2745", "write-rw f e", "chmod f 6711", "truncate f 0",
            ]),
            OperationSequence(name: "utimensat", steps: [
                "create f", "utimens f 1000000000 1200000000", "utimens f omit omit", "utimens f omit now",
                "utimens f now omit", "utimens f now now", "mkdir d", "utimens d 5 5", "utimens missing now now",
            ]),
        ]
    }

    static let truncateAndFallocate: [OperationSequence] = [
        OperationSequence(name: "truncate", steps: [
            "create f", "write f 0123456789", "truncate f 100000", "truncate f 100000", "truncate f 3",
            "truncate f 0", "mkdir d", "truncate d 0", "truncate missing 0",
        ]),
        OperationSequence(name: "fallocate modes", steps: [
            "create f", "fill f 8192", "fallocate f 0 0 100000",
            "fallocate f keep 0 300000", "fallocate f punch 4096 8192", "fallocate f zero 100 50",
            "fallocate f zero 90000 20000", "fallocate f zero-keep 110000 50000", "fallocate f 0 0 10",
            "fallocate f punch 0 200000",
        ]),
    ]

    /// Checks where root and nobody differ: root passes mode checks, nobody does not.
    static let permissions: [OperationSequence] = [
        OperationSequence(name: "permission checks on files and directories", steps: [
            "create f", "write f secret", "chmod f 0", "open f read", "open f write", "mkdir d",
            "create d/inner", "chmod d 555", "create d/x", "unlink d/inner", "rename d/inner d/y",
            "mkdir d/sub", "chmod d 0", "open d/inner read", "chmod d 755", "chmod . 555", "create y",
            "mkdir z", "symlink f l", "chmod . 755",
        ]),
    ]
}
