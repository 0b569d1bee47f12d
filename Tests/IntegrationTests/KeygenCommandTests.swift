import Foundation
import Glibc
import Testing

/// `cachefs keygen`, run as a user would.
@Suite struct KeygenCommandTests {
    @Test func keygenWritesAPrivate32ByteKeyAndRefusesToOverwriteIt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-keygen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.key").path

        let first = try Shell.run([MountedStore.executable, "keygen", path])
        #expect(first.succeeded, "\(first.error)")
        #expect(first.output.isEmpty && first.error.isEmpty)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(info.st_size == 32)
        let key = try Data(contentsOf: URL(fileURLWithPath: path))

        let second = try Shell.run([MountedStore.executable, "keygen", path])
        #expect(second.status != 0)
        let lines = second.error.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains("already exists") == true, "\(second.error)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == key)

        let missingDirectory = try Shell.run([MountedStore.executable, "keygen", directory.path + "/no/such/dir/key"])
        #expect(missingDirectory.status != 0)
        #expect(missingDirectory.error.split(separator: "\n").count == 1, "\(missingDirectory.error)")
    }
}
