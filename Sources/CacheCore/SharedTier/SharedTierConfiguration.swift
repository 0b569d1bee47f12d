import Foundation
import CacheModel

/// What a mount gives the shared tier: the password (`-o shared_password_file=PATH`; never
/// in the pools' settings) and its deadlines.
public struct SharedTierConfiguration: Sendable {
    /// Sent with AUTH to every pool's tier; nil sends none.
    public var password: String?
    public var lookupMilliseconds = Tunables.sharedLookupMilliseconds
    public var writeMilliseconds = Tunables.sharedWriteMilliseconds
    public var queueLimit = Tunables.sharedQueueLimit

    public init(password: String? = nil) {
        self.password = password
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
}
