import CacheCore
import Foundation
import Glibc

/// The keys of the store being mounted: unlocked before any other work on it, so a wrong or
/// missing key, or a key for a plaintext store, fails at once with one line and changes
/// nothing. A store is encrypted if it was created with `--encrypt` (it has a `wrapped-key`);
/// that choice is made once, when the store is created.
enum MountKeys {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// Whether mounting `store` needs a key at all.
    static func needsKey(store: String, encrypt: Bool) -> Bool {
        encrypt || StoreKeyFile.isEncrypted(store: store)
    }

    /// Whether the key will be typed (no key file, no systemd credential, a terminal): then
    /// `cachefs mount` asks in the foreground and hands it to the daemon it starts.
    static func isTyped(keyFile: String?, prompt: any PassphrasePrompt) -> Bool {
        // `find` fails only when there is no key source at all: nothing to type, and the
        // daemon's own search for the key reports it.
        (try? KeySource.find(keyFile: keyFile, environment: ProcessInfo.processInfo.environment, prompt: prompt))
            == .terminal
    }

    /// The keys of `store`, an existing encrypted store, from the first key source found
    /// (`cachefs verify` unlocks a store the same way as a mount).
    static func unlockExisting(store: String, keyFile: String?, prompt: any PassphrasePrompt) throws -> StoreEncryption {
        let key = try KeySource.find(keyFile: keyFile, environment: ProcessInfo.processInfo.environment, prompt: prompt)
            .load(prompt: prompt, confirming: false)
        return try StoreKeyFile.unlock(store: store, userKey: key)
    }

    /// The store's unlocked keys; nil for a plaintext store. A new store mounted with
    /// `encrypt` becomes an encrypted one here.
    static func unlock(store: String, encrypt: Bool, keyFile: String?,
                       prompt: any PassphrasePrompt) throws -> StoreEncryption? {
        if StoreKeyFile.isEncrypted(store: store) {
            return try unlockExisting(store: store, keyFile: keyFile, prompt: prompt)
        }
        let environment = ProcessInfo.processInfo.environment
        let hasIndex = FileManager.default.fileExists(atPath: StoreLayout(root: store).indexPath)
        guard encrypt else {
            if let keyFile, hasIndex {
                throw Problem(description: "\(store) is a plaintext store, created without --encrypt: "
                              + "it takes no key (drop key_file=\(keyFile))")
            }
            if keyFile != nil {
                throw Problem(description: "a key was given without --encrypt (-o encrypt): "
                              + "add it to create an encrypted store at \(store)")
            }
            return nil
        }
        guard !hasIndex else {
            throw Problem(description: "\(store) is a plaintext store: encryption is chosen when a store is "
                          + "created (mount a new store with --encrypt and copy the files over)")
        }
        // A passphrase handed over by `cachefs mount` was confirmed there.
        let key = try KeySource.find(keyFile: keyFile, environment: environment, prompt: prompt)
            .load(prompt: prompt, confirming: !(prompt is InheritedPassphrase))
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        return try StoreKeyFile.create(inStore: store, userKey: key)
    }
}

/// A passphrase `cachefs mount` read on its terminal and hands to the daemon it starts
/// through an inherited pipe (never the command line or the environment, which other
/// processes can read).
struct InheritedPassphrase: PassphrasePrompt {
    static let descriptor: Int32 = 4
    static let environmentName = "CACHEFS_KEY_FD"

    let fd: Int32

    /// The pipe's end, when the parent passed one.
    static func fromEnvironment() -> InheritedPassphrase? {
        guard let text = ProcessInfo.processInfo.environment[environmentName], let fd = Int32(text) else { return nil }
        return InheritedPassphrase(fd: fd)
    }

    var isInteractive: Bool { true }

    func readPassphrase(prompt: String) throws(EncryptionError) -> SecretBytes {
        defer { close(fd) }
        let line = try SecretBytes(capacity: 4097) { (buffer) throws(EncryptionError) -> Int in
            var count = 0
            while count < buffer.count {
                let read = Glibc.read(fd, buffer.baseAddress! + count, buffer.count - count)
                if read < 0 && errno == EINTR { continue }
                guard read >= 0 else { throw .io(operation: "read the passphrase from cachefs mount", errno: errno) }
                if read == 0 { break }
                count += read
            }
            return count
        }
        return line
    }
}
