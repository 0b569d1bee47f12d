import AsyncHTTPClient
import CacheModel
import NIOCore
import NIOHTTP1

/// Hands one response from the event loop to the thread that asked for it: the delegate
/// queues what the loop delivers and never blocks it; the asking thread takes it in order.
/// Backpressure: while less than `window` bytes wait, a body part is accepted at once (so the
/// event loop reads on while the asking thread stores); past that, its future completes only
/// once the asking thread consumed it (or gave up). The asking thread takes what waits all at
/// once, so at most two windows (the parts it stores, and those queued meanwhile) and a part
/// each are in memory, whatever the body's size.
final class ResponseQueue: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void

    enum Event: Sendable {
        case head(HTTPResponseHead)
        /// A part, and the promise to complete once it is consumed if it was not accepted at once.
        case body(ByteBuffer, EventLoopPromise<Void>?)
        case end
        case failed(any Error)
    }

    private struct State {
        var events: [Event] = []
        var abandoned = false
        /// Bytes of the body parts queued.
        var queuedBytes = 0
        /// The URL of the response being delivered (the last one after redirects).
        var url = ""
        /// The asking thread sleeps until an event comes: only then is a push worth a wakeup.
        var askerWaits = false
    }

    private let state = ConditionLock(State())
    static let window = Tunables.responseWindowBytes

    // MARK: - The asking thread

    /// The events queued, in order, waiting for at least one: taking them all at once costs
    /// one lock and at most one wakeup however many parts the event loop read meanwhile.
    /// After `.end` or `.failed` there are none.
    func nextEvents() -> [Event] {
        state.withLock(waitingUntilNoted: { state in
            state.askerWaits = state.events.isEmpty
            return !state.askerWaits
        }) { state in
            defer {
                state.events.removeAll(keepingCapacity: true)
                state.queuedBytes = 0
            }
            return state.events
        }
    }

    var url: String { state.withLock { $0.url } }

    /// The asking thread wants no more: every part queued or still to come is released at once.
    func abandon() {
        let waiting = state.withLock { state -> [EventLoopPromise<Void>] in
            state.abandoned = true
            defer {
                state.events.removeAll()
                state.queuedBytes = 0
            }
            return state.events.compactMap { if case .body(_, let promise) = $0 { promise } else { nil } }
        }
        for promise in waiting { promise.succeed() }
    }

    // MARK: - The event loop (never blocks)

    func didVisitURL(task: HTTPClient.Task<Void>, _ request: HTTPClient.Request, _ head: HTTPResponseHead) {
        state.withLock { $0.url = request.url.absoluteString }
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        push(.head(head))
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let promise = task.eventLoop.makePromise(of: Void.self)
        let (waits, wake) = state.withLock { state -> (Bool, Bool) in
            guard !state.abandoned else { return (false, false) }
            state.queuedBytes += buffer.readableBytes
            let waits = state.queuedBytes > Self.window
            state.events.append(.body(buffer, waits ? promise : nil))
            return (waits, state.askerWaits)
        }
        if wake { state.broadcast() }
        if !waits { promise.succeed() }
        return promise.futureResult
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        push(.end)
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        push(.failed(error))
    }

    /// Queues an event for the asking thread; false if it abandoned the response.
    @discardableResult
    private func push(_ event: Event) -> Bool {
        let (queued, wake) = state.withLock { state -> (Bool, Bool) in
            guard !state.abandoned else { return (false, false) }
            state.events.append(event)
            return (true, state.askerWaits)
        }
        if wake { state.broadcast() }
        return queued
    }
}
