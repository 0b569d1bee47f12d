import ArgumentParser
import CacheCore

/// `cachefs keygen PATH`: a new random key for an encrypted store.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen", abstract: "Write a new random key file (32 bytes, mode 0600) for an encrypted store.",
        discussion: """
            The file is created, never replaced: an existing PATH is an error. Keep it apart from \
            the store (a store and its key together protect nothing) and give it to a mount with \
            -o key_file=PATH, or to a systemd unit as the credential cachefs.key.
            Example:
              cachefs keygen ~/.config/cachefs/store.key
            """)

    @Argument(help: "Where to write the key; must not exist.") var path: String

    func run() throws {
        do {
            try KeyFile.createRandom(at: path)
        } catch {
            printError("cachefs: \(error)")
            throw ExitCode.failure
        }
    }
}
