import ArgumentParser
import CacheCore

/// `cachefs verify STORE [--repair] [--deep] [--key-file PATH]`: an offline check of an
/// unmounted store.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Check an unmounted store; with --repair, fix what is wrong.",
        discussion: """
            Reports orphan bytes (no index entry), entries without bytes, torn files (being written \
            when the daemon stopped), wrong sizes, bytes whose size cannot be read (left as they are \
            by --repair) and leftovers. An encrypted store is checked with \
            its key, from the same sources as a mount (--key-file, the systemd credential \
            $CREDENTIALS_DIRECTORY/cachefs.key, a passphrase typed on the terminal); without one it \
            is not checked at all. With the key, every file's header, stored block layout and last \
            block's tag are checked, and with --deep every block's tag: bad headers, torn blocks \
            and damaged blocks (changed, swapped, moved, cut or appended) are listed with the \
            block numbers. --repair removes such files (entry and bytes). \
            Exit status: 0 clean, 1 problems found (repaired with --repair), 2 the store could not \
            be checked.
            Examples:
              cachefs verify ~/.cache/cachefs-store
              cachefs verify ~/.cache/cachefs-store --repair
              cachefs verify ~/.cache/secret --key-file ~/.config/cachefs/store.key --deep
            """)

    @Argument(help: "The store directory (not mounted).") var store: String
    @Flag(help: "Fix what is found, as recovery at mount would.") var repair = false
    @Flag(help: "Encrypted stores: check every block's tag, not only each file's last block.") var deep = false

    @Option(help: ArgumentHelp("The key file of an encrypted store (else the systemd credential, else asked on the terminal).",
                               valueName: "path"))
    var keyFile: String?

    func run() throws {
        let report: StoreVerifier.Report
        do {
            let encryption = try unlock()
            let line = ProgressLine(task: "verify")
            report = try StoreVerifier(storePath: store, encryption: encryption, deep: deep).run(repair: repair) { checked, total in
                if checked == total {
                    line?.finish(checked, of: total, verb: "checked")
                } else {
                    line?.update(checked, of: total, verb: "checked")
                }
            }
        } catch {
            printError("cachefs: \(error)")
            throw ExitCode(2)
        }
        for problem in report.problems { print(problem.description) }
        if report.problems.isEmpty {
            print("clean: \(report.filesChecked) files checked")
            return
        }
        print("\(report.problems.count) problems in \(report.filesChecked) files\(report.repaired ? ", repaired" : "")")
        throw ExitCode.failure
    }

    /// The keys of an encrypted store; nil for a plaintext one, which takes no key.
    private func unlock() throws -> StoreEncryption? {
        guard StoreKeyFile.isEncrypted(store: store) else {
            if let keyFile {
                throw MountKeys.Problem(description: "\(store) is a plaintext store: it takes no key (drop --key-file \(keyFile))")
            }
            return nil
        }
        do {
            return try MountKeys.unlockExisting(store: store, keyFile: keyFile, prompt: TerminalPassphrasePrompt())
        } catch EncryptionError.noKey {
            throw MountKeys.Problem(description: "\(store) is an encrypted store: verify needs its key (--key-file PATH, "
                                    + "$CREDENTIALS_DIRECTORY/cachefs.key, or a passphrase typed on a terminal)")
        }
    }
}
