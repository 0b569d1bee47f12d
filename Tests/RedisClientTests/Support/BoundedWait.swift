import Dispatch
import NIOCore
import Synchronization

extension EventLoopFuture where Value: Sendable {
    /// `wait()` that gives up after `seconds`, so a test whose future never completes fails
    /// instead of hanging the run.
    func waitAtMost(_ seconds: Int = 10) throws -> Value {
        let box = ResultBox<Value>()
        whenComplete { box.set($0) }
        guard box.done.wait(timeout: .now() + .seconds(seconds)) == .success else {
            throw TestSetupError("a future did not complete within \(seconds) s")
        }
        return try box.result.withLock { $0! }.get()
    }
}

private final class ResultBox<Value: Sendable>: Sendable {
    let result = Mutex<Result<Value, Error>?>(nil)
    let done = DispatchSemaphore(value: 0)

    func set(_ value: Result<Value, Error>) {
        result.withLock { $0 = value }
        done.signal()
    }
}
