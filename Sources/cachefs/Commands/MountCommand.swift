import ArgumentParser
import CacheCore
import CacheModel
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
            ENOSPC reach close or fsync, not the write; see docs/design-choices.md), \
            kernel_hits=on|off (on by default: the kernel serves opens and reads of cached files with \
            no request, and hits are learned from its close events; off with writeback_cache or \
            single_threaded; see docs/no-open-hits.md), \
            writeback_boost (root: lift the kernel's per-mount dirty limits; see docs/design-choices.md), \
            debug (libfuse's trace of every request, on stderr or STORE/daemon.log), \
            metrics_file=PATH (Prometheus metrics, rewritten atomically for node_exporter's \
            textfile collector), metrics_interval=SECONDS (default 15), \
            memory_budget=SIZE (names kept loaded, at about \(Tunables.bytesPerLoadedEntry) bytes a file and more for long names; \
            past it, directories unused for memory_idle=SECONDS leave memory until used again; defaults \
            128M and 60), \
            pool=NAME:SIZE[:AGE] (as --pool), log_level=LEVEL, foreground, \
            encrypt (as --encrypt), key_file=PATH (as --key-file), \
            origin=POOL=URL (as --origin), s3_endpoint=URL (the S3 server of s3:// origins and shared tiers, \
            path-style; default AWS's endpoint of AWS_REGION), \
            shared_password_file=PATH (the password of the pools' Redis shared tier, user.cache.shared: \
            redis://, rediss:// (TLS) or redis+cluster://; see docs/shared-tier.md; without it, \
            systemd's credential $CREDENTIALS_DIRECTORY/cachefs.shared-password if there is one), \
            shared_ca_file=PATH (PEM CA certificates a rediss:// tier's certificate must verify \
            against; default the system's trust store), \
            shared_lookup_ms=N (how long a miss waits for the shared tier, 1 to 60000; default 200). \
            Kernel flags (ro, nodev, nosuid, noexec, noatime, sync) go to the kernel; words for \
            mount(8) and systemd (defaults, noauto, nofail, user, _netdev, x-systemd.*) are ignored.
            mount(8): `mount -t fuse.cachefs STORE MOUNT -o OPTIONS`, or an /etc/fstab line such as
              /var/cache/cachefs/web /srv/cache fuse.cachefs nodev,nosuid,pool=data:1G 0 0
            (mount.fuse3 runs `cachefs STORE MOUNT -o OPTIONS`, the same as this command).
            systemd: the daemon sends READY=1 to $NOTIFY_SOCKET once the mount is live and \
            STOPPING=1 when it ends (units cachefs@.service, see docs/installing.md).
            Unmount with `fusermount3 -u MOUNT` (or SIGTERM/SIGINT to the daemon).
            """)

    @Argument(help: "The store directory: new, empty or a cachefs store (created with its parents if missing).")
    var store: String

    @Argument(help: "An existing, empty directory to mount on (a dead cachefs mount there is cleared).")
    var mountpoint: String

    @Flag(help: "Stay attached to the terminal (for tests and systemd).")
    var foreground = false

    @Option(name: .customLong("pool"), help: "NAME=SIZE[,AGE]: create or change a pool; persisted.")
    var pools: [String] = []

    @Option(name: .customLong("origin"), help: "POOL=URL: the pool reads through to this origin (file:///DIR); persisted.")
    var origins: [String] = []

    @Option(name: .customShort("o"), help: "Mount options, comma-separated (listed above).")
    var options: [String] = []

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Flag(help: "Create the store encrypted (only when it is created; see docs/encryption.md).")
    var encrypt = false

    @Option(help: ArgumentHelp("The key file of an encrypted store (`cachefs keygen`), or a file holding its passphrase.",
                               valueName: "path"))
    var keyFile: String?

    func validate() throws {
        _ = try parsedSettings()
    }

    func run() throws {
        let settings = try parsedSettings()
        let storePath = absolute(store)
        let mountPath = absolute(mountpoint)
        let layout = StoreLayout(root: storePath)
        if !settings.foreground {
            // A typed passphrase is asked here, on the terminal, and handed to the daemon.
            let terminal = TerminalPassphrasePrompt()
            var passphrase: SecretBytes?
            if MountKeys.needsKey(store: storePath, encrypt: settings.encrypt),
               MountKeys.isTyped(keyFile: settings.keyFile, prompt: terminal) {
                do {
                    let key = try KeySource.terminal.load(prompt: terminal,
                                                          confirming: !StoreKeyFile.isEncrypted(store: storePath))
                    if case .passphrase(let typed) = key { passphrase = typed }
                } catch {
                    printError("cachefs: \(error)")
                    throw ExitCode.failure
                }
            }
            let status = try Daemonizer.spawnAndWaitUntilReady(passphrase: passphrase)
            throw ExitCode(status)
        }
        FuseSession.blockTerminationSignals()
        let allocationsConfigured = LargeAllocations.configure()
        LoggingSystem.bootstrap { label in DaemonLogHandler(label: label, logLevel: settings.logLevel) }
        let logger = Logger(label: "cachefs")
        if !allocationsConfigured { logger.warning("glibc refused an mmap threshold of 4 MiB; its own stays") }
        // What this attempt made for the store: removed if the mount fails, kept once it is up.
        var newStore: NewStore?
        do {
            newStore = try MountPreflight.check(store: storePath, mountpoint: mountPath)
            let encryption = try MountKeys.unlock(store: storePath, encrypt: settings.encrypt, keyFile: settings.keyFile,
                                                  prompt: InheritedPassphrase.fromEnvironment() ?? TerminalPassphrasePrompt())
            let notifier = LateBoundNotifier()
            var configuration = EngineConfiguration(
                storePath: storePath, poolOverrides: settings.pools, minFree: settings.minFree, notifier: notifier,
                logger: logger, sweepSeconds: settings.sweepSeconds, durabilitySeconds: settings.syncSeconds,
                commitWindowSeconds: settings.commitSeconds)
            configuration.memoryBudget = settings.memoryBudget
            configuration.origins = settings.origins
            configuration.originSettings.s3Endpoint = settings.s3Endpoint
            configuration.sharedTier.password = try SharedTierConfiguration.password(
                file: settings.sharedPasswordFile, environment: ProcessInfo.processInfo.environment)
            if let milliseconds = settings.sharedLookupMilliseconds {
                configuration.sharedTier.lookupMilliseconds = milliseconds
            }
            if let path = settings.sharedCAFile {
                // Read at each connect of a rediss:// tier, long after the mount: kept absolute.
                configuration.sharedTier.trustedCAFile = try SharedTierConfiguration.caFile(absolute(path))
            }
            configuration.encryption = encryption
            let engine = try CacheEngine(configuration)
            DaemonRecord.write(.starting(pid: getpid()), layout: layout)
            let metrics = settings.metricsFile.map {
                DaemonMetrics(path: absolute($0), interval: settings.metricsSeconds, engine: engine, logger: logger)
            }
            let session: FuseSession
            let closeEvents = settings.fuse.kernelHits ? KernelHitsListener.make(mountpoint: mountPath, logger: logger) : nil
            do {
                var fuseOptions = settings.fuse
                fuseOptions.source = storePath
                fuseOptions.kernelHits = closeEvents != nil
                session = try FuseSession(engine: engine, mountpoint: mountPath, options: fuseOptions, logger: logger,
                                          metricsFactory: metrics?.requestFactory)
            } catch {
                engine.shutdown()
                throw error
            }
            newStore = nil
            notifier.bind(session.notificationTarget)
            if settings.writebackBoost {
                // The mount works without it, so a failure is reported, not fatal.
                do {
                    try WritebackBoost.apply(mountpoint: mountPath)
                } catch {
                    printError("cachefs: warning: \(error)")
                }
            }
            do {
                try GuardianLauncher.start(mountpoint: mountPath,
                                           logPath: Daemonizer.hasWaitingParent ? layout.logPath : nil)
            } catch {
                // The mount works without it; only a killed daemon is then not cleaned up after.
                logger.warning("""
                    no connection guardian: \(error). If this daemon is killed, processes using \(mountPath) \
                    may wait until its FUSE connection is aborted by hand (docs/mounting.md#when-the-daemon-dies)
                    """)
            }
            metrics?.file.start()
            // Before the loop serves anything: the first request may need a directory watched.
            let listener = closeEvents.map { KernelHitsListener(events: $0, engine: engine) }
            // Recorded before the caller returns, so an unmount and mount right after it wait.
            DaemonRecord.write(.serving(pid: getpid(), mountpoint: mountPath), layout: layout)
            let parentTellsService = Daemonizer.reportReady(logPath: layout.logPath)
            logger.info("mounted \(storePath) on \(mountPath)")
            if !parentTellsService {
                ServiceNotification.sendOrWarn("READY=1\nSTATUS=serving \(mountPath)", logger: logger)
            }
            // Returns with SIGTERM blocked: the flush below must not die of systemd's.
            let loopResult = session.run()
            listener?.stop()
            DaemonRecord.write(.stopping(pid: getpid()), layout: layout)
            ServiceNotification.sendOrWarn("STOPPING=1", logger: logger)
            logger.info("unmounted \(mountPath) (loop ended with \(loopResult)); flushing")
            metrics?.file.stop()
            engine.shutdown()
            logger.info("store \(storePath) closed cleanly")
        } catch {
            printError("cachefs: \(error)")
            newStore?.remove()
            throw ExitCode.failure
        }
    }

    private func parsedSettings() throws -> MountSettings {
        do {
            var settings = try MountSettings(pools: pools, options: options, logLevel: logLevel, foreground: foreground,
                                             origins: origins)
            if encrypt { settings.encrypt = true }
            if let keyFile { settings.keyFile = keyFile }
            return settings
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
