import ArgumentParser

/// `pin`, `unpin`, `persist`, `unpersist`: set a file or directory flag on each path.
struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Pin files or directories: counted against the pool, never evicted.",
        discussion: """
            Examples:
              cachefs pin ~/cache/data/report.pdf
              cachefs pin --for 2h ~/cache/thumbnails/today
              cachefs pin --until 2026-12-24T18:00:00Z ~/cache/data/tickets
            Same as: setfattr -n user.cache.pinned -v 1 PATH
            """)

    @Option(help: "Pin for a while only (90s, 15m, 12h, 7d).")
    var `for`: String?

    @Option(help: "Pin until an RFC 3339 time.")
    var until: String?

    @OptionGroup var targets: FlagTargets

    func validate() throws {
        if self.for != nil && until != nil { throw ValidationError("give --for or --until, not both") }
    }

    func run() throws {
        try targets.set("user.cache.pinned", self.for ?? until ?? "1")
    }
}

struct UnpinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin", abstract: "Unpin files or directories.",
        discussion: "Example: cachefs unpin ~/cache/data/report.pdf   (setfattr -n user.cache.pinned -v 0 PATH)")

    @OptionGroup var targets: FlagTargets

    func run() throws { try targets.set("user.cache.pinned", "0") }
}

struct PersistCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "persist", abstract: "Make files or directories persistent: never evicted, not counted.",
        discussion: "Example: cachefs persist ~/cache/data/keep   (setfattr -n user.cache.persistent -v 1 PATH)")

    @OptionGroup var targets: FlagTargets

    func run() throws { try targets.set("user.cache.persistent", "1") }
}

struct UnpersistCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpersist", abstract: "Return persistent files to the cache, as most recently used.",
        discussion: "Example: cachefs unpersist ~/cache/data/keep   (setfattr -n user.cache.persistent -v 0 PATH)")

    @OptionGroup var targets: FlagTargets

    func run() throws { try targets.set("user.cache.persistent", "0") }
}

/// The paths a flag command sets, shared by pin, unpin, persist and unpersist.
struct FlagTargets: ParsableArguments {
    @Argument(help: "Files or directories on a cachefs mount.")
    var paths: [String]

    func set(_ name: String, _ value: String) throws {
        try reportingFailures { for path in paths { try Xattr.set(path, name, value) } }
    }
}
