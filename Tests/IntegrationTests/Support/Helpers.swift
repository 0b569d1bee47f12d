import Foundation

/// Files of the repository, found from this source file's place in it.
enum Repository {
    static func path(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()   // Support
            .deletingLastPathComponent()   // IntegrationTests
            .deletingLastPathComponent()   // Tests
            .deletingLastPathComponent()   // repository
            .appendingPathComponent(relative).path
    }
}

/// The Python helpers under scripts/lib that drive syscalls the shell tools cannot
/// (renameat2, fallocate modes, racing opens).
enum ScriptHelper {
    static func path(_ name: String) -> String { Repository.path("scripts/lib/\(name)") }
}

/// Who runs an operation: root, or the unprivileged user nobody (uid and gid 65534, no
/// supplementary groups), which needs `-o allow_other` on the mount and a directory it may write.
enum TestUser: String, CaseIterable, CustomStringConvertible, Sendable {
    case root
    case nobody

    static let nobodyID = 65534

    /// The command prefix that runs a program as this user.
    var prefix: [String] {
        switch self {
        case .root: []
        case .nobody: ["setpriv", "--reuid=\(Self.nobodyID)", "--regid=\(Self.nobodyID)", "--clear-groups"]
        }
    }

    /// Makes `directory` (created by root) writable by this user.
    func own(_ directory: String) throws {
        guard self == .nobody else { return }
        let result = try Shell.run(["chown", "\(Self.nobodyID):\(Self.nobodyID)", directory])
        guard result.succeeded else { throw MountError(message: "chown \(directory): \(result.error)") }
    }

    var description: String { rawValue }
}
