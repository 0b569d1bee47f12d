import Foundation
import Testing

/// An encrypted store as a user makes one: `cachefs keygen`, then `--encrypt --key-file`.
extension MountedStore {
    /// Where `encrypted(arguments:)` keeps the store's key (beside the store, not in it).
    var keyFile: String { directory + "/store.key" }

    /// A fresh encrypted store, mounted.
    static func encrypted(arguments: [String] = []) throws -> MountedStore {
        try MountedStore(arguments: arguments) { store in try store.useNewKey() }
    }

    /// Before the first mount: the store is made encrypted, with a new key.
    func useNewKey() throws {
        let made = try Shell.run([MountedStore.executable, "keygen", keyFile])
        try #require(made.succeeded, "\(made.error)")
        extraArguments += ["--encrypt", "--key-file", keyFile]
    }

    /// The object file that holds a file's bytes (its inode number is its entry id).
    func objectPath(_ relative: String) throws -> String {
        try objectPath(entry: entryID(relative))
    }

    func objectPath(entry id: String) throws -> String {
        let found = try Shell.bash("find '\(store)/objects' -type f -name '\(id)'").output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(!found.isEmpty && !found.contains("\n"), "no single object file for entry \(id): \(found)")
        return found
    }

    func entryID(_ relative: String) throws -> String {
        let id = try mustSucceed("stat -c %i '\(relative)'")
        try #require(!id.isEmpty, "no inode number for \(relative)")
        return id
    }

    /// `cachefs verify STORE` with the store's key (and `extra`), the store unmounted.
    func verify(_ extra: [String] = []) throws -> CommandResult {
        try Shell.run([MountedStore.executable, "verify", store, "--key-file", keyFile] + extra)
    }

    /// Waits for the `tampered` event of entry `id` in STORE/events.jsonl.
    func sawTamperedEvent(entry id: String) throws -> Bool {
        try Shell.waitUntil(seconds: 5) {
            let events = try String(contentsOfFile: store + "/events.jsonl", encoding: .utf8)
            return events.split(separator: "\n").contains { $0.contains("\"tampered\"") && $0.contains("entry \(id)\"") }
        }
    }
}

/// The two kinds of store, for tests that must hold on both.
enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case plaintext, encrypted

    var description: String { rawValue }
}

/// `withMountedStore` on a fresh encrypted store.
func withEncryptedMountedStore(arguments: [String] = [], _ body: (MountedStore) throws -> Void) throws {
    try withMountedStore(arguments: arguments, kind: .encrypted, body)
}

/// How a new encrypted store lays out a file's stored bytes: a 32-byte header, then blocks of
/// nonce (12) + plaintext + tag (16) (`BlockLayout.defaultBlockSize` of plaintext).
enum StoredLayout {
    static let header = 32
    static let plaintextBlock = 16384
    static let storedBlock = 12 + plaintextBlock + 16
    static func offset(ofBlock index: Int) -> Int { header + index * storedBlock }
}
