import Foundation
import Testing

/// `scripts/bench` must run to its table: a row it records but never defined stopped it at the
/// end of its memory section (the verify row of the 100,000-entry store, 27 November). This
/// runs that section at a small size with the built daemon, as the bench would.
@Suite struct BenchScriptTests {
    @Test func theMemorySectionRecordsEveryRowItDefinesAndPrintsItsTable() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let driver = """
            import os, sys
            sys.path.insert(0, sys.argv[1] + "/scripts/lib")
            from bench import main as m, options
            from bench.sections import memory
            memory.NAME_ENTRIES = 3000
            o = options.parse(["--quick"])
            o.mem_sizes = [3000]
            b = m.Bench(o)
            status = 1
            try:
                b.make_work_dir(); b.resolve_binaries()
                m.define_metrics(b)
                memory.run_memory(b, 3000)
                for width in memory.NAME_WIDTHS:
                    memory.run_memory(b, memory.NAME_ENTRIES, name_bytes=width)
                m.report.print_table(b)
                status = 2 if b.results.failed else 0
            finally:
                b.cleanup(status)
            sys.exit(status)
            """
        let binaries = URL(fileURLWithPath: MountedStore.executable).deletingLastPathComponent().path
        let result = try Shell.run(["env", "CACHEFS_BIN=\(MountedStore.executable)",
                                    "CACHEFS_BENCH_FILES=\(binaries)/cachefs-bench-files",
                                    "python3", "-c", driver, root])
        #expect(result.succeeded, "exit \(result.status): \(result.error.suffix(2_000))")
        func row(_ label: String) -> [String] {
            guard let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix(label) }) else { return [] }
            return line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        for label in ["  daemon memory per entry listed", "per entry, ls -f 3k, names 2-7 B", "  the same, names of 32 B"] {
            let bytes = row(label).dropFirst().first.flatMap { Int($0.dropLast(2)) }
            #expect(bytes.map { $0 > 0 && $0 < 100_000 } == true, "\(label): \(row(label))")
        }
        let peak = row("  peak RSS (VmHWM) / RSS after it").dropFirst().first.flatMap { Double($0.dropLast()) }
        #expect(peak.map { $0 >= 1 && $0 < 10 } == true, "\(row("  peak RSS (VmHWM) / RSS after it"))")
        #expect(row("verify, 3k-entry store").dropFirst().first == "clean", "\(row("verify, 3k-entry store"))")
    }
}
