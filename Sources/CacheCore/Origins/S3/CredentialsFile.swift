import Foundation

/// The INI format of `~/.aws/credentials`: `[profile]` headers (`[profile name]` is read as
/// `name`, as in `~/.aws/config`), `key = value` lines, `#` and `;` comment lines. Keys are
/// lower-cased; a later value of a key wins.
enum CredentialsFile {
    static func sections(_ text: String) -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                var name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                if name.hasPrefix("profile ") { name = name.dropFirst("profile ".count).trimmingCharacters(in: .whitespaces) }
                current = name
                if sections[name] == nil { sections[name] = [:] }
                continue
            }
            guard let current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            sections[current, default: [:]][key] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        return sections
    }
}
