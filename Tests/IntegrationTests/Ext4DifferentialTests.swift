import Foundation
import Testing

/// Issue 8, "Differential tests against ext4": every sequence of `SequenceTable` runs in a
/// folder on the store's own disk (ext4, the oracle) and in a pool of a real mount, as root
/// and as nobody; every step's result (value or errno) and the lstat fields of every name
/// must agree, except for the differences docs/ext4-compatibility.md lists under "Differences from ext4".
/// Both kinds of store run them: an encrypted store keeps every meaning (issue 21).
@Suite struct Ext4DifferentialTests {
    @Test(arguments: TestUser.allCases, StoreKind.allCases)
    func everySequenceAnswersAsExt4Does(user: TestUser, kind: StoreKind) throws {
        try compareWithExt4(user: user, kind: kind, options: "allow_other")
    }

    /// The same with the kernel serving opens and closes by itself (issue 45).
    @Test(arguments: TestUser.allCases)
    func everySequenceAnswersAsExt4DoesWithKernelHits(user: TestUser) throws {
        try compareWithExt4(user: user, kind: .plaintext, options: "allow_other,kernel_hits")
    }

    private func compareWithExt4(user: TestUser, kind: StoreKind, options: String) throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", options], kind: kind) { mount in
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
                    as \(user) on a \(kind) store (-o \(options)), sequence "\(sequence.name)" differs from ext4:
                    steps: \(sequence.steps.joined(separator: "; "))
                    \(lines.prefix(40).joined(separator: "\n"))
                    """)
            }
            #expect(ext4.count == sequences.reduce(0) { $0 + $1.steps.count })
            #expect(cachefs.count == ext4.count, "cachefs ran \(cachefs.count) steps, ext4 \(ext4.count)")
        }
    }

    /// The allow-list and the list in docs/ext4-compatibility.md are the same list.
    @Test func everyAllowedDifferenceIsExplainedInTheReadme() throws {
        let readme = try String(contentsOfFile: Repository.path("docs/ext4-compatibility.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Differences from ext4").dropFirst().first)
            .components(separatedBy: "\n## ").first ?? ""
        for allowed in DifferencesFromExt4.allowed {
            #expect(section.contains("**\(allowed.readme)**"), "docs/ext4-compatibility.md's Differences from ext4 lacks: \(allowed.readme)")
        }
        let bullets = section.components(separatedBy: "\n- **").count - 1
        #expect(bullets == DifferencesFromExt4.allowed.count, "docs/ext4-compatibility.md lists \(bullets), the test allows \(DifferencesFromExt4.allowed.count)")
    }
}

/// The differences from ext4 that are by design. Each entry is explained in docs/ext4-compatibility.md,
/// section "Differences from ext4"; anything not matched here fails the test.
enum DifferencesFromExt4 {
    struct Allowed {
        /// The bold title of its bullet in docs/ext4-compatibility.md.
        let readme: String
        let matches: @Sendable (Difference) -> Bool
    }

    static let allowed: [Allowed] = [
        Allowed(readme: "Device nodes can be created but not opened") { difference in
            difference.step.hasPrefix("open c") && difference.field == "result"
                && difference.ext4 == "ok" && difference.cachefs == "EACCES"
        },
    ]

    static func allows(_ difference: Difference) -> Bool {
        allowed.contains { $0.matches(difference) }
    }
}
