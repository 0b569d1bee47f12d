import Foundation

/// Runs `scripts/lib/fs_sequences.py` and reads its one JSON line per step.
enum SequenceRunner {
    static func run(input: String, in root: String, as user: TestUser) throws -> [StepOutcome] {
        // /usr/bin/python3: a python3 found first on root's PATH may live where nobody cannot go.
        // The script's text goes as an argument, read here: nobody may not be able to read a
        // checkout in a 0700 folder (as `mktemp -d` makes).
        let script = try String(contentsOfFile: ScriptHelper.path("fs_sequences.py"), encoding: .utf8)
        let result = try Shell.run(user.prefix + ["timeout", "600", "/usr/bin/python3", "-c", script, root, input])
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
