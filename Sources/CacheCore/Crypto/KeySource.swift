import Glibc

/// Where the user's key comes from. The first found wins: an explicit key file, then
/// systemd's credential (`LoadCredentialEncrypted=cachefs.key:…` in the unit), then a
/// passphrase typed on the terminal.
public enum KeySource: Equatable, Sendable {
    case keyFile(String)
    case credential(String)
    case terminal

    public static let credentialName = "cachefs.key"

    /// Picks the source. An explicit key file is used even when it is missing (the error
    /// then names it) rather than silently falling through to another key.
    public static func find(keyFile: String?, environment: [String: String],
                            prompt: any PassphrasePrompt) throws(EncryptionError) -> KeySource {
        if let keyFile { return .keyFile(keyFile) }
        if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            let path = directory + "/" + credentialName
            if access(path, F_OK) == 0 { return .credential(path) }
        }
        if prompt.isInteractive { return .terminal }
        throw .noKey
    }

    /// Reads the key. For a new store (`confirming`) a typed passphrase is asked twice.
    public func load(prompt: any PassphrasePrompt, confirming: Bool,
                     disk: any Disk = PosixDisk()) throws(EncryptionError) -> UserKey {
        switch self {
        case .keyFile(let path), .credential(let path):
            return try UserKey(keyFileContent: KeyFile.read(path, disk: disk))
        case .terminal:
            let passphrase = try prompt.readPassphrase(prompt: "Passphrase: ")
            if confirming {
                let again = try prompt.readPassphrase(prompt: "Passphrase again: ")
                let same = passphrase.withUnsafeBytes { first in again.withUnsafeBytes { first.elementsEqual($0) } }
                guard same else { throw .passphrasesDiffer }
            }
            return try UserKey(passphrase: passphrase)
        }
    }
}
