/// The options mount(8), /etc/fstab and Debian's `mount.fuse3` pass to a FUSE helper besides
/// cachefs's own, and what the daemon does with each.
enum GenericMountOptions {
    /// Kernel mount flags that libfuse (3.14) hands to mount(2) as they are. `mount.fuse3` adds
    /// `dev` and `suid` unless the line says `nodev`/`nosuid`; `cachefs mount` alone mounts
    /// `nodev,nosuid` (libfuse's default).
    static let kernelFlags: Set<String> = [
        "ro", "rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async", "sync", "dirsync",
        "atime", "noatime",
    ]

    /// Words that tell mount(8) or systemd when and by whom to mount, and access-time flags
    /// libfuse 3.14 refuses (the daemon keeps access times itself); the daemon ignores them.
    static let ignoredWords: Set<String> = [
        "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "nofail", "_netdev",
        "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime", "nolazytime", "diratime", "nodiratime",
    ]

    /// `x-systemd.automount`, `x-gvfs-show`, `comment=…`: userspace notes in an fstab line.
    static let ignoredPrefixes = ["x-", "comment="]

    static func isIgnored(_ option: String) -> Bool {
        ignoredWords.contains(option) || ignoredPrefixes.contains { option.hasPrefix($0) }
    }
}
