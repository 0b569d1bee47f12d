import ArgumentParser
import CacheCore

/// `cachefs verify STORE [--repair]`: an offline check of an unmounted store.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Check an unmounted store; with --repair, fix what is wrong.",
        discussion: """
            Reports orphan bytes (no index entry), entries without bytes, torn files (being written \
            when the daemon stopped), wrong sizes and leftovers. Exit status: 0 clean, 1 problems \
            found (repaired with --repair), 2 the store could not be checked.
            Examples:
              cachefs verify ~/.cache/cachefs-store
              cachefs verify ~/.cache/cachefs-store --repair
            """)

    @Argument(help: "The store directory (not mounted).") var store: String
    @Flag(help: "Fix what is found, as recovery at mount would.") var repair = false

    func run() throws {
        let report: StoreVerifier.Report
        do {
            let line = ProgressLine(task: "verify")
            report = try StoreVerifier(storePath: store).run(repair: repair) { checked, total in
                if checked == total {
                    line?.finish(checked, of: total, verb: "checked")
                } else {
                    line?.update(checked, of: total, verb: "checked")
                }
            }
        } catch {
            printError("cachefs: \(error)")
            throw ExitCode(2)
        }
        for problem in report.problems { print(problem.description) }
        if report.problems.isEmpty {
            print("clean: \(report.filesChecked) files checked")
            return
        }
        print("\(report.problems.count) problems in \(report.filesChecked) files\(report.repaired ? ", repaired" : "")")
        throw ExitCode.failure
    }
}
