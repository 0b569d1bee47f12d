import struct Foundation.Data
import Synchronization

/// An entry the kernel knows about (it has looked it up) or that is open.
struct Node: Sendable {
    /// While a node is here, this copy is the newest truth about the entry; the index is
    /// brought up to date at each metadata change and when the last writer closes.
    var record: EntryRecord
    /// The kernel's lookup count (FUSE `nlookup`), dropped by FORGET.
    var lookups: UInt64 = 0
    var openHandles: Int = 0
    var writers: Int = 0
    /// Set when the name was removed while open: its size is in `pending_usage` until the
    /// last handle closes.
    var countedAsPending = false
}

/// The in-memory table of nodes, keyed by entry id (which is also the inode number).
///
/// Guarded by its own mutex, held only for in-memory work: never across disk or index I/O.
/// Invariant: a node is present while `lookups > 0 || openHandles > 0`.
final class NodeTable: Sendable {
    private let nodes = Mutex<[EntryID: Node]>([:])

    /// Records one more kernel lookup of `record` and returns the newest copy of it.
    func remember(_ record: EntryRecord) -> EntryRecord {
        nodes.withLock { Self.countLookup(of: record, in: &$0) }
    }

    /// Records one more kernel lookup of each record, in one hold of the mutex.
    func remember(_ records: [EntryRecord]) {
        nodes.withLock { nodes in
            for record in records { _ = Self.countLookup(of: record, in: &nodes) }
        }
    }

    private static func countLookup(of record: EntryRecord, in nodes: inout [EntryID: Node]) -> EntryRecord {
        var node = nodes[record.entryID] ?? Node(record: record)
        node.lookups += 1
        nodes[record.entryID] = node
        return node.record
    }

    /// Records one more kernel lookup of an entry already in memory, if it is still named
    /// `name` in `parent`; returns its newest copy, or nil when the caller must read the index.
    func rememberIfNamed(_ id: EntryID, parent: EntryID, name: Data) -> EntryRecord? {
        nodes.withLock { nodes in
            guard var node = nodes[id], node.record.parent == parent, node.record.name == name else { return nil }
            node.lookups += 1
            nodes[id] = node
            return node.record
        }
    }

    /// Drops `count` lookups; returns the node if it is no longer referenced at all.
    func forget(_ id: EntryID, count: UInt64) -> Node? {
        nodes.withLock { nodes in
            guard var node = nodes[id] else { return nil }
            node.lookups -= min(count, node.lookups)
            if node.lookups == 0 && node.openHandles == 0 {
                nodes[id] = nil
                return node
            }
            nodes[id] = node
            return nil
        }
    }

    func record(_ id: EntryID) -> EntryRecord? {
        nodes.withLock { $0[id]?.record }
    }

    func node(_ id: EntryID) -> Node? {
        nodes.withLock { $0[id] }
    }

    /// Runs `body` on a node if it is present; returns nil when it is not.
    @discardableResult
    func modify<T>(_ id: EntryID, _ body: (inout Node) throws -> T) rethrows -> T? {
        try nodes.withLock { nodes in
            guard var node = nodes[id] else { return nil }
            let result = try body(&node)
            nodes[id] = node
            return result
        }
    }

    /// Adds a node for an entry being opened that the kernel did not look up (rare, after
    /// a restart of the daemon with inodes the kernel still holds).
    func open(_ record: EntryRecord, writable: Bool) -> EntryRecord {
        nodes.withLock { nodes in
            let id = record.entryID
            var node = nodes[id] ?? Node(record: record)
            node.openHandles += 1
            if writable { node.writers += 1 }
            nodes[id] = node
            return node.record
        }
    }

    /// Counts one handle closed; returns the node as it was left and whether it is gone now.
    func close(_ id: EntryID, writable: Bool) -> (node: Node, removed: Bool)? {
        nodes.withLock { nodes in
            guard var node = nodes[id] else { return nil }
            node.openHandles -= 1
            if writable { node.writers -= 1 }
            let removed = node.lookups == 0 && node.openHandles == 0
            nodes[id] = removed ? nil : node
            return (node, removed)
        }
    }

    var all: [Node] {
        nodes.withLock { Array($0.values) }
    }
}
