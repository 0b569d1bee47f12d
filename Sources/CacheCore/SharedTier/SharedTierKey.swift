/// The tier's key of a file: `cachefs:1:POOL/DIR/NAME`, the names' own bytes (Redis keys are
/// binary safe: spaces, newlines, bytes that are not UTF-8 stay as they are). No name holds a
/// `/`, so two files never share a key. Machines share the files of pools of the same name;
/// the `1` is the value format's version, so a later format never reads an older value.
enum SharedTierKey {
    static let prefix: [UInt8] = Array("cachefs:1:".utf8)

    static func key(pool: [UInt8], path: [[UInt8]]) -> [UInt8] {
        var key = prefix + pool
        for component in path {
            key.append(UInt8(ascii: "/"))
            key.append(contentsOf: component)
        }
        return key
    }
}
