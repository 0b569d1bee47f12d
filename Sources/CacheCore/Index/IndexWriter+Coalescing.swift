import CacheModel

extension IndexWriter {
    /// The batch with each `.content` change folded into the batch's earlier `.insert` or
    /// `.update` of the same entry, when nothing else about that entry (and no action)
    /// came between them. *Why:* a create's row and its first write's size usually commit
    /// in one group, and the UPDATE this saves rewrites the row, the indexes whose columns
    /// or conditions it changes (`writing`, `mtime`) and the usage trigger's row: the
    /// writer's CPU per create fell from 57 to 50 µs (docs/benchmarks.md). The batch is one
    /// transaction, so no state between the two was ever visible; the folded row is the one
    /// the two statements leave.
    static func coalesced(_ items: [Item]) -> [Item] {
        var result: [Item] = []
        result.reserveCapacity(items.count)
        // The position in `result` of an entry's last full-row change, while nothing else
        // about that entry has followed it.
        var fullRow: [EntryID: Int] = [:]
        for item in items {
            guard case .change(let change) = item else {
                // An action may read or write any row: nothing folds across it.
                if case .action = item { fullRow.removeAll() }
                result.append(item)
                continue
            }
            switch change {
            case .insert(let record), .update(let record):
                fullRow[record.entryID] = result.count
            case .content(let record):
                if let position = fullRow[record.entryID], case .change(let earlier) = result[position] {
                    result[position] = .change(earlier.withContent(of: record))
                    continue
                }
            case .detach(let id, _), .delete(let id), .deleteLinks(let id), .markDurable(let id, _),
                 .insertLink(_, let id):
                fullRow[id] = nil
            case .deleteLink, .accessTimes, .setting:
                // No entry column these write is one a `.content` writes.
                break
            }
            result.append(item)
        }
        return result
    }
}

extension IndexChange {
    /// An `.insert` or `.update` with the columns a `.content` change writes taken from
    /// `content` (the others stay as they were).
    fileprivate func withContent(of content: EntryRecord) -> IndexChange {
        func merged(_ record: EntryRecord) -> EntryRecord {
            var record = record
            record.size = content.size
            record.blocks = content.blocks
            record.mtime = content.mtime
            record.ctime = content.ctime
            record.atime = content.atime
            record.writing = content.writing
            record.durable = content.durable
            return record
        }
        switch self {
        case .insert(let record): return .insert(merged(record))
        case .update(let record): return .update(merged(record))
        default: return self
        }
    }
}
