import Foundation
import Testing

/// Issue 8, "Differential tests against ext4": every sequence of `SequenceTable` runs in a
/// folder on the store's own disk (ext4, the oracle) and in a pool of a real mount, as root
/// and as nobody; every step's result (value or errno) and the lstat fields of every name
/// must agree, except for the differences README.md lists under "Differences from ext4".
@Suite struct Ext4DifferentialTests {
    @Test(arguments: TestUser.allCases)
    func everySequenceAnswersAsExt4Does(user: TestUser) throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", "allow_other"]) { mount in
            let ext4Root = mount.directory + "/ext4"
            try FileManager.default.createDirectory(atPath: ext4Root, withIntermediateDirectories: false)
            try user.own(ext4Root)
            _ = try mount.mustSucceed("mkdir data/differential")
            try user.own(mount.path("data/differential"))
            let sequences = SequenceTable.all(for: user)
            let input = mount.directory + "/sequences.json"
            try JSONEncoder().encode(sequences).write(to: URL(fileURLWithPath: input))

            let ext4 = try SequenceRunner.run(input: input, in: ext4Root, as: user)
            let cachefs = try SequenceRunner.run(input: input, in: mount.path("data/differential"), as: user)
            let differences = StepOutcome.differences(ext4: ext4, cachefs: cachefs)
            let unexpected = differences.filter { !DifferencesFromExt4.allows($0) }
            let bySequence = Dictionary(grouping: unexpected, by: \.sequence)
            for sequence in sequences where bySequence[sequence.name] != nil {
                let lines = Difference.collapsed(bySequence[sequence.name, default: []])
                Issue.record("""
                    as \(user), sequence "\(sequence.name)" differs from ext4:
                    steps: \(sequence.steps.joined(separator: "; "))
                    \(lines.prefix(40).joined(separator: "\n"))
                    """)
            }
            #expect(ext4.count == sequences.reduce(0) { $0 + $1.steps.count })
        }
    }

    /// The allow-list and the README's list are the same list.
    @Test func everyAllowedDifferenceIsExplainedInTheReadme() throws {
        let readme = try String(contentsOfFile: Repository.path("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Differences from ext4").dropFirst().first)
            .components(separatedBy: "\n## ").first ?? ""
        for allowed in DifferencesFromExt4.allowed {
            #expect(section.contains("**\(allowed.readme)**"), "README's Differences from ext4 lacks: \(allowed.readme)")
        }
        let bullets = section.components(separatedBy: "\n- **").count - 1
        #expect(bullets == DifferencesFromExt4.allowed.count, "README lists \(bullets), the test allows \(DifferencesFromExt4.allowed.count)")
    }
}

/// Runs `scripts/lib/fs_sequences.py` and reads its one JSON line per step.
enum SequenceRunner {
    static func run(input: String, in root: String, as user: TestUser) throws -> [StepOutcome] {
        // /usr/bin/python3: a python3 found first on root's PATH may live where nobody cannot go.
        let result = try Shell.run(user.prefix + ["timeout", "600", "/usr/bin/python3",
                                                  ScriptHelper.path("fs_sequences.py"), root, input])
        guard result.succeeded else {
            throw MountError(message: "fs_sequences.py in \(root) as \(user) exited \(result.status): \(result.error)\n"
                                 + "last step: \(result.output.split(separator: "\n").last ?? "none")")
        }
        return try result.output.split(separator: "\n").map { try StepOutcome(jsonLine: Substring($0)) }
    }
}

/// One step as the helper saw it: the call's result and every name's fields, flattened
/// to "PATH FIELD" -> value so two runs compare key by key.
struct StepOutcome {
    let sequence: String
    let index: Int
    let step: String
    let result: String
    let fields: [String: String]
    let types: [String: String]

    init(jsonLine: Substring) throws {
        let object = try JSONSerialization.jsonObject(with: Data(jsonLine.utf8)) as? [String: Any]
        guard let object, let sequence = object["sequence"] as? String, let index = object["index"] as? Int,
              let step = object["step"] as? String, let names = object["names"] as? [String: [String: Any]]
        else { throw MountError(message: "unreadable step line: \(jsonLine)") }
        self.sequence = sequence
        self.index = index
        self.step = step
        result = Self.text(object["result"] ?? "")
        var fields: [String: String] = [:]
        var types: [String: String] = [:]
        for (path, values) in names {
            types[path] = values["type"] as? String ?? "?"
            for (field, value) in values { fields["\(path) \(field)"] = Self.text(value) }
        }
        self.fields = fields
        self.types = types
    }

    private static func text(_ value: Any) -> String {
        switch value {
        case let list as [Any]: "[" + list.map { text($0) }.joined(separator: ", ") + "]"
        default: "\(value)"
        }
    }

    static func differences(ext4: [StepOutcome], cachefs: [StepOutcome]) -> [Difference] {
        var found: [Difference] = []
        for (oracle, tested) in zip(ext4, cachefs) {
            func add(_ path: String?, _ field: String, _ expected: String, _ actual: String) {
                found.append(Difference(sequence: oracle.sequence, index: oracle.index, step: oracle.step, path: path,
                                        type: path.flatMap { oracle.types[$0] ?? tested.types[$0] }, field: field,
                                        ext4: expected, cachefs: actual))
            }
            if oracle.result != tested.result { add(nil, "result", oracle.result, tested.result) }
            for key in Set(oracle.fields.keys).union(tested.fields.keys).sorted() {
                let expected = oracle.fields[key] ?? "(no such name)"
                let actual = tested.fields[key] ?? "(no such name)"
                guard expected != actual else { continue }
                let path = String(key[..<key.lastIndex(of: " ")!])
                let field = String(key[key.index(after: key.lastIndex(of: " ")!)...])
                add(path, field, expected, actual)
            }
        }
        if ext4.count != cachefs.count {
            let last = cachefs.last.map { "\($0.sequence) step \($0.index)" } ?? "the start"
            found.append(Difference(sequence: "(whole run)", index: cachefs.count, step: "after \(last)", path: nil,
                                    type: nil, field: "steps run", ext4: "\(ext4.count)", cachefs: "\(cachefs.count)"))
        }
        return found
    }
}

struct Difference: CustomStringConvertible {
    let sequence: String
    let index: Int
    let step: String
    let path: String?
    let type: String?
    let field: String
    let ext4: String
    let cachefs: String

    var description: String {
        let subject = path.map { "\($0) (\(type ?? "?")) \(field)" } ?? field
        return "  step \(index + 1) `\(step)`: \(subject): ext4 \(ext4), cachefs \(cachefs)"
    }

    /// One line per difference, in step order; a difference that stays the same in later
    /// steps (a wrong link count, say) is shown once, with the number of steps it lasted.
    static func collapsed(_ differences: [Difference]) -> [String] {
        var firstOfKind: [String: Int] = [:]
        var lines: [(text: String, repeats: Int)] = []
        for difference in differences {
            let kind = "\(difference.path ?? "") \(difference.field) \(difference.ext4) \(difference.cachefs)"
            if difference.field != "result", let line = firstOfKind[kind] {
                lines[line].repeats += 1
            } else {
                firstOfKind[kind] = lines.count
                lines.append((difference.description, 0))
            }
        }
        return lines.map { $0.repeats == 0 ? $0.text : "\($0.text) (and \($0.repeats) later steps)" }
    }
}

/// The differences from ext4 that are by design. Each entry is explained in README.md,
/// section "Differences from ext4"; anything not matched here fails the test.
enum DifferencesFromExt4 {
    struct Allowed {
        /// The bold title of its bullet in the README.
        let readme: String
        let matches: @Sendable (Difference) -> Bool
    }

    static let allowed: [Allowed] = [
        Allowed(readme: "A directory's `st_size` is 0") { difference in
            difference.type == "dir" && difference.field == "size" && difference.cachefs == "0"
        },
        Allowed(readme: "Device nodes can be created but not opened") { difference in
            difference.step.hasPrefix("open c") && difference.field == "result"
                && difference.ext4 == "ok" && difference.cachefs == "EACCES"
        },
    ]

    static func allows(_ difference: Difference) -> Bool {
        allowed.contains { $0.matches(difference) }
    }
}
