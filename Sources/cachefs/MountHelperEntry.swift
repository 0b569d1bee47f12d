import ArgumentParser
import Foundation

/// The entry point: `cachefs STORE MOUNT -o OPTIONS` means `cachefs mount STORE MOUNT -o OPTIONS`.
///
/// mount(8) hands `mount -t fuse.cachefs` and fuse.cachefs lines of /etc/fstab to Debian's
/// `mount.fuse3`, which runs `cachefs SOURCE MOUNTPOINT -o OPTIONS` through `/bin/sh` (with
/// mount(8)'s environment, which has no PATH, so the shell's default path finds the program).
extension CachefsCommand {
    static func main() {
        main(MountHelperArguments.commandArguments(Array(CommandLine.arguments.dropFirst())))
    }
}

enum MountHelperArguments {
    /// `arguments` without the program name, with `mount` put in front when they have the
    /// helper's form: a first word that is no subcommand or option but a path (it has a '/'
    /// or exists), and a mountpoint after it. A mistyped subcommand stays an error.
    static func commandArguments(_ arguments: [String]) -> [String] {
        guard arguments.count >= 2, let first = arguments.first, !first.hasPrefix("-"),
              !subcommandNames.contains(first),
              first.contains("/") || FileManager.default.fileExists(atPath: first)
        else { return arguments }
        return ["mount"] + arguments
    }

    private static var subcommandNames: Set<String> {
        Set(CachefsCommand.configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"])
    }
}
