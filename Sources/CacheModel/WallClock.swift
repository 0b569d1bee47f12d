import Glibc

/// The source of "now" for times and ages, so tests can move time by hand.
public protocol WallClock: Sendable {
    func now() -> Timestamp
}

public struct SystemClock: WallClock {
    public init() {}

    public func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(seconds: Int64(spec.tv_sec), nanoseconds: Int64(spec.tv_nsec))
    }
}
