import CacheModel
import Foundation

/// A preview listed as lines, with the request it answers.
struct PreviewPages: Sendable {
    let pool: EntryID
    let request: PreviewRequest
    let lines: [String]
}

/// `user.cache.preview` on a pool: the files the evictor would remove next, one line each
/// (`PATH<TAB>SIZE<TAB>LAST_ACCESS<TAB>WHY`, paths with `\`, tab and newline escaped).
///
/// Without parameters it lists the next 100 victims. `user.cache.preview?size=BYTES`,
/// `?free=BYTES` or `?next=N`, with `&from=K` for the lines from the K-th on, ask for what
/// `cachefs preview` shows. A value holds at most `Tunables.attributePageBytes`; when lines are left, the
/// last line is `more<TAB>K`, and the pages after the first come from the same snapshot.
/// A preview waits for an eviction pass in progress (it runs the passes' code under their lock).
extension Attributes {
    func previewValue(of pool: EntryRecord, query: Substring) throws -> [UInt8] {
        let (request, from) = try Self.parsePreviewQuery(query)
        let lines: [String]
        if from > 0, let last = lastPreview.withLock({ $0 }), last.pool == pool.entryID, last.request == request {
            lines = last.lines
        } else {
            lines = try previewLines(of: pool.entryID, request)
        }
        var value = ""
        var index = min(from, lines.count)
        while index < lines.count, value.utf8.count + lines[index].utf8.count + 1 <= Tunables.attributePageBytes {
            value += lines[index] + "\n"
            index += 1
        }
        // The snapshot is kept while pages of it are still to be read, and no longer: a
        // preview of a large pool is megabytes of text.
        if index < lines.count {
            value += "more\t\(index)\n"
            lastPreview.withLock { $0 = PreviewPages(pool: pool.entryID, request: request, lines: lines) }
        } else {
            lastPreview.withLock { $0 = nil }
        }
        return Array(value.utf8)
    }

    private func previewLines(of pool: EntryID, _ request: PreviewRequest) throws -> [String] {
        let victims: [PreviewVictim]
        do {
            victims = try evictor.preview(of: pool, request, in: eviction)
        } catch {
            logger.error("could not read the index for a preview of pool \(pool): \(error)")
            throw CacheError.io(EIO)
        }
        let paths = eviction.paths(of: victims.map(\.record))
        return zip(victims, paths).map { victim, path in
            // A unit is listed once, as its directory (a path ending in "/").
            [Self.escaped(victim.record.kind == .directory ? path + "/" : path), String(victim.size),
             ValueParsing.formatRFC3339(Timestamp(nanoseconds: victim.lastAccess)), victim.reason]
                .joined(separator: "\t")
        }
    }

    static func escaped(_ path: String) -> String {
        // Most paths have nothing to escape: one pass over the bytes says so.
        guard path.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\n") })
        else { return path }
        var escaped = ""
        for scalar in path.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\t": escaped += "\\t"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// `size=BYTES`, `free=BYTES` or `next=N`, and `from=K`, joined by `&`; empty is the
    /// next 100. Anything else is EINVAL.
    static func parsePreviewQuery(_ query: Substring) throws -> (PreviewRequest, from: Int) {
        var request = PreviewRequest.attributeDefault
        var from = 0
        for part in query.split(separator: "&") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            let invalid = CacheError.invalidXattrValue(name: CacheAttribute.preview.fullName,
                                                       reason: "expected size=BYTES, free=BYTES or next=N, and from=K")
            guard pair.count == 2 else { throw invalid }
            switch pair[0] {
            case "size":
                guard let bytes = ValueParsing.byteSize(pair[1]), bytes >= 0 else { throw invalid }
                request = .size(bytes)
            case "free":
                guard let bytes = ValueParsing.byteSize(pair[1]), bytes >= 0 else { throw invalid }
                request = .free(bytes)
            case "next":
                guard let count = Int(pair[1]), count >= 0 else { throw invalid }
                request = .next(count)
            case "from":
                guard let start = Int(pair[1]), start >= 0 else { throw invalid }
                from = start
            default:
                throw invalid
            }
        }
        return (request, from)
    }
}
