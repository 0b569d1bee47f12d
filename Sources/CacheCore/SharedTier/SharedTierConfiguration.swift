import Foundation
import CacheModel

/// What a mount gives the shared tier: the password (`-o shared_password_file=PATH`; never
/// in the pools' settings), the CA bundle of its TLS servers (`-o shared_ca_file=PATH`) and
/// its deadlines.
public struct SharedTierConfiguration: Sendable {
    /// Sent with AUTH to every pool's tier; nil sends none.
    public var password: String?
    /// PEM CA certificates a `rediss://` server's certificate must verify against; nil uses
    /// the system's trust store.
    public var trustedCAFile: String?
    public var lookupMilliseconds = Tunables.sharedLookupMilliseconds
    public var writeMilliseconds = Tunables.sharedWriteMilliseconds
    public var queueLimit = Tunables.sharedQueueLimit

    public init(password: String? = nil) {
        self.password = password
    }

    /// systemd's credential of the password (`LoadCredential=cachefs.shared-password:…` in the
    /// unit), read when no `shared_password_file` is given.
    public static let passwordCredentialName = "cachefs.shared-password"

    /// The tier's password: from `file` when given (a file that cannot be read stops the mount
    /// rather than falling through to another), else from systemd's credential when there is
    /// one, else none.
    public static func password(file: String?, environment: [String: String]) throws -> String? {
        if let file { return try password(fromFile: file) }
        guard let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty else { return nil }
        let path = directory + "/" + passwordCredentialName
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try password(fromFile: path)
    }

    /// The password in `path`, its trailing newline stripped; throws a reason when the
    /// file cannot be read or is empty.
    public static func password(fromFile path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SharedTierURLError("cannot read the shared tier's password file \(path)")
        }
        var bytes = [UInt8](data)
        while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
        let text = String(decoding: bytes, as: UTF8.self)
        guard !text.isEmpty else { throw SharedTierURLError("the shared tier's password file \(path) is empty") }
        return text
    }

    /// `path` if it can be the tier's CA bundle: a readable file holding at least one PEM
    /// certificate. Throws a reason otherwise, so a mistyped path stops the mount rather than
    /// failing every TLS connection later.
    public static func caFile(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SharedTierURLError("cannot read the shared tier's CA file \(path)")
        }
        guard String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw SharedTierURLError("the shared tier's CA file \(path) holds no PEM certificate")
        }
        return path
    }
}
