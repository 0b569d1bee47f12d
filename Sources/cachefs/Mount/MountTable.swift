import Foundation

/// The mounts this process sees, read from `/proc/self/mountinfo`: the one parser of that
/// file (the preflight, the hand-over, the writeback boost and the connection guardian use it).
struct MountTable {
    struct Entry {
        let mountpoint: String
        /// `fuse.cachefs` for a cachefs mount (FUSE's type plus our subtype).
        let type: String
        /// The superblock's device, "major:minor" (`/sys/class/bdi/` and fusectl name a FUSE
        /// mount by it).
        let device: String
    }

    let entries: [Entry]

    static func current() -> MountTable {
        // No /proc (not Linux, or masked): an empty table means no mount is found, as it should.
        let text = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return MountTable(text: text)
    }

    init(text: String) {
        entries = text.split(separator: "\n").compactMap(Self.parse)
    }


    /// The mount on top at `path`, if any.
    func entry(at path: String) -> Entry? {
        entries.last { $0.mountpoint == path }
    }

    /// Whether a filesystem of `type` is mounted at `path`.
    func has(type: String, at path: String) -> Bool {
        entries.contains { $0.mountpoint == path && $0.type == type }
    }

    /// "36 35 98:0 /root /mnt rw - ext4 /dev/sda1 rw": the device is field 3, the mount point
    /// field 5, the type follows the " - " separator; spaces and the like are octal escapes
    /// (`\040`).
    private static func parse(_ line: Substring) -> Entry? {
        let fields = line.split(separator: " ")
        guard fields.count > 4, let separator = fields.firstIndex(of: "-"), separator + 1 < fields.count else { return nil }
        return Entry(mountpoint: unescape(fields[4]), type: String(fields[separator + 1]), device: String(fields[2]))
    }

    private static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var index = field.utf8.startIndex
        let utf8 = field.utf8
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "\\"), let end = utf8.index(index, offsetBy: 4, limitedBy: utf8.endIndex),
               let value = UInt8(String(decoding: utf8[utf8.index(after: index)..<end], as: UTF8.self), radix: 8) {
                bytes.append(value)
                index = end
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
