import Foundation

/// How an encrypted store's event log and daemon log name what could reveal a file: each
/// path (and an event's reason, which may quote an origin's URL) is sealed with AES-GCM and a
/// random nonce as `sealed:BASE64URL`. While the store is mounted, the daemon opens them
/// again for `cachefs events` (the root's `user.cache.events?from=N`).
struct EventPathSealing: Sendable {
    static let prefix = "sealed:"
    private let values: ValueCipher

    init(_ encryption: StoreEncryption) {
        values = encryption.values
    }

    func seal(_ text: String) -> String {
        do {
            return Self.prefix + Base64URL.encode(try values.seal(Array(text.utf8), for: .eventPath))
        } catch {
            // AES-GCM sealing fails only on a broken crypto library: say nothing rather than the name.
            return Self.prefix
        }
    }

    /// The text `sealed` stands for; nil when it is not one this key sealed.
    func open(_ sealed: some StringProtocol) -> String? {
        guard sealed.hasPrefix(Self.prefix), let blob = Base64URL.decode(String(sealed.dropFirst(Self.prefix.count))),
              let text = try? values.open(Data(blob), for: .eventPath) else { return nil }
        return String(decoding: text, as: UTF8.self)
    }
}
