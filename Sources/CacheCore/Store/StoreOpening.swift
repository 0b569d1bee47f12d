import CacheModel
import CacheNames
import Foundation

/// Opening a store, in the order that keeps it safe: its folders, the one-daemon lock, the
/// index, recovery of what the last mount left, the pools asked for, and the index writer
/// (started). What the subsystems start from is read here, once.
struct StoreOpening {
    let lock: StoreLock
    let reserve: SpaceReserve
    let index: IndexDatabase
    let writer: IndexWriter
    let events: EventLog
    let spares: SpareByteFiles
    let originContext: OriginContext
    let ids: IDReservation
    let usage: [EntryID: PoolUsage]
    let poolSettings: [EntryID: PoolSettings]
    let counters: PoolCounters
    let unitRoots: Set<EntryID>

    /// `tamperAlarm` hears of sealed index rows that do not open (an encrypted store's).
    init(_ configuration: EngineConfiguration, layout: StoreLayout, warnings: StoreWarnings,
         tamperAlarm: TamperAlarm?) throws {
        let disk = configuration.disk, logger = configuration.logger
        try StoreInitializer.prepareDirectories(layout, disk: disk)
        lock = try StoreLock(layout: layout, disk: disk)
        let reserve = SpaceReserve(path: layout.reservePath, disk: disk, logger: logger)
        self.reserve = reserve
        do {
            index = try IndexDatabase(path: layout.indexPath,
                                   sealing: configuration.encryption.map { IndexSealing($0, alarm: tamperAlarm) },
                                   freeSpaceForIndex: { reserve.releaseForFullDisk() })
        } catch {
            throw StoreError.corruptIndex(layout.root, "\(error)")
        }
        events = EventLog(path: layout.eventsPath, maxBytes: configuration.eventLogMaxBytes, disk: disk, logger: logger,
                          sealing: configuration.encryption.map(EventPathSealing.init))
        let boot = BootIdentity.current()
        let powerLost = try BootIdentity.wasPowerLost(index: index, currentBoot: boot)
        let previousStop = try index.setting(BootIdentity.cleanKey)
        // Recovery first: it clears the previous mount's open id range, which a pool created
        // by `--pool` below may then take an id from.
        try Recovery(index: index, layout: layout, disk: disk, logger: logger)
            .run(afterPowerLoss: powerLost, afterUncleanStop: previousStop == "0")
        spares = try SpareByteFiles(layout: layout, disk: disk, discard: powerLost)
        try StoreInitializer.ensureRootAndPools(index: index, clock: configuration.clock,
                                                overrides: configuration.poolOverrides)
        try StoreInitializer.applyOrigins(configuration.origins, index: index, clock: configuration.clock)
        originContext = OriginContext(transport: HTTPTransport(),
                                      s3: .load(endpoint: configuration.originSettings.s3Endpoint))
        if let minFree = configuration.minFree {
            try index.setSetting(MinFree.settingKey, minFree.description)
        }
        ids = try IDReservation.afterRecovery(index: index)
        try index.setSetting(BootIdentity.bootKey, boot)
        try index.setSetting(BootIdentity.cleanKey, "0")
        usage = try index.usageTotals()
        poolSettings = try index.poolSettings()
        counters = try PoolCounters.load(from: index, logger: logger)
        unitRoots = try index.unitRoots()
        writer = IndexWriter(index: index, walPath: layout.indexPath + "-wal", disk: disk, logger: logger,
                             commitWindow: configuration.commitWindowSeconds, warnings: warnings)
        reserve.handOver()
        writer.start()
    }
}
