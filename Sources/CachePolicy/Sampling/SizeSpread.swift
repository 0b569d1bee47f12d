import Foundation

/// How much the sizes of sampled requests vary: the standard deviation of their natural
/// logarithms (0 when every file has the same size; 1 when sizes commonly differ e-fold).
/// On a log scale one 256 MiB file among thousands of 4 KiB ones moves the figure little,
/// where a plain standard deviation would be that one file. Welford's running mean and sum
/// of squared deviations: equal sizes give exactly 0.
struct SizeSpread: Sendable {
    private var count = 0.0
    private var mean = 0.0
    private var squaredDeviations = 0.0

    mutating func add(size: Int64) {
        let logSize = log(Double(max(size, 1)))
        count += 1
        let delta = logSize - mean
        mean += delta / count
        squaredDeviations += delta * (logSize - mean)
    }

    var spread: Double {
        count > 1 ? (squaredDeviations / count).squareRoot() : 0
    }
}
