/// The pools' floors (`user.cache.min_size`) against the space they can have.
extension Attributes {
    /// Floors that add up to more than the store's filesystem can hold above `min_free` are
    /// allowed (a pool's floor is a wish, not a reservation) but cannot all hold under
    /// pressure: that is logged once and shown by `cachefs status` while it lasts.
    func checkFloors() {
        let floors = names.allPoolSettings().values.reduce(Int64(0)) { $0 + $1.minSize }
        let usable: Int64
        do {
            let space = try eviction.freeSpace()
            usable = space.total - (try eviction.minFree().bytes(ofTotal: space.total))
        } catch {
            logger.error("could not read the store's filesystem size to check the pools' min_size floors: \(error)")
            return
        }
        let warning = floors > usable
            ? "the pools' min_size floors add up to \(floors) bytes, more than the \(usable) bytes the store's "
                + "filesystem has above min_free: under disk pressure not every floor can hold; lower a pool's "
                + "user.cache.min_size"
            : nil
        if warnings.setCondition("min_size", warning), let warning { logger.warning("\(warning)") }
    }
}
