import CacheNames
import Foundation
import Testing

/// The namespace lock is private to `Names`: outside `Sources/CacheCore/Names/` no source
/// takes it or reaches the state behind it; other owners call Names' operations. (One
/// module cannot make a group of files a compiler boundary, so this test draws the line.)
@Suite struct LockOwnershipTests {
    private static let holds = ["namespace.withLock", "changeInMemory", "withLoaded(", "change(loading",
                                "NamespaceState"]

    @Test func onlyNamesTakesTheNamespaceLock() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let sources = repository.appendingPathComponent("Sources")
        let names = sources.appendingPathComponent("CacheCore/Names").path + "/"
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 100, "the sources were found")
        var outside: [String] = []
        for file in files {
            let path = sources.appendingPathComponent(file).path
            guard !path.hasPrefix(names) else { continue }
            let text = try String(contentsOfFile: path, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where Self.holds.contains(where: line.contains) {
                outside.append("\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(outside.isEmpty, "the namespace lock taken outside Names/:\n\(outside.joined(separator: "\n"))")
    }
}
