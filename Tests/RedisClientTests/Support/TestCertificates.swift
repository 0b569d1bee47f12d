import Foundation

/// A throwaway CA and a server certificate it signed for the name `localhost` only (no IP
/// address, so a connection to 127.0.0.1 must name the server to be trusted), made with the
/// `openssl` command in a temporary directory.
struct TestCertificates {
    let directory: URL
    var caCertificate: String { directory.appendingPathComponent("ca.crt").path }
    var serverCertificate: String { directory.appendingPathComponent("server.crt").path }
    var serverKey: String { directory.appendingPathComponent("server.key").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cachefs-redis-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let openssl = try RedisServer.executable("openssl")
        let folder = directory.path
        let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try RedisServer.run(
            openssl,
            ["req", "-x509"] + ecKey + [
                "-keyout", "\(folder)/ca.key", "-out", "\(folder)/ca.crt", "-days", "2",
                "-subj", "/CN=cachefs test CA",
            ])
        try RedisServer.run(
            openssl,
            ["req"] + ecKey + [
                "-keyout", "\(folder)/server.key", "-out", "\(folder)/server.csr", "-subj", "/CN=localhost",
            ])
        try "subjectAltName=DNS:localhost\n".write(
            toFile: "\(folder)/san.cnf", atomically: true, encoding: .utf8)
        try RedisServer.run(
            openssl,
            [
                "x509", "-req", "-in", "\(folder)/server.csr", "-CA", "\(folder)/ca.crt",
                "-CAkey", "\(folder)/ca.key", "-CAcreateserial", "-out", "\(folder)/server.crt",
                "-days", "2", "-extfile", "\(folder)/san.cnf",
            ])
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}
