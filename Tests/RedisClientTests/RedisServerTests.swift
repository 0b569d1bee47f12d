import Foundation
import NIOCore
import Testing

@testable import RedisClient

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

private func options(_ server: RedisServer, commandTimeout: TimeAmount = .seconds(5)) -> RedisConnectionOptions {
    RedisConnectionOptions(host: "127.0.0.1", port: server.port, commandTimeout: commandTimeout)
}

/// Against a real redis-server each (started and killed by the test).
@Suite(.timeLimit(.minutes(1))) struct RedisServerTests {
    @Test func getSetAndExpire() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let client = try RedisClient(url: "redis://127.0.0.1:\(server.port)")
        defer { _ = client.close() }

        #expect(try client.getBlocking(bytes("missing")) == nil)
        try client.setBlocking(bytes("plain"), bytes("value"))
        #expect(try client.getBlocking(bytes("plain")) == bytes("value"))
        #expect(try client.sendBlocking([bytes("TTL"), bytes("plain")]) == .integer(-1))

        try client.setBlocking(bytes("expiring"), bytes("soon"), expireSeconds: 100)
        guard case .integer(let ttl) = try client.sendBlocking([bytes("TTL"), bytes("expiring")]) else {
            Issue.record("TTL did not answer an integer")
            return
        }
        #expect((90...100).contains(ttl), "TTL \(ttl)")
        // And as redis-cli sees it, not only through this client.
        #expect(try server.cli(["TTL", "expiring"]).trimmingCharacters(in: .whitespacesAndNewlines) == String(ttl))

        #expect(try client.existsBlocking(bytes("plain")))
        #expect(try client.delBlocking([bytes("plain"), bytes("missing")]) == 1)
        #expect(try !client.existsBlocking(bytes("plain")))
        #expect(try client.getBlocking(bytes("plain")) == nil)
        try client.pingBlocking()
    }

    @Test func anErrorReplyIsThrown() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let client = try RedisClient(options: options(server))
        defer { _ = client.close() }
        let error = #expect(throws: RedisError.self) { try client.sendBlocking([bytes("NOSUCHCOMMAND")]) }
        guard case .server(let message)? = error else {
            Issue.record("expected a server error, got \(String(describing: error))")
            return
        }
        #expect(message.hasPrefix("ERR unknown command"), "\(message)")
        try client.setBlocking(bytes("k"), bytes("v"), expireSeconds: nil)
        #expect(throws: RedisError.self) { try client.sendBlocking([bytes("INCR"), bytes("k")]) }
        // The connection is still good after error replies.
        #expect(try client.getBlocking(bytes("k")) == bytes("v"))
    }

    @Test func binaryKeysAndValuesRoundTrip() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let client = try RedisClient(options: options(server))
        defer { _ = client.close() }
        let value: [UInt8] = [0, 13, 10, 0] + Array(0...255) + Array("\r\n$3\r\n*1\r\n".utf8) + [0]
        let key: [UInt8] = [0, 13, 10, 255, 36]
        try client.setBlocking(key, value)
        #expect(try client.getBlocking(key) == value)
        #expect(try client.sendBlocking([bytes("STRLEN"), key]) == .integer(Int64(value.count)))
    }

    @Test func aOneMebibyteValue() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let client = try RedisClient(options: options(server))
        defer { _ = client.close() }
        let value = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        try client.setBlocking(bytes("big"), value)
        #expect(try client.getBlocking(bytes("big")) == value)
    }

    @Test func pipelinedCommandsAreAnsweredInOrder() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let connection = try RedisConnection.connect(options: options(server)).waitAtMost()
        defer { _ = connection.close() }
        let count = 1000
        // Sent back to back, none waiting for another's reply.
        let sets = (0..<count).map { connection.set(bytes("key-\($0)"), bytes("value-\($0)")) }
        let gets = (0..<count).map { connection.get(bytes("key-\($0)")) }
        for set in sets { try set.waitAtMost() }
        for (index, get) in gets.enumerated() {
            #expect(try get.waitAtMost() == bytes("value-\(index)"), "GET \(index)")
        }
        #expect(try connection.sendBlocking([bytes("DBSIZE")]) == .integer(Int64(count)))
    }

    @Test func selectKeepsDatabasesApart() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let one = try RedisClient(url: "redis://127.0.0.1:\(server.port)/1")
        let two = try RedisClient(url: "redis://127.0.0.1:\(server.port)/2")
        defer { _ = one.close(); _ = two.close() }
        try one.setBlocking(bytes("shared-name"), bytes("in db 1"))
        #expect(try two.getBlocking(bytes("shared-name")) == nil)
        try two.setBlocking(bytes("shared-name"), bytes("in db 2"))
        #expect(try one.getBlocking(bytes("shared-name")) == bytes("in db 1"))
        #expect(try two.getBlocking(bytes("shared-name")) == bytes("in db 2"))
        #expect(try server.cli(["-n", "1", "GET", "shared-name"]).contains("in db 1"))
    }
}

@Suite(.timeLimit(.minutes(1))) struct RedisAuthenticationTests {
    private static func startServer() throws -> RedisServer {
        try RedisServer(
            arguments: ["--requirepass", "right-password", "--user", "alice", "on", ">alice-password", "~*", "+@all"],
            password: "right-password")
    }

    private func authenticationMessage(_ body: () throws -> Void) -> String? {
        do {
            try body()
            Issue.record("the command succeeded without the right credentials")
            return nil
        } catch RedisError.authentication(let message) {
            return message
        } catch {
            Issue.record("expected RedisError.authentication, got \(error)")
            return nil
        }
    }

    @Test func theRightPasswordWorks() throws {
        let server = try Self.startServer()
        defer { server.stop() }
        let client = try RedisClient(url: "redis://127.0.0.1:\(server.port)", password: "right-password")
        defer { _ = client.close() }
        try client.setBlocking(bytes("k"), bytes("v"))
        #expect(try client.getBlocking(bytes("k")) == bytes("v"))
    }

    @Test func anACLUserWithItsPasswordWorks() throws {
        let server = try Self.startServer()
        defer { server.stop() }
        let client = try RedisClient(url: "redis://alice:alice-password@127.0.0.1:\(server.port)")
        defer { _ = client.close() }
        #expect(try client.sendBlocking([bytes("ACL"), bytes("WHOAMI")]) == .bulkString(bytes("alice")))
    }

    @Test func aWrongPasswordIsAnAuthenticationError() throws {
        let server = try Self.startServer()
        defer { server.stop() }
        let client = try RedisClient(url: "redis://127.0.0.1:\(server.port)", password: "wrong-password")
        defer { _ = client.close() }
        let message = authenticationMessage { try client.pingBlocking() }
        #expect(message?.hasPrefix("WRONGPASS") == true, "\(String(describing: message))")

        let user = try RedisClient(url: "redis://alice:not-hers@127.0.0.1:\(server.port)")
        defer { _ = user.close() }
        let userMessage = authenticationMessage { try user.pingBlocking() }
        #expect(userMessage?.hasPrefix("WRONGPASS") == true, "\(String(describing: userMessage))")
    }

    @Test func noPasswordIsANoAuthError() throws {
        let server = try Self.startServer()
        defer { server.stop() }
        let client = try RedisClient(url: "redis://127.0.0.1:\(server.port)")
        defer { _ = client.close() }
        let message = authenticationMessage { _ = try client.getBlocking(bytes("k")) }
        #expect(message?.hasPrefix("NOAUTH") == true, "\(String(describing: message))")
    }
}

/// Failures: nothing listening, a stalled server, a server killed and started again.
@Suite(.timeLimit(.minutes(1))) struct RedisFailureTests {
    @Test func aServerDownFailsFast() throws {
        let port = try FreePorts.next()
        let client = try RedisClient(
            options: RedisConnectionOptions(host: "127.0.0.1", port: port, commandTimeout: .seconds(5)),
            reconnectPolicy: RedisReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(2)))
        defer { _ = client.close() }
        for attempt in 1...3 {
            let start = ContinuousClock.now
            let error = #expect(throws: RedisError.self) { try client.pingBlocking() }
            let elapsed = ContinuousClock.now - start
            guard case .connectionFailed(let message)? = error else {
                Issue.record("attempt \(attempt): expected connectionFailed, got \(String(describing: error))")
                continue
            }
            #expect(message.contains("127.0.0.1:\(port)"), "\(message)")
            // The deadline is 5 s; refused (then backing off) is answered at once.
            #expect(elapsed < .milliseconds(500), "attempt \(attempt) took \(elapsed)")
        }
    }

    @Test func aStalledServerTimesOutAtTheDeadlineAndTheClientRecovers() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let client = try RedisClient(options: options(server))
        defer { _ = client.close() }
        try client.setBlocking(bytes("k"), bytes("v"))

        server.suspend()
        let timeout = Duration.seconds(1)
        let start = ContinuousClock.now
        let error = #expect(throws: RedisError.self) {
            _ = try client.getBlocking(bytes("k"), deadline: .now() + .milliseconds(1000))
        }
        let elapsed = ContinuousClock.now - start
        server.resume()

        // The command's own deadline, not the blocking helper's backstop a second later.
        #expect(error == .timeout("no reply before the command's deadline"))
        #expect(elapsed >= timeout - .milliseconds(5), "returned before the deadline, after \(elapsed)")
        #expect(elapsed <= timeout + .seconds(2), "returned long after the deadline, after \(elapsed)")
        // The timed-out connection was closed; the next command connects again.
        #expect(try client.getBlocking(bytes("k")) == bytes("v"))
    }

    @Test func aTimeoutFailsEveryWaitingCommand() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let connection = try RedisConnection.connect(options: options(server)).waitAtMost()
        defer { _ = connection.close() }
        server.suspend()
        defer { server.resume() }
        let early = connection.get(bytes("a"), deadline: .now() + .milliseconds(300))
        let late = connection.get(bytes("b"), deadline: .now() + .seconds(30))
        #expect(throws: RedisError.timeout("no reply before the command's deadline")) { try early.waitAtMost() }
        let start = ContinuousClock.now
        let lateError = #expect(throws: RedisError.self) { try late.waitAtMost() }
        #expect(ContinuousClock.now - start < .seconds(2))
        guard case .connectionClosed? = lateError else {
            Issue.record("expected connectionClosed, got \(String(describing: lateError))")
            return
        }
        #expect(!connection.isConnected)
        #expect(throws: RedisError.self) { try connection.pingBlocking() }
    }

    @Test func aCommandPastItsDeadlineBeforeSendingFailsAlone() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let connection = try RedisConnection.connect(options: options(server)).waitAtMost()
        defer { _ = connection.close() }
        let error = #expect(throws: RedisError.self) {
            try connection.pingBlocking(deadline: .now() - .seconds(1))
        }
        #expect(error == .timeout("the deadline had passed before the command was sent"))
        #expect(connection.isConnected)
        try connection.pingBlocking()
    }

    @Test func aRestartedServerIsReconnectedTo() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let client = try RedisClient(
            options: options(server),
            reconnectPolicy: RedisReconnectPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200)))
        defer { _ = client.close() }
        try client.setBlocking(bytes("before"), bytes("1"))

        server.kill()
        let start = ContinuousClock.now
        #expect(throws: RedisError.self) { try client.pingBlocking() }
        #expect(ContinuousClock.now - start < .seconds(1), "a dead server must fail fast")

        try server.restart()
        let restarted = ContinuousClock.now
        var answered = false
        var lastError: Error?
        while !answered && ContinuousClock.now - restarted < .seconds(5) {
            do {
                try client.pingBlocking()
                answered = true
            } catch {
                lastError = error
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        #expect(answered, "no reconnect within 5 s of the restart; last error: \(String(describing: lastError))")
        try client.setBlocking(bytes("after"), bytes("2"))
        #expect(try client.getBlocking(bytes("after")) == bytes("2"))
    }

    /// Without redis-server the tests that need it fail with this, never skip.
    @Test func aMissingServerProgramIsAClearFailure() {
        let error = #expect(throws: TestSetupError.self) { try RedisServer.executable("redis-server-not-installed") }
        #expect(error?.description.contains("is not installed") == true)
        #expect(error?.description.contains("install-deps.sh") == true)
    }

    @Test func blockingOnAnEventLoopIsRefused() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let client = try RedisClient(options: options(server))
        defer { _ = client.close() }
        let refusal = try client.eventLoop.submit { () -> String in
            do {
                try client.pingBlocking()
                return "it blocked"
            } catch {
                return "\(error)"
            }
        }.waitAtMost()
        #expect(refusal == "\(RedisError.blockingCallOnEventLoop)")
    }
}
