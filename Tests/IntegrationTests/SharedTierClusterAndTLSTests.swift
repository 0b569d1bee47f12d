import Foundation
import Glibc
import Testing

/// Pools sharing a tier on a real three-node Redis Cluster and on a real TLS-only
/// `redis-server` (docs/shared-tier.md): two mounts of two stores stand for two machines.
/// Serialized: each test starts its own servers and mounts.
@Suite(.serialized) struct SharedTierClusterAndTLSTests {
    private static let names = (0..<12).map { "c\($0).jpg" }
    private static let size = 3000

    /// Writes `names` on A, each `size` random bytes, and waits until all reached the tier.
    private static func writeAll(on a: MountedStore) throws {
        _ = try a.mustSucceed(names.map { "head -c \(size) /dev/urandom > thumbnails/\($0)" }.joined(separator: " && "))
        try waitUntilSharedBytesWritten(a, bytes: names.count * size)
    }

    /// B reads `name` and gets A's bytes.
    private static func expectSame(_ name: String, _ a: MountedStore, _ b: MountedStore,
                                   sourceLocation: SourceLocation = #_sourceLocation) throws {
        let compared = try b.mustSucceed("cmp thumbnails/\(name) '\(a.mountpoint)/thumbnails/\(name)' && echo same",
                                         sourceLocation: sourceLocation)
        #expect(compared == "same", sourceLocation: sourceLocation)
    }

    /// The files of a pool land on the node of their key's slot: A's writes spread over the
    /// cluster's nodes, and B reads every one of them as a shared hit.
    @Test(arguments: [false, true])
    func aClusterSharesFilesWhateverNodeHoldsThem(tls: Bool) throws {
        let certificates = tls ? try SharedTierCertificates() : nil
        let cluster = try SharedTierRedisCluster(certificates: certificates)
        let options = certificates.map { ["-o", "shared_ca_file=\($0.caCertificate)"] } ?? []
        try withSharedTierMounts(url: cluster.url, a: options, b: options) { a, b in
            try Self.writeAll(on: a)
            let byNode = try cluster.keysByNode()
            #expect(byNode.joined().sorted() == Self.names.map { "cachefs:1:thumbnails/\($0)" }.sorted(), "\(byNode)")
            #expect(byNode.filter { !$0.isEmpty }.count >= 2, "the keys did not spread over the nodes: \(byNode)")
            for name in Self.names { try Self.expectSame(name, a, b) }
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == String(Self.names.count))
            #expect(try b.xattr("thumbnails", "user.cache.shared_bytes_read") == String(Self.names.count * Self.size))
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
            #expect(try a.xattr("thumbnails", "user.cache.shared_errors") == "0")
            // Each SET and GET went straight to the node of its key's slot: none was redirected.
            for command in ["set", "get"] {
                let stats = try cluster.commandStats(command)
                #expect(stats.map(\.calls).reduce(0, +) >= Self.names.count && stats.allSatisfy { $0.rejected == 0 },
                        "\(command): \(stats)")
            }
        }
    }

    /// A node killed: a file whose key it held is a miss for B (ENOENT, an error counted, a log
    /// line), within the lookup's deadline; local files on both mounts read as before.
    @Test func aClusterNodeKilledIsAMissForItsKeysAndNothingLocalFails() throws {
        let cluster = try SharedTierRedisCluster()
        try withSharedTierMounts(url: cluster.url) { a, b in
            _ = try b.mustSucceed("printf 'mine' > thumbnails/own.jpg")
            try waitUntilSharedBytesWritten(b, bytes: 4)
            try Self.writeAll(on: a)
            let byNode = try cluster.keysByNode()
            let dead = try #require(byNode.firstIndex { $0.contains { $0.hasPrefix("cachefs:1:thumbnails/c") } })
            cluster.nodes[dead].kill()
            let lost = byNode[dead].map { String($0.dropFirst("cachefs:1:thumbnails/".count)) }.filter { $0 != "own.jpg" }
            for name in lost {
                let timed = try b.timedMiss("thumbnails/\(name)")
                #expect(timed.missed, "\(name): \(timed)")
                #expect(timed.milliseconds < 1000, "the miss of \(name) took \(timed.milliseconds) ms")
            }
            #expect(try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 > 0)
            #expect(b.daemonLog.contains("shared tier: reading from \(cluster.url) failed"), "\(b.daemonLog)")
            // Local files: B's own, and every file on A, read as before.
            #expect(try b.mustSucceed("cat thumbnails/own.jpg") == "mine")
            _ = try a.mustSucceed(Self.names.map { "cat thumbnails/\($0) > /dev/null" }.joined(separator: " && "))
            #expect(try a.xattr("thumbnails", "user.cache.files") == String(Self.names.count))
        }
    }

    /// `rediss://` with a password (from the mount's file) and the CA (`shared_ca_file`): A's
    /// file reaches the TLS-only server and B reads it as a shared hit.
    @Test func aTLSTierWithAPasswordAndACAFileIsShared() throws {
        let certificates = try SharedTierCertificates()
        let redis = try SharedTierRedis(password: "tls-s3cret", certificates: certificates)
        let passwordFile = redis.directory + "/password"
        try "tls-s3cret\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let options = ["-o", "shared_password_file=\(passwordFile),shared_ca_file=\(certificates.caCertificate)"]
        try withSharedTierMounts(url: redis.url, a: options, b: options) { a, b in
            #expect(try a.xattr("thumbnails", "user.cache.shared") == "rediss://localhost:\(redis.port)/0")
            _ = try a.mustSucceed("head -c 20000 /dev/urandom > thumbnails/secure.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 20000)
            #expect(try redis.cli(["EXISTS", "cachefs:1:thumbnails/secure.jpg"]).output.contains("1"))
            try Self.expectSame("secure.jpg", a, b)
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
        }
    }

    /// A certificate that does not verify (another CA named, or the system's trust store,
    /// which does not know the test CA) is a failed connection: a miss with an error counted
    /// and logged, never plain TCP, nothing held up; local files are untouched.
    @Test func aCertificateThatDoesNotVerifyIsAMissAndAnError() throws {
        let certificates = try SharedTierCertificates()
        let otherCA = try SharedTierCertificates()
        let redis = try SharedTierRedis(certificates: certificates)
        try withSharedTierMounts(url: redis.url, a: ["-o", "shared_ca_file=\(certificates.caCertificate)"],
                                 b: ["-o", "shared_ca_file=\(otherCA.caCertificate)"]) { a, b in
            // The tier holds both files: B's misses are its certificate check, not absence.
            _ = try a.mustSucceed("printf 'first' > thumbnails/first.jpg && printf 'second' > thumbnails/second.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 11)
            for (round, (name, trust)) in [("first.jpg", "another CA"), ("second.jpg", "the system's trust store")].enumerated() {
                if name == "second.jpg" {
                    b.extraArguments = []
                    try b.remount()
                }
                let timed = try b.timedMiss("thumbnails/\(name)")
                #expect(timed.missed, "\(trust): \(timed)")
                #expect(timed.milliseconds < 3000, "\(trust): the miss took \(timed.milliseconds) ms")
                #expect(try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 > 0, "\(trust)")
                #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "0", "\(trust)")
                // Each mount logs its first failure: one more line per round.
                let lines = b.daemonLog.components(separatedBy: "CERTIFICATE_VERIFY_FAILED").count - 1
                #expect(lines >= round + 1, "\(trust): \(b.daemonLog)")
            }
            // B's own file stays local and readable; its write to the tier fails the same way.
            _ = try b.mustSucceed("printf 'local' > thumbnails/local.jpg")
            #expect(try Shell.waitUntil(seconds: 10) { try b.xattr("thumbnails", "user.cache.shared_queue") == "0" })
            #expect(try b.mustSucceed("cat thumbnails/local.jpg") == "local")
            #expect(try b.xattr("thumbnails", "user.cache.shared_bytes_written") == "0")
            #expect(try redis.cli(["EXISTS", "cachefs:1:thumbnails/local.jpg"]).output.contains("0"))
        }
    }

    /// A CA file that cannot be read, or holds no certificate, stops the mount with one line.
    @Test func aBadCAFileFailsTheMount() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-tier-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/mnt", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "not a certificate\n".write(toFile: directory + "/garbage.pem", atomically: true, encoding: .utf8)
        for (file, says) in [("absent", "cannot read the shared tier's CA file"), ("garbage.pem", "holds no PEM certificate")] {
            let result = try Shell.run(["timeout", "20", MountedStore.executable, "mount", directory + "/store",
                                        directory + "/mnt", "--foreground", "-o", "shared_ca_file=\(directory)/\(file)"])
            #expect(result.status != 0 && result.status != 124, "\(result)")
            #expect(result.error.contains(says) && result.error.contains("\(directory)/\(file)"), "\(result)")
        }
    }
}
