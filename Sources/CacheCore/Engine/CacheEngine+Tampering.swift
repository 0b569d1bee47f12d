extension CacheEngine {
    /// Stored bytes that fail authentication leave a `tampered` event (and its log line),
    /// named by entry id only: an encrypted store's events and log reveal no name.
    static func recordDamage(of disk: EncryptingDisk, in events: EventLog, clock: any WallClock) {
        disk.alarm.listen { owner, what in
            events.record([CacheEvent(time: clock.now(), event: .tampered, pool: "", path: "entry \(owner)", size: 0,
                                      reason: what)])
        }
    }
}
