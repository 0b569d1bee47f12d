import AsyncHTTPClient
import CacheModel
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// The blocking HTTP(S) client of the origins (`http(s)://`, `s3://`): one `HTTPClient` per
/// engine, created at the first request and shut down with the engine. Called on FUSE request
/// threads (lookups) and fetch threads; those threads wait, the event loops never do.
/// Redirects are followed (at most 5), TLS checks certificates against the system's trust
/// store, a refused connection fails at once, a connection must be made within `connectTimeout` and bytes must keep coming within
/// `readTimeout`.
public final class HTTPTransport: Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var headers: HTTPHeaders
        /// Bytes handed to `receive` (2xx responses only).
        public var delivered: Int64
        /// The start of the body of a response that is not 2xx (an S3 error document, say).
        public var errorBody: [UInt8]
        /// The URL that answered, after redirects.
        public var url: String
    }

    static let connectTimeout = TimeAmount.seconds(Tunables.httpConnectSeconds)
    static let readTimeout = TimeAmount.seconds(Tunables.httpReadSeconds)
    static let maxRedirects = Tunables.httpMaxRedirects
    static let errorBodyLimit = Tunables.httpErrorBodyBytes

    private struct State {
        var client: HTTPClient?
        var stopped = false
        var inFlight: [ObjectIdentifier: HTTPClient.Task<Void>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func head(_ url: String, headers: HTTPHeaders = [:]) throws(OriginFailure) -> Response {
        try send(.HEAD, url, headers: headers) { _ in true }
    }

    public func get(_ url: String, headers: HTTPHeaders = [:],
                    receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> Response {
        try send(.GET, url, headers: headers, receive: receive)
    }

    /// Sends one request and waits for its response; the body of a 2xx response goes to
    /// `receive` part by part as it arrives (answering false stops it), the start of any other
    /// body to `errorBody`. Throws `.failed` for what never became a response: a refused or
    /// timed-out connection, a connection closed mid-body, a stopped transport, or, with a
    /// `deadline`, a request (connect, send, the whole body) not over by then.
    public func send(_ method: HTTPMethod, _ url: String, headers: HTTPHeaders = [:], body: [UInt8]? = nil,
                     deadline: NIODeadline? = nil,
                     receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> Response {
        try send(method, url, headers: headers, body: body, deadline: deadline) { _, bytes in receive(bytes) }
    }

    /// ``send(_:_:headers:body:receive:)`` whose `receive` also learns the response's status
    /// and headers (a ranged answer's body means something else under 200 than under 206).
    public func send(_ method: HTTPMethod, _ url: String, headers: HTTPHeaders = [:], body: [UInt8]? = nil,
                     deadline: NIODeadline? = nil,
                     receiveWithHead receive: (Response, UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> Response {
        let request = try Self.request(method, url, headers: headers, body: body)
        let queue = ResponseQueue()
        let task = try start(request, delegate: queue, deadline: deadline)
        defer { state.withLock { _ = $0.inFlight.removeValue(forKey: ObjectIdentifier(task)) } }
        var response = Response(status: 0, headers: [:], delivered: 0, errorBody: [], url: url)
        while true {
            var events = queue.nextEvents()[...]
            while let event = events.popFirst() {
                switch event {
                case .head(let head):
                    response.status = Int(head.status.code)
                    response.headers = head.headers
                    response.url = queue.url
                case .body(let buffer, let promise):
                    let wanted = buffer.withUnsafeReadableBytes { bytes in
                        if (200..<300).contains(response.status) {
                            response.delivered += Int64(bytes.count)
                            return receive(response, bytes)
                        }
                        response.errorBody.append(contentsOf: bytes.prefix(Self.errorBodyLimit - response.errorBody.count))
                        return response.errorBody.count < Self.errorBodyLimit
                    }
                    promise?.succeed()
                    if !wanted {
                        for case .body(_, let waiting?) in events { waiting.succeed() }
                        queue.abandon()
                        task.cancel()
                        return response
                    }
                case .end:
                    return response
                case .failed(let error):
                    throw .failed("\(method) \(url): \(Self.describe(error))")
                }
            }
        }
    }

    /// A `GET` of `range` whose body is gathered on the event loop (``RangeCollector``): the
    /// calling thread waits once, for the whole answer. Throws `.failed` as ``send(_:_:headers:body:receive:)``.
    func get(_ url: String, headers: HTTPHeaders, range: Range<Int64>) throws(OriginFailure) -> (Response, RangedAnswer) {
        let request = try Self.request(.GET, url, headers: headers, body: nil)
        let collector = RangeCollector(range: range, url: url)
        let task = try start(request, delegate: collector)
        defer { state.withLock { _ = $0.inFlight.removeValue(forKey: ObjectIdentifier(task)) } }
        let (response, answer, failure) = collector.waitForEnd()
        if let failure { throw .failed("GET \(url): \(Self.describe(failure))") }
        return (response, answer)
    }

    /// Cancels the requests in flight (their threads get a failure at once) and shuts the
    /// client down; later requests fail. Call once, when the engine stops.
    public func shutdown() {
        let (client, tasks) = state.withLock { state in
            state.stopped = true
            defer { state.inFlight.removeAll(); state.client = nil }
            return (state.client, Array(state.inFlight.values))
        }
        for task in tasks { task.cancel() }
        do {
            try client?.syncShutdown()
        } catch {
            // Requests were cancelled above; an unclean close has nothing left to lose.
        }
    }

    private func start<Delegate: HTTPClientResponseDelegate>(_ request: HTTPClient.Request, delegate: Delegate,
                                                             deadline: NIODeadline? = nil) throws(OriginFailure)
        -> HTTPClient.Task<Void> where Delegate.Response == Void
    {
        let started = state.withLock { state -> HTTPClient.Task<Void>? in
            guard !state.stopped else { return nil }
            let client = state.client ?? Self.makeClient()
            state.client = client
            let task = client.execute(request: request, delegate: delegate, deadline: deadline)
            state.inFlight[ObjectIdentifier(task)] = task
            return task
        }
        guard let started else { throw .failed("the daemon is stopping") }
        return started
    }

    private static func request(_ method: HTTPMethod, _ url: String, headers: HTTPHeaders,
                                body: [UInt8]?) throws(OriginFailure) -> HTTPClient.Request {
        do {
            return try HTTPClient.Request(url: url, method: method, headers: headers, body: body.map { .bytes($0) })
        } catch {
            throw .failed("\(method) \(url): \(error)")
        }
    }

    private static func makeClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .follow(max: maxRedirects, allowCycles: false),
            timeout: .init(connect: connectTimeout, read: readTimeout))
        // A refused connection fails the request at once: fetches have their own retries, and
        // a lookup should not hold a FUSE thread for the whole connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        // Fetches of several pools (max_fetches each) and lookups share the connections to a host.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = Tunables.httpConnectionsPerHost
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// What a log line says of a transport error: NIO's names are cryptic on their own.
    private static func describe(_ error: any Error) -> String {
        if let client = error as? HTTPClientError {
            switch client {
            case .cancelled: return "cancelled (the daemon is stopping)"
            case .readTimeout: return "no bytes for \(readTimeout.nanoseconds / 1_000_000_000) s (read timeout)"
            case .connectTimeout: return "cannot connect within \(connectTimeout.nanoseconds / 1_000_000_000) s"
            case .deadlineExceeded: return "no whole answer within the request's deadline (timeout)"
            case .remoteConnectionClosed: return "the server closed the connection before the response ended"
            default: return "\(client)"
            }
        }
        if let system = error as? IOError {
            return "connection failed: \(String(cString: strerror(system.errnoCode)))"
        }
        return "\(error)"
    }
}
