import ArgumentParser
import CacheCore
import Foundation
import FuseAdapter
import Glibc
import Logging

struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount a store; returns once the mount is ready, with the daemon in the background.",
        discussion: """
            Examples:
              cachefs mount ~/.cache/cachefs-store ~/cache
              cachefs mount STORE MOUNT --pool data=100M --pool avatars=5M,7d
              cachefs mount STORE MOUNT --foreground -o allow_other,min_free=1G

            Options for -o (comma-separated): allow_other, min_free=SIZE|PERCENT, \
            single_threaded, threads=N, entry_timeout=SECONDS, attr_timeout=SECONDS, \
            commit_interval=MS (group commit window of the index, default 5), \
            sweep_interval=SECONDS (age sweep, default 60), \
            sync_interval=SECONDS (closed files synced and marked durable, default 2), \
            writeback_cache (the kernel's writeback cache: faster small writes, but EFBIG and \
            ENOSPC reach close or fsync, not the write; see README), \
            writeback_boost (root: lift the kernel's per-mount dirty limits; see README), \
            metrics_file=PATH (Prometheus metrics, rewritten atomically for node_exporter's \
            textfile collector), metrics_interval=SECONDS (default 15), \
            debug (libfuse's trace of every request, on stderr or STORE/daemon.log).
            Unmount with `fusermount3 -u MOUNT` (or SIGTERM/SIGINT to the daemon).
            """)

    @Argument(help: "The store directory (created if missing).")
    var store: String

    @Argument(help: "An existing, empty directory to mount on.")
    var mountpoint: String

    @Flag(help: "Stay attached to the terminal (for tests and systemd).")
    var foreground = false

    @Option(name: .customLong("pool"), help: "NAME=SIZE[,AGE]: create or change a pool; persisted.")
    var pools: [String] = []

    @Option(name: .customShort("o"), help: "Mount options, comma-separated (see below).")
    var options: [String] = []

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        _ = try parsedSettings()
    }

    func run() throws {
        let settings = try parsedSettings()
        let storePath = absolute(store)
        let mountPath = absolute(mountpoint)
        if !foreground {
            let status = try Daemonizer.spawnAndWaitUntilReady()
            throw ExitCode(status)
        }
        FuseSession.blockTerminationSignals()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = settings.logLevel
            return handler
        }
        let logger = Logger(label: "cachefs")
        do {
            try MountPreflight.check(store: storePath, mountpoint: mountPath)
            let notifier = LateBoundNotifier()
            let engine = try CacheEngine(EngineConfiguration(
                storePath: storePath, poolOverrides: settings.pools, minFree: settings.minFree, notifier: notifier,
                logger: logger, sweepSeconds: settings.sweepSeconds, durabilitySeconds: settings.syncSeconds,
                commitWindowSeconds: settings.commitSeconds))
            let metrics = settings.metricsFile.map {
                DaemonMetrics(path: absolute($0), interval: settings.metricsSeconds, engine: engine, logger: logger)
            }
            let session: FuseSession
            do {
                session = try FuseSession(engine: engine, mountpoint: mountPath, options: settings.fuse, logger: logger,
                                          metricsFactory: metrics?.requestFactory)
            } catch {
                engine.shutdown()
                throw error
            }
            notifier.bind(session.notificationTarget)
            if settings.writebackBoost {
                // The mount works without it, so a failure is reported, not fatal.
                do {
                    try WritebackBoost.apply(mountpoint: mountPath)
                } catch {
                    printError("cachefs: warning: \(error)")
                }
            }
            metrics?.file.start()
            Daemonizer.reportReady(logPath: StoreLayout(root: storePath).logPath)
            logger.info("mounted \(storePath) on \(mountPath)")
            let loopResult = session.run()
            logger.info("unmounted \(mountPath) (loop ended with \(loopResult)); flushing")
            metrics?.file.stop()
            engine.shutdown()
            logger.info("store \(storePath) closed cleanly")
        } catch {
            printError("cachefs: \(error)")
            throw ExitCode.failure
        }
    }

    private func parsedSettings() throws -> MountSettings {
        do {
            return try MountSettings(pools: pools, options: options, logLevel: logLevel)
        } catch let error as MountSettings.Problem {
            throw ValidationError(error.description)
        }
    }

    private func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
