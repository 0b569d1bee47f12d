import Foundation
import Testing

/// Issue 8: real trees with symlinks and hard links. `tar -xf` and `cp -a` into a pool give
/// what the same command gives on ext4 (diff -r without following symlinks, then type, link
/// count, size, mode, mtime and link target of every name); `rsync -a` twice, the second
/// run transferring nothing; a `git clone` with symlinks checks out clean.
@Suite struct TarAndRsyncTests {
    /// Nested directories; relative, absolute and dangling symlinks (to files and to a
    /// directory); three names of one file in different directories; a FIFO; old mtimes.
    static let makeTree = """
        set -e
        mkdir -p source/a/b/c source/x/y
        echo one > source/a/file1
        head -c 70000 /dev/urandom > source/a/b/big
        ln source/a/file1 source/a/b/c/second-name
        ln source/a/file1 source/x/third-name
        ln source/a/b/big source/x/y/big-again
        ln -s ../file1 source/a/b/relative
        ln -s /etc/hostname source/x/absolute
        ln -s /nonexistent/absolute/target source/x/absolute-dangling
        ln -s missing/nowhere source/x/y/dangling
        ln -s b source/a/to-directory
        mkfifo source/x/fifo
        chmod 750 source/a/b
        chmod 600 source/x/y/big-again
        touch -h -d '2001-02-03 04:05:06' source/a/file1 source/a/b/relative source/x/y
        """

    /// One line per name: type, link count, size (not for directories, whose sizes are
    /// the filesystem's business), mode, mtime (unless `times` is false), path and symlink target.
    static func listing(_ directory: String, times: Bool = true) -> String {
        let mtime = times ? "%T@" : "-"
        return "cd '\(directory)' && find . \\( -type d -printf '%y %n - %m \(mtime) %p\\n' \\) -o -printf '%y %n %s %m \(mtime) %p %l\\n' | sort -k6"
    }

    /// `diff -r --no-dereference`: it reports two FIFOs as differing ("is a fifo while file
    /// … is a fifo"), which the listing already compares, so those lines are dropped.
    static func difference(_ left: String, _ right: String) -> String {
        "diff -r --no-dereference '\(left)' '\(right)' | grep -v 'is a fifo while file .* is a fifo$'; exit 0"
    }

    @Test func tarExtractsTheSameTreeAsOnExt4() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let work = mount.directory
            _ = try Shell.bash("cd '\(work)' && \(Self.makeTree) && tar -cf tree.tar -C source . && mkdir ext4")
            let ext4 = try Shell.bash("cd '\(work)' && tar -xf tree.tar -C ext4")
            try #require(ext4.succeeded, "tar on ext4: \(ext4.error)")
            let extracted = try mount.sh("mkdir data/tree && tar -xf '\(work)/tree.tar' -C data/tree")
            #expect(extracted.succeeded, "tar -xf into the pool: \(extracted.error)")
            let differences = try Shell.bash(Self.difference(work + "/ext4", mount.path("data/tree"))).output
            #expect(differences.isEmpty, "diff -r against ext4:\n\(differences)")
            let expected = try Shell.bash(Self.listing(work + "/ext4")).output
            let actual = try Shell.bash(Self.listing(mount.path("data/tree"))).output
            #expect(actual == expected, "listing on ext4:\n\(expected)\nin the pool:\n\(actual)")
        }
    }

    @Test func cpDashACopiesTheSameTreeAsOnExt4() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let work = mount.directory
            _ = try Shell.bash("cd '\(work)' && \(Self.makeTree)")
            let ext4 = try Shell.run(["cp", "-a", work + "/source", work + "/ext4"])
            try #require(ext4.succeeded, "cp -a on ext4: \(ext4.error)")
            let copied = try Shell.run(["cp", "-a", work + "/source", mount.path("data/copy")])
            #expect(copied.succeeded, "cp -a into the pool: \(copied.error)")
            let differences = try Shell.bash(Self.difference(work + "/ext4", mount.path("data/copy"))).output
            #expect(differences.isEmpty, "diff -r against ext4:\n\(differences)")
            let expected = try Shell.bash(Self.listing(work + "/ext4")).output
            let actual = try Shell.bash(Self.listing(mount.path("data/copy"))).output
            #expect(actual == expected, "listing on ext4:\n\(expected)\nin the pool:\n\(actual)")
        }
    }

    @Test func aGitCloneWithSymlinksChecksOutClean() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let work = mount.directory
            let git = "git -c user.name=test -c user.email=test@example.invalid -c init.defaultBranch=main"
            let made = try Shell.bash("""
                set -e
                cd '\(work)' && \(Self.makeTree) && rm source/x/fifo
                cd source && \(git) init -q && \(git) add -A && \(git) commit -qm tree
                """)
            try #require(made.succeeded, "git repository on ext4: \(made.error)")
            let cloned = try mount.sh("\(git) clone -q '\(work)/source' data/clone && cd data/clone && git status --porcelain")
            #expect(cloned.succeeded && cloned.output.isEmpty, "clone into the pool: \(cloned)")
            #expect(try mount.mustSucceed("readlink data/clone/a/b/relative") == "../file1")
            #expect(try mount.mustSucceed("readlink data/clone/x/y/dangling") == "missing/nowhere")
        }
    }

    @Test(arguments: ["-a", "-aH"])
    func rsyncTwiceTransfersNothingTheSecondTime(flags: String) throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let work = mount.directory
            _ = try Shell.bash("cd '\(work)' && \(Self.makeTree)")
            let target = mount.path("data/copy")
            let first = try Shell.run(["rsync", flags, work + "/source/", target + "/"])
            #expect(first.succeeded, "first rsync \(flags) exited \(first.status): \(first.error)")
            let second = try Shell.run(["rsync", flags, "--itemize-changes", work + "/source/", target + "/"])
            #expect(second.succeeded, "second rsync \(flags) exited \(second.status): \(second.error)")
            #expect(second.output.isEmpty, "second rsync \(flags) changed:\n\(second.output)")
            let differences = try Shell.bash(Self.difference(work + "/source", target)).output
            #expect(differences.isEmpty, "diff -r against the source:\n\(differences)")
            if flags == "-aH" {
                // With -H, rsync recreates the hard links: the listings agree name by name. (It
                // leaves directories, symlinks and FIFOs with new mtimes, on ext4 too; the second
                // run above checks the files' mtimes.)
                let expected = try Shell.bash(Self.listing(work + "/source", times: false)).output
                let actual = try Shell.bash(Self.listing(target, times: false)).output
                #expect(actual == expected, "listing of the source:\n\(expected)\nof the copy:\n\(actual)")
            }
        }
    }
}
