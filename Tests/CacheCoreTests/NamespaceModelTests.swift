@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// Seeded random sequences of namespace operations, applied to the engine and to a plain
/// reference model (paths in a dictionary), compared after every step; then a crash at a
/// random point, whose recovered store must equal the model as it was at one of the steps
/// since the last commit the test waited for (group commits keep operations whole and in
/// order, so a crash can only cut the history, never reorder or split it).
@Suite struct NamespaceModelTests {
    @Test(arguments: Array(UInt64(1)...12))
    func randomOperationsMatchAModelAndACrashKeepsAPrefix(seed: UInt64) throws {
        let store = try TestStore()
        var random = SplitMix(seed: seed)
        var model = Model()
        var history: [[String: String]] = []
        do {
            // A long window: only the waits below (and internal flushes) commit.
            let engine = try store.open(commitWindow: 3600)
            let data = try engine.pool("data")
            let steps = 120
            let syncedAt = Int(random.next() % UInt64(steps))
            for step in 0..<steps {
                let operation = model.randomOperation(&random, withLinks: true)
                let expected = model.apply(operation)
                let actual = Self.errno { try operation.run(on: engine, pool: data) }
                #expect(actual == expected, "step \(step): \(operation) answered \(actual), the model \(expected)")
                let tree = try Self.tree(of: engine, pool: data)
                #expect(tree == model.snapshot, "step \(step): \(operation) left the tree apart from the model")
                if step == syncedAt {
                    engine.waitForIndex()
                    history = []
                }
                if step >= syncedAt { history.append(model.snapshot) }
            }
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        try store.releaseLockOfCrashedEngine()
        let engine = try store.open()
        defer { engine.shutdown() }
        let recovered = try Self.tree(of: engine, pool: try engine.pool("data"))
        #expect(history.contains(recovered), "the recovered tree is no state the model went through")
        engine.waitForIndex()
        // Contents are unique per write, so names with the same content are links of one file.
        let files = Set(recovered.values.filter { $0.hasPrefix("f:") }).count
        #expect(store.objectFiles.count == files, "bytes without a name, or names without bytes, after recovery")
        #expect(try engine.index.linkCountMismatches().isEmpty, "link counts apart from the names after recovery")
    }

    /// The engine's tree below a pool: path → "d" or "f:" + content.
    static func tree(of engine: CacheEngine, pool: EntryID) throws -> [String: String] {
        var result: [String: String] = [:]
        var pending: [(EntryID, String)] = [(pool, "")]
        while let (directory, prefix) = pending.popLast() {
            for item in try engine.readdir(directory, offset: 0, limit: 100_000) where item.nextOffset > 2 {
                let path = prefix + String(decoding: item.name, as: UTF8.self)
                if item.kind == .directory {
                    result[path] = "d"
                    pending.append((item.id, path + "/"))
                } else if item.kind == .symlink {
                    result[path] = "l:" + String(decoding: try engine.readlink(item.id), as: UTF8.self)
                } else {
                    result[path] = "f:" + String(decoding: try engine.readAll(item.id), as: UTF8.self)
                }
            }
        }
        return result
    }

    static func errno(_ body: () throws -> Void) -> Int32 {
        do {
            try body()
            return 0
        } catch let error as CacheError {
            return error.errno
        } catch {
            return EIO
        }
    }
}

/// What the test does to the namespace, by path below the pool.
enum ModelOperation: CustomStringConvertible {
    case mkdir(String)
    case write(String, String)
    case unlink(String)
    case rmdir(String)
    case rename(String, String)
    case link(String, String)
    case symlink(String, target: String)

    var description: String {
        switch self {
        case .mkdir(let path): "mkdir \(path)"
        case .write(let path, let content): "write \(path) \(content)"
        case .unlink(let path): "unlink \(path)"
        case .rmdir(let path): "rmdir \(path)"
        case .rename(let from, let to): "rename \(from) \(to)"
        case .link(let from, let to): "link \(from) \(to)"
        case .symlink(let path, let target): "symlink \(path) -> \(target)"
        }
    }

    func run(on engine: CacheEngine, pool: EntryID) throws {
        func split(_ path: String) throws -> (EntryID, [UInt8]) {
            var components = path.split(separator: "/").map(String.init)
            let name = components.removeLast()
            var directory = pool
            // A kernel that forgets each inode at once: nothing but a handle keeps a removed file.
            for component in components {
                directory = try engine.lookup(parent: directory, name: Array(component.utf8)).id
                engine.forget(directory, count: 1)
            }
            return (directory, Array(name.utf8))
        }
        switch self {
        case .mkdir(let path):
            let (parent, name) = try split(path)
            _ = try engine.mkdir(parent: parent, name: name, mode: 0o755, caller: tester)
        case .write(let path, let content):
            let (parent, name) = try split(path)
            let created = try engine.create(parent: parent, name: name, mode: 0o644, flags: O_WRONLY, caller: tester)
            _ = try Array(content.utf8).withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
            try engine.flush(created.handle)
            engine.release(created.handle)
            engine.forget(created.attributes.id, count: 1)
        case .unlink(let path):
            let (parent, name) = try split(path)
            try engine.unlink(parent: parent, name: name)
        case .rmdir(let path):
            let (parent, name) = try split(path)
            try engine.rmdir(parent: parent, name: name)
        case .rename(let from, let to):
            let (parent, name) = try split(from)
            let (newParent, newName) = try split(to)
            try engine.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: [])
        case .link(let from, let to):
            let (parent, name) = try split(from)
            let source = try engine.lookup(parent: parent, name: name).id
            engine.forget(source, count: 1)
            let (newParent, newName) = try split(to)
            let linked = try engine.link(source, newParent: newParent, newName: newName)
            engine.forget(linked.id, count: 1)
        case .symlink(let path, let target):
            let (parent, name) = try split(path)
            let created = try engine.symlink(parent: parent, name: name, target: Array(target.utf8), caller: tester)
            engine.forget(created.id, count: 1)
        }
    }
}

/// The reference: every path below the pool with "d" or "f:" + content, and POSIX's answers.
struct Model {
    private(set) var snapshot: [String: String] = [:]
    private var written = 0

    private func parent(of path: String) -> String? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }

    private func hasChildren(_ path: String) -> Bool {
        snapshot.keys.contains { $0.hasPrefix(path + "/") }
    }

    /// ENOENT unless the parent directory exists (ENOTDIR when it is a file).
    private func parentErrno(_ path: String) -> Int32 {
        guard let parent = parent(of: path) else { return 0 }
        switch snapshot[parent] {
        case nil: return parentErrno(parent) == ENOTDIR ? ENOTDIR : ENOENT
        case "d": return 0
        default: return ENOTDIR
        }
    }

    /// A random operation on a few names; `withLinks` adds hard links and symlinks.
    mutating func randomOperation(_ random: inout SplitMix, withLinks: Bool = false) -> ModelOperation {
        let directories = [""] + snapshot.filter { $0.value == "d" }.keys.sorted().map { $0 + "/" }
        func path() -> String {
            directories[Int(random.next() % UInt64(directories.count))]
                + ["a", "b", "c", "d"][Int(random.next() % 4)]
        }
        switch random.next() % (withLinks ? 12 : 10) {
        case 10: return .link(path(), path())
        case 11:
            written += 1
            return .symlink(path(), target: "t\(written)")
        case 0, 1: return .mkdir(path())
        case 2, 3, 4:
            written += 1
            return .write(path(), "v\(written)")
        case 5: return .unlink(path())
        case 6: return .rmdir(path())
        default: return .rename(path(), path())
        }
    }

    /// Applies an operation as POSIX would and returns its errno (0 for success).
    mutating func apply(_ operation: ModelOperation) -> Int32 {
        switch operation {
        case .mkdir(let path):
            if let error = nonZero(parentErrno(path)) { return error }
            guard snapshot[path] == nil else { return EEXIST }
            snapshot[path] = "d"
        case .write(let path, let content):
            if let error = nonZero(parentErrno(path)) { return error }
            guard snapshot[path] == nil else { return EEXIST }
            snapshot[path] = "f:" + content
        case .unlink(let path):
            if let error = nonZero(parentErrno(path)) { return error }
            guard let kind = snapshot[path] else { return ENOENT }
            guard kind != "d" else { return EISDIR }
            snapshot[path] = nil
        case .rmdir(let path):
            if let error = nonZero(parentErrno(path)) { return error }
            guard let kind = snapshot[path] else { return ENOENT }
            guard kind == "d" else { return ENOTDIR }
            guard !hasChildren(path) else { return ENOTEMPTY }
            snapshot[path] = nil
        case .rename(let from, let to):
            if let error = nonZero(parentErrno(from)) { return error }
            guard let kind = snapshot[from] else { return ENOENT }
            if let error = nonZero(parentErrno(to)) { return error }
            if kind == "d" && (to == from || to.hasPrefix(from + "/")) { return to == from ? 0 : EINVAL }
            if let existing = snapshot[to] {
                // Contents are unique per write: the same one is two names of one file, and
                // rename(2) then does nothing.
                if to == from || (kind != "d" && existing == kind) { return 0 }
                if kind == "d" && existing != "d" { return ENOTDIR }
                if kind != "d" && existing == "d" { return EISDIR }
                if existing == "d" && hasChildren(to) { return ENOTEMPTY }
            }
            var moved: [String: String] = [:]
            for (path, value) in snapshot where path == from || path.hasPrefix(from + "/") {
                moved[to + path.dropFirst(from.count)] = value
                snapshot[path] = nil
            }
            snapshot[to] = nil
            snapshot.merge(moved) { _, new in new }
        case .link(let from, let to):
            if let error = nonZero(parentErrno(from)) { return error }
            guard let kind = snapshot[from] else { return ENOENT }
            if let error = nonZero(parentErrno(to)) { return error }
            guard snapshot[to] == nil else { return EEXIST }
            guard kind != "d" else { return EPERM }
            snapshot[to] = kind
        case .symlink(let path, let target):
            if let error = nonZero(parentErrno(path)) { return error }
            guard snapshot[path] == nil else { return EEXIST }
            snapshot[path] = "l:" + target
        }
        return 0
    }

    private func nonZero(_ value: Int32) -> Int32? { value == 0 ? nil : value }
}

/// A small seeded generator, so a failing sequence can be replayed from its seed.
struct SplitMix {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
