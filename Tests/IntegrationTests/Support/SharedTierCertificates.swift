import Foundation

/// A throwaway CA and a server certificate it signed for `localhost` and `127.0.0.1` (the
/// address a Redis Cluster's nodes announce), made with `openssl` in a temporary directory,
/// for a TLS shared tier. The same recipe as RedisClientTests' `TestCertificates` (a test
/// target cannot import another), on this target's `Shell`. Removed when released.
final class SharedTierCertificates {
    let directory: String
    var caCertificate: String { directory + "/ca.crt" }
    var serverCertificate: String { directory + "/server.crt" }
    var serverKey: String { directory + "/server.key" }

    init() throws {
        guard try Shell.bash("command -v openssl").succeeded else {
            throw MountError(message: "openssl is not installed: the TLS shared tier tests make their CA with it "
                                 + "(apt-get install openssl)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-tier-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(["req", "-x509"] + key + ["-keyout", directory + "/ca.key", "-out", caCertificate,
                                                   "-days", "2", "-subj", "/CN=cachefs tier test CA"])
        try Self.openssl(["req"] + key + ["-keyout", serverKey, "-out", directory + "/server.csr", "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: directory + "/san.cnf", atomically: true,
                                                                  encoding: .utf8)
        try Self.openssl(["x509", "-req", "-in", directory + "/server.csr", "-CA", caCertificate,
                          "-CAkey", directory + "/ca.key", "-CAcreateserial", "-out", serverCertificate,
                          "-days", "2", "-extfile", directory + "/san.cnf"])
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try Shell.run(["openssl"] + arguments)
        guard result.succeeded else {
            throw MountError(message: "openssl \(arguments.joined(separator: " ")) failed: \(result.error)")
        }
    }

    /// The arguments that make a redis-server speak TLS only, on `port`, with this certificate.
    func serverArguments(port: Int) -> [String] {
        ["--port", "0", "--tls-port", String(port), "--tls-cert-file", serverCertificate,
         "--tls-key-file", serverKey, "--tls-ca-cert-file", caCertificate, "--tls-auth-clients", "no"]
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
