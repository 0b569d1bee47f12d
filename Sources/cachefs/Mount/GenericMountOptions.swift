/// The options mount(8), /etc/fstab and Debian's `mount.fuse3` pass to a FUSE helper besides
/// cachefs's own, and what the daemon does with each.
enum GenericMountOptions {
    /// Kernel mount flags that libfuse (3.14) hands to mount(2) as they are.
    static let kernelFlags: Set<String> = [
        "ro", "rw", "nosuid", "nodev", "exec", "noexec", "async", "sync", "dirsync", "atime", "noatime",
    ]

    /// Words that tell mount(8) or systemd when and by whom to mount, and access-time flags
    /// libfuse 3.14 refuses (the daemon keeps access times itself); the daemon ignores them.
    /// `dev` and `suid` are among them: `mount.fuse3` adds both to every line that does not say
    /// `nodev`/`nosuid`, so they cannot tell a user's wish, and a cache stays `nodev,nosuid`.
    static let ignoredWords: Set<String> = [
        "dev", "suid",
        "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "nofail", "_netdev",
        "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime", "nolazytime", "diratime", "nodiratime",
    ]

    /// `x-systemd.automount`, `x-gvfs-show`, `comment=…`: userspace notes in an fstab line.
    static let ignoredPrefixes = ["x-", "comment="]

    static func isIgnored(_ option: String) -> Bool {
        ignoredWords.contains(option) || ignoredPrefixes.contains { option.hasPrefix($0) }
    }
}
