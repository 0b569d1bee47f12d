import CacheModel

extension IndexWriter {
    /// The batch with each `.content` change folded into the batch's earlier `.insert` or
    /// `.update` of the same entry, when nothing else about that entry (and no action)
    /// came between them; and each `.update` folded the same way when it leaves the entry
    /// under the same parent and name (so the row takes no name earlier than it did: a
    /// rename moved before another entry's rename could meet the unique name index).
    /// *Why:* a create's row and its first write's size usually commit in one group, and the
    /// UPDATE this saves rewrites the row, the indexes whose columns or conditions it changes
    /// (`writing`, `mtime`) and the usage trigger's row: the writer's CPU per create fell
    /// from 57 to 50 µs (docs/benchmarks.md). A directory's mtime moves with every name
    /// made in it (one `.update` per create or fetched file: one per batch now), and a
    /// fetched file's row is inserted at its lookup and updated when its bytes are all in
    /// (one INSERT now, when both fall in one batch). The batch is one transaction, so no
    /// state between the two was ever visible; the folded row is the one the two statements
    /// leave.
    static func coalesced(_ items: [Item]) -> [Item] {
        var result: [Item] = []
        result.reserveCapacity(items.count)
        // The position in `result` of an entry's last full-row change, while nothing else
        // about that entry has followed it.
        var fullRow: [EntryID: Int] = [:]
        // Entries whose `last_access` an `.accessTimes` wrote since that full-row change: a
        // later `.update` (which writes it too) may not move before it.
        var accessWritten: Set<EntryID> = []
        for item in items {
            guard case .change(let change) = item else {
                // An action may read or write any row: nothing folds across it.
                if case .action = item { fullRow.removeAll() }
                result.append(item)
                continue
            }
            switch change {
            case .update(let record):
                if let position = fullRow[record.entryID], !accessWritten.contains(record.entryID),
                   case .change(let earlier) = result[position], let folded = earlier.replacingRow(with: record) {
                    result[position] = .change(folded)
                    continue
                }
                fullRow[record.entryID] = result.count
                accessWritten.remove(record.entryID)
            case .insert(let record):
                fullRow[record.entryID] = result.count
                accessWritten.remove(record.entryID)
            case .content(let record):
                if let position = fullRow[record.entryID], case .change(let earlier) = result[position] {
                    result[position] = .change(earlier.withContent(of: record))
                    continue
                }
            case .detach(let id, _), .delete(let id), .deleteLinks(let id), .markDurable(let id, _),
                 .insertLink(_, let id):
                fullRow[id] = nil
            case .accessTimes(let times):
                // Not a column a `.content` writes; an `.update` writes it.
                for id in times.keys where fullRow[id] != nil { accessWritten.insert(id) }
            case .deleteLink, .setting, .accessLog, .accessLogFolded:
                // No entry column these write is one a `.content` or `.update` writes.
                break
            }
            result.append(item)
        }
        return result
    }
}

extension IndexChange {
    /// This `.insert` or `.update` writing `row` instead, when `row` keeps the entry's parent
    /// and name; nil otherwise.
    fileprivate func replacingRow(with row: EntryRecord) -> IndexChange? {
        switch self {
        case .insert(let record) where record.parent == row.parent && record.name == row.name: return .insert(row)
        case .update(let record) where record.parent == row.parent && record.name == row.name: return .update(row)
        default: return nil
        }
    }

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
