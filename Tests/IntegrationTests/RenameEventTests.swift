import Foundation
import Testing

/// Issue 8: a rename that replaces a file appends a `deleted` event for the replaced file,
/// with its path, size and a reason, as `rm` does.
@Suite struct RenameEventTests {
    @Test func aFileReplacedByRenameLeavesADeletedEvent() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("echo old-bytes > data/target && echo new > data/tmp && mv data/tmp data/target")
            #expect(try mount.mustSucceed("cat data/target") == "new")
            // RENAME writes its event before it answers: no wait.
            let events = try String(contentsOfFile: mount.store + "/events.jsonl", encoding: .utf8)
            let replaced = try events.split(separator: "\n")
                .compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .first { $0["event"] as? String == "deleted" && $0["path"] as? String == "data/target" }
            #expect(replaced != nil, "no deleted event for data/target; events:\n\(events)")
            #expect(replaced?["size"] as? Int == 10)
            #expect((replaced?["reason"] as? String)?.isEmpty == false)
            #expect(replaced?["pool"] as? String == "data")
        }
    }
}
