import Foundation

/// Tells a daemon crash (the OS kept running) from a power loss or OS crash: the index
/// records the kernel's boot id at mount and whether the last unmount was clean.
enum BootIdentity {
    static let bootKey = "boot_id"
    static let cleanKey = "clean_shutdown"
    /// Lets tests present a store "after a reboot" without rebooting.
    static let overrideVariable = "CACHEFS_BOOT_ID"

    static func current() -> String {
        if let forced = ProcessInfo.processInfo.environment[overrideVariable], !forced.isEmpty { return forced }
        // Without a boot id every mount looks like the same boot: power-loss detection is off, nothing breaks.
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A store last used in another boot and not unmounted cleanly lost power (or the OS crashed).
    static func wasPowerLost(index: IndexDatabase, currentBoot: String) throws -> Bool {
        guard let lastBoot = try index.setting(bootKey) else { return false }
        let wasClean = try index.setting(cleanKey) == "1"
        return lastBoot != currentBoot && !wasClean
    }
}
