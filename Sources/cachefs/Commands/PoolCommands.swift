import ArgumentParser

/// `purge` and `clear`: actions on one pool or on all of them.
struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge", abstract: "Evict now until pools are within limits, and drop expired files.",
        discussion: """
            Examples:
              cachefs purge ~/cache            (every pool)
              cachefs purge ~/cache thumbnails
            Same as: setfattr -n user.cache.purge -v 1 MOUNT[/POOL]
            """)

    @OptionGroup var target: PoolTarget

    func run() throws { try target.act("user.cache.purge", task: "purge") }
}

struct ClearCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear", abstract: "Remove every cached file that is not pinned (persistent files stay).",
        discussion: """
            Examples:
              cachefs clear ~/cache avatars
            Same as: setfattr -n user.cache.clear -v 1 MOUNT[/POOL]
            """)

    @OptionGroup var target: PoolTarget

    func run() throws { try target.act("user.cache.clear", task: "clear") }
}

/// The mount and optional pool an action applies to, shared by purge and clear.
struct PoolTarget: ParsableArguments {
    @Argument(help: "The mount.") var mount: String
    @Argument(help: "One pool (default: all).") var pool: String?

    /// Runs the action, with progress on a terminal.
    func act(_ action: String, task: String) throws {
        try reportingFailures {
            try Xattr.requireExisting(mount)
            let target = try pool.map { try poolDirectory($0, of: mount) } ?? mount
            try ActionProgress.run(path: target, action: action, task: task)
        }
    }
}

struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Change a pool's policy (persisted in the store).",
        discussion: """
            Keys: max_size (25M, 1G, bytes), min_size (the pool's floor under disk pressure, 0 = none), max_age (90s, 15m, 12h, 7d), age_basis (access|modification), \
            max_files, low_watermark (percent), origin (file:///DIR, exec:/PROGRAM, http(s)://HOST/BASE/ or s3://BUCKET/PREFIX/; see docs/origins.md, \
            "Read-through pools"), negative_ttl (30s), max_fetches (1 to 256), \
            revalidate (never, 0 = at every open, 5m: how long a fetched file is trusted), stale_if_error (1h, 0 = never), \
            admit_max_size, admit_min_size (origin files outside are served, not kept; 0 = no bound), \
            admit_after (keep from the Nth miss on, 1 to 1000), admit_window (1h), block_size (4M; 0 = whole files), \
            cache_control (0; 1 = honour HTTP Cache-Control), \
            shared (redis://[USER@]HOST:PORT/DB or s3://BUCKET/PREFIX/, a tier shared with other machines; \
            see docs/shared-tier.md), \
            shared_max_file_size (1M; 0 = share nothing), \
            eviction (lru|s3fifo|sieve|tinylfu|gdsf|gdsf-files|auto), goal (files|bytes|cost); on the mount root: \
            min_free (1G or 5%).
            Examples:
              cachefs set ~/cache/data max_size 100M
              cachefs set ~/cache/avatars max_age 7d
              cachefs set ~/cache min_free 5%
            Same as: setfattr -n user.cache.KEY -v VALUE MOUNT/POOL
            """)

    @Argument(help: "A pool directory (or the mount root for min_free).") var path: String
    @Argument(help: "The setting.") var key: String
    @Argument(help: "The new value.") var value: String

    func run() throws {
        try reportingFailures {
            try Xattr.set(path, "user.cache." + key, value)
            print("\(key) = \(try Xattr.get(path, "user.cache." + key))")
        }
    }
}
