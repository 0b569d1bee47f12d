import Foundation
import Testing

/// The namespace lock is private to `Names` because the `CacheNames` target keeps it
/// internal: `Namespace`, `NamespaceState`, `Names.namespace` and every hold (`withLoaded`,
/// `change`, `changeInMemory`) are reachable from no other target, so a CacheCore source that
/// tried to take the lock would not compile. What the compiler cannot see is one of them made
/// `package` or `public` to get a caller through: this test fails then, and when they move
/// out of `Sources/CacheNames/`.
@Suite struct LockOwnershipTests {
    /// Each declaration that opens the lock or the state behind it, as written in CacheNames.
    private static let holds = [
        "final class Namespace", "struct NamespaceState", "let namespace: Namespace", "func withLock<",
        "func withLoaded<", "func change<", "func changeInMemory<",
    ]

    @Test func theNamespaceLockStaysInternalToCacheNames() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let names = repository.appendingPathComponent("Sources/CacheNames")
        let files = try #require(FileManager.default.enumerator(atPath: names.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        var found: Set<String> = []
        var widened: [String] = []
        for file in files {
            let text = try String(contentsOfFile: names.appendingPathComponent(file).path, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                guard let hold = Self.holds.first(where: line.contains) else { continue }
                found.insert(hold)
                let access = line.trimmingCharacters(in: .whitespaces).split(separator: " ").prefix(3)
                if access.contains(where: { ["package", "public", "open"].contains($0) }) {
                    widened.append("\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found == Set(Self.holds), "not declared in Sources/CacheNames: \(Set(Self.holds).subtracting(found))")
        #expect(widened.isEmpty, "the namespace lock made reachable outside CacheNames:\n\(widened.joined(separator: "\n"))")
    }
}
