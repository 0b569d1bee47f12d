import Foundation
import Glibc

/// The unit tests' one wait with a deadline, for what another thread does (`Shell`, as the
/// integration tests' helper of the same use is called).
enum Shell {
    static func waitUntil(seconds: Double = 2, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
