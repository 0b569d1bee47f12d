import ArgumentParser

@main
struct CachefsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cachefs",
        abstract: "A disk cache manager you use as a FUSE filesystem.",
        discussion: """
            A store directory on local disk is mounted as a directory whose top-level folders are \
            cache pools. Copy files in to cache them; the least recently read files are evicted \
            first. Control everything with extended attributes (setfattr/getfattr) or these commands.
            """,
        version: CachefsVersion.current,
        subcommands: [
            MountCommand.self, StatusCommand.self, PinCommand.self, UnpinCommand.self, PersistCommand.self,
            UnpersistCommand.self, PurgeCommand.self, ClearCommand.self, SetCommand.self, EventsCommand.self,
            VerifyCommand.self, RemovePoolCommand.self, PrefetchCommand.self, ReplayCommand.self, PreviewCommand.self,
            KeygenCommand.self, RekeyCommand.self, CipherSpeedCommand.self, PolicyMemoryCommand.self, GuardianCommand.self,
        ])
}
