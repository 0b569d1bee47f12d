import ArgumentParser
import CacheCore
import Foundation

/// `cachefs rekey STORE`: the store's data key sealed by a new user key. Only the store's
/// small `wrapped-key` file is rewritten (crash-safely: an interrupted rekey leaves the old
/// key or the new one working), so it takes no time whatever the store holds, and works
/// while the store is mounted.
struct RekeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey", abstract: "Change the key of an encrypted store (its files are not rewritten).",
        discussion: """
            Examples:
              cachefs keygen new.key && cachefs rekey STORE --key-file old.key --new-key-file new.key
              cachefs rekey STORE            (asks for the old passphrase, then the new one twice)
            Then mount with the new key. A key file of exactly 32 bytes is a key; any other \
            content is a passphrase.
            """)

    @Argument(help: "The encrypted store.") var store: String

    @Option(help: ArgumentHelp("The store's key file now (else asked on the terminal).", valueName: "path"))
    var keyFile: String?

    @Option(help: ArgumentHelp("The new key file (else a new passphrase is asked twice).", valueName: "path"))
    var newKeyFile: String?

    func run() throws {
        let storePath = URL(fileURLWithPath: store).standardizedFileURL.path
        let terminal = TerminalPassphrasePrompt()
        do {
            // No systemd credential here: the keys are the command's own.
            let old = try KeySource.find(keyFile: keyFile, environment: [:], prompt: terminal)
                .load(prompt: terminal, confirming: false)
            // The old key is checked before a new passphrase is asked for.
            _ = try StoreKeyFile.unlock(store: storePath, userKey: old)
            let new = try KeySource.find(keyFile: newKeyFile, environment: [:], prompt: terminal)
                .load(prompt: terminal, confirming: true)
            try StoreKeyFile.rekey(store: storePath, from: old, to: new)
            print("\(storePath): key changed; mount it with the new key")
        } catch {
            printError("cachefs: \(error)")
            throw ExitCode.failure
        }
    }
}
