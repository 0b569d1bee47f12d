import Foundation
import Testing

/// `scripts/bench` must run to its table: a row it records but never defined stopped it at the
/// end of its memory section (the verify row of the 100,000-entry store, 27 November). This
/// runs that section at a small size with the built daemon, as the bench would.
@Suite struct BenchScriptTests {
    @Test func theMemorySectionRecordsEveryRowItDefinesAndPrintsItsTable() throws {
        let result = try runBenchSection("""
            from bench.sections import memory
            memory.NAME_ENTRIES = 3000
            o.mem_sizes = [3000]
            b = m.Bench(o)
            def section():
                memory.run_memory(b, 3000)
                for width in memory.NAME_WIDTHS:
                    memory.run_memory(b, memory.NAME_ENTRIES, name_bytes=width)
            """)
        #expect(result.succeeded, "exit \(result.status): \(result.error.suffix(2_000))")
        func row(_ label: String) -> [String] { tableRow(label, of: result.output) }
        for label in ["  daemon memory per entry listed", "per entry, ls -f 3k, names 2-7 B", "  the same, names of 32 B"] {
            let bytes = row(label).dropFirst().first.flatMap { Int($0.dropLast(2)) }
            #expect(bytes.map { $0 > 0 && $0 < 100_000 } == true, "\(label): \(row(label))")
        }
        let peak = row("  peak RSS (VmHWM) / RSS after it").dropFirst().first.flatMap { Double($0.dropLast()) }
        #expect(peak.map { $0 >= 1 && $0 < 10 } == true, "\(row("  peak RSS (VmHWM) / RSS after it"))")
        #expect(row("verify, 3k-entry store").dropFirst().first == "clean", "\(row("verify, 3k-entry store"))")
    }

    /// The shared tier's section (workload 15) at 60 files: every row recorded (the floor's,
    /// read from floorfs, too), B's reads all tier hits (else the row is FAIL and the exit 2),
    /// nothing lost when redis-server dies.
    @Test func theSharedTierSectionRecordsEveryRowAndLosesNothing() throws {
        let result = try runBenchSection("""
            from bench.sections import shared_tier
            shared_tier.FILES = 60
            o.mode = "sharedtier"
            o.repeat = 1
            b = m.Bench(o)
            def section():
                shared_tier.run_shared_tier(b)
            """)
        #expect(result.succeeded, "exit \(result.status): \(result.error.suffix(2_000))")
        // The floor's rows too: floorfs compiled and mounted by the bench, read cold.
        for label in ["60 x 16K written on A, read on B", "60 x 16K fetched on A, read on B", "60 x 16K first reads",
                      "60 x 16K read on B"] {
            let rates = tableRow(label, of: result.output).dropFirst().prefix(2).compactMap { Double($0.split(separator: " ").first ?? "") }
            #expect(rates.count == 2 && rates.allSatisfy { $0 > 0 }, "\(label): \(tableRow(label, of: result.output))")
        }
        #expect(tableRow("60 reads + 60 writes: failed or lost", of: result.output).dropFirst().first == "0 files",
                "\(result.output.suffix(3_000))")
        let errors = tableRow("shared_errors counted (both pools)", of: result.output).dropFirst().first
            .flatMap { Int($0.split(separator: " ").first ?? "") }
        #expect(errors.map { $0 > 0 } == true, "\(result.output.suffix(3_000))")
    }
}

/// Runs `setup` (Python: `m` is bench.main, `o` parsed `--quick` options; it makes `b` and
/// defines `section()`) then the section with the built daemon, as scripts/bench would, and
/// prints the table; exit 2 when a row failed.
private func runBenchSection(_ setup: String) throws -> CommandResult {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    let indented = setup.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
    let driver = """
        import os, sys
        sys.path.insert(0, sys.argv[1] + "/scripts/lib")
        from bench import main as m, options
        def run():
            o = options.parse(["--quick"])
        \(indented)
            status = 1
            try:
                b.make_work_dir(); b.resolve_binaries()
                m.define_metrics(b)
                section()
                m.report.print_table(b)
                status = 2 if b.results.failed else 0
            finally:
                b.cleanup(status)
            return status
        sys.exit(run())
        """
    let binaries = URL(fileURLWithPath: MountedStore.executable).deletingLastPathComponent().path
    return try Shell.run(["env", "CACHEFS_BIN=\(MountedStore.executable)",
                          "CACHEFS_BENCH_FILES=\(binaries)/cachefs-bench-files",
                          "python3", "-c", driver, root])
}

/// The cells of the table's row that begins with `label`, or none.
private func tableRow(_ label: String, of output: String) -> [String] {
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix(label) }) else { return [] }
    return line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
}
