@testable import CacheCore
import CacheModel
import Foundation
import Glibc

/// What the cut test does: the namespace operations of `NamespaceModelTests`, and flags.
enum CutOperation: CustomStringConvertible {
    case namespace(ModelOperation)
    case flag(String, name: String, on: Bool)

    var description: String {
        switch self {
        case .namespace(let operation): operation.description
        case .flag(let path, let name, let on): "set \(name)=\(on ? 1 : 0) on \(path)"
        }
    }

    func run(on engine: CacheEngine, pool: EntryID) throws {
        switch self {
        case .namespace(let operation):
            try operation.run(on: engine, pool: pool)
        case .flag(let path, let name, let on):
            var id = pool
            for component in path.split(separator: "/") {
                id = try engine.lookup(parent: id, name: Array(component.utf8)).id
                engine.forget(id, count: 1)
            }
            try engine.setxattr(id, name: "user.cache." + name, value: Array((on ? "1" : "0").utf8), flags: 0)
        }
    }
}

/// `Model` plus each path's persistent and pinned flags: new entries take their directory's,
/// a flag set on a directory is copied to everything beneath it, a rename keeps them.
struct FlaggedModel {
    private(set) var names = Model()
    private(set) var persistent: Set<String> = []
    private(set) var pinned: Set<String> = []

    var state: [String: String] {
        var result: [String: String] = [:]
        for (path, value) in names.snapshot {
            result[path] = value + (persistent.contains(path) ? "+p" : "") + (pinned.contains(path) ? "+n" : "")
        }
        return result
    }

    var fileCount: Int { names.snapshot.values.filter { $0.hasPrefix("f:") }.count }

    var usage: PoolUsage {
        var usage = PoolUsage()
        for (path, value) in names.snapshot where value.hasPrefix("f:") {
            let bytes = Int64(value.utf8.count - 2)
            if persistent.contains(path) {
                usage.persistentBytes += bytes
                usage.persistentFiles += 1
            } else {
                usage.cachedBytes += bytes
                usage.cachedFiles += 1
            }
        }
        return usage
    }

    mutating func randomOperation(_ random: inout SplitMix) -> CutOperation {
        let paths = names.snapshot.keys.sorted()
        guard random.next() % 5 == 0, !paths.isEmpty else { return .namespace(names.randomOperation(&random)) }
        let path = paths[Int(random.next() % UInt64(paths.count))]
        return .flag(path, name: random.next() % 2 == 0 ? "persistent" : "pinned", on: random.next() % 3 != 0)
    }

    mutating func apply(_ operation: CutOperation) -> Int32 {
        switch operation {
        case .flag(let path, let name, let on):
            let found = resolve(path)
            guard found == 0 else { return found }
            let beneath = names.snapshot.keys.filter { $0 == path || $0.hasPrefix(path + "/") }
            if name == "persistent" { update(&persistent, beneath, on) } else { update(&pinned, beneath, on) }
            return 0
        case .namespace(let change):
            let result = names.apply(change)
            guard result == 0 else { return result }
            switch change {
            case .mkdir(let path), .write(let path, _):
                let parent = path.lastIndex(of: "/").map { String(path[..<$0]) }
                update(&persistent, [path], parent.map(persistent.contains) ?? false)
                update(&pinned, [path], parent.map(pinned.contains) ?? false)
            case .unlink(let path), .rmdir(let path):
                persistent.remove(path)
                pinned.remove(path)
            case .rename(let from, let to) where from != to:
                persistent = Self.moved(persistent, from: from, to: to)
                pinned = Self.moved(pinned, from: from, to: to)
            case .rename:
                break
            case .link, .symlink:
                preconditionFailure("the cut model draws no links (flags belong to inodes, not paths)")
            }
            return 0
        }
    }

    /// ENOENT or ENOTDIR as the lookups of each component of `path` would answer.
    private func resolve(_ path: String) -> Int32 {
        let components = path.split(separator: "/").map(String.init)
        for index in components.indices {
            let prefix = components[...index].joined(separator: "/")
            guard let value = names.snapshot[prefix] else { return ENOENT }
            if value != "d" && index < components.count - 1 { return ENOTDIR }
        }
        return 0
    }

    private func update(_ set: inout Set<String>, _ paths: [String], _ on: Bool) {
        for path in paths {
            if on { set.insert(path) } else { set.remove(path) }
        }
    }

    /// The set after `from` (and what is beneath it) became `to`, replacing `to`.
    private static func moved(_ set: Set<String>, from: String, to: String) -> Set<String> {
        var result = set.filter { $0 != to && !$0.hasPrefix(to + "/") }
        result = result.filter { $0 != from && !$0.hasPrefix(from + "/") }
        for path in set where path == from || path.hasPrefix(from + "/") {
            result.insert(to + path.dropFirst(from.count))
        }
        return result
    }
}
