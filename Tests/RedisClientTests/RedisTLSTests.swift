import Foundation
import NIOCore
import Testing

@testable import RedisClient

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `rediss://` against a real redis-server serving TLS only, with a certificate of a throwaway CA.
@Suite(.timeLimit(.minutes(1))) struct RedisTLSTests {
    private static func startServer(_ certificates: TestCertificates) throws -> RedisServer {
        let port = try FreePorts.next()
        return try RedisServer(
            arguments: [
                "--port", "0", "--tls-port", String(port),
                "--tls-cert-file", certificates.serverCertificate, "--tls-key-file", certificates.serverKey,
                "--tls-ca-cert-file", certificates.caCertificate, "--tls-auth-clients", "no",
            ],
            port: port,
            cliArguments: ["--tls", "--cacert", certificates.caCertificate])
    }

    @Test func aServerSignedByTheTrustedCAWorks() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try Self.startServer(certificates)
        defer { server.stop() }
        var options = RedisConnectionOptions(url: try RedisURL(parsing: "rediss://localhost:\(server.port)/3"))
        options.tls?.trustedCAFile = certificates.caCertificate
        let client = try RedisClient(options: options)
        defer { _ = client.close() }
        try client.setBlocking(bytes("secure"), bytes("value"))
        #expect(try client.getBlocking(bytes("secure")) == bytes("value"))
        #expect(try server.cli(["-n", "3", "GET", "secure"]).contains("value"))
    }

    @Test func anAddressWithTheCertificatesNameWorks() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try Self.startServer(certificates)
        defer { server.stop() }
        let options = RedisConnectionOptions(
            host: "127.0.0.1", port: server.port,
            tls: RedisTLSOptions(trustedCAFile: certificates.caCertificate, serverName: "localhost"))
        let client = try RedisClient(options: options)
        defer { _ = client.close() }
        try client.pingBlocking()
    }

    @Test func aServerTheSystemRootsDoNotTrustIsRefused() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try Self.startServer(certificates)
        defer { server.stop() }
        let client = try RedisClient(url: "rediss://127.0.0.1:\(server.port)")
        defer { _ = client.close() }
        let error = #expect(throws: RedisError.self) { try client.pingBlocking() }
        guard case .connectionFailed(let message)? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(message.contains("127.0.0.1:\(server.port)"), "\(message)")
    }

    @Test(arguments: ["not-the-server.example", nil])
    func aCertificateForAnotherNameIsRefused(serverName: String?) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try Self.startServer(certificates)
        defer { server.stop() }
        // Trusted CA, but the certificate names neither this name nor 127.0.0.1.
        let options = RedisConnectionOptions(
            host: "127.0.0.1", port: server.port,
            tls: RedisTLSOptions(trustedCAFile: certificates.caCertificate, serverName: serverName))
        let client = try RedisClient(options: options)
        defer { _ = client.close() }
        let error = #expect(throws: RedisError.self) { try client.pingBlocking() }
        guard case .connectionFailed(let message)? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(message.contains("Hostname"), "\(message)")
    }

    @Test func aCAFileThatCannotBeReadIsAClearError() {
        let options = RedisConnectionOptions(
            host: "127.0.0.1", tls: RedisTLSOptions(trustedCAFile: "/nonexistent/ca.crt"))
        let error = #expect(throws: RedisError.self) { try RedisClient(options: options) }
        guard case .connectionFailed(let message)? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(message.hasPrefix("TLS setup"), "\(message)")
    }
}
