import Foundation
import Glibc
import Testing

/// A pool whose origin is an S3 bucket, served by moto on loopback with its signature checks
/// on: signed HEAD and GET through a real mount, listing, a missing key, wrong credentials.
@Suite struct S3OriginTests {
    /// Mounts with `data` reading through to `s3://origin-bucket/pre/` on a fresh moto, whose
    /// bucket holds `a.bin` (5000 bytes) and `sub dir/ü b+c.txt`; `secret` replaces the
    /// daemon's secret key.
    func withS3OriginMount(secret: String? = nil, _ body: (MountedStore, S3OriginServer, String) throws -> Void) throws {
        var server: S3OriginServer?
        defer { server?.stop() }
        var files = ""
        let mounted = try MountedStore { store in
            files = store.directory + "/s3-files"
            try FileManager.default.createDirectory(atPath: files + "/sub dir", withIntermediateDirectories: true)
            let written = try Shell.bash("head -c 5000 /dev/urandom > '\(files)/a.bin'; echo encoded > '\(files)/sub dir/ü b+c.txt'")
            guard written.succeeded else { throw MountError(message: written.error) }
            let started = try S3OriginServer(bucket: "origin-bucket", upload: files, prefix: "pre/", logIn: store.directory)
            server = started
            store.extraArguments += ["--origin", "data=s3://origin-bucket/pre/", "-o", "s3_endpoint=" + started.endpoint]
            store.environment = ["AWS_ACCESS_KEY_ID": started.accessKeyID,
                                 "AWS_SECRET_ACCESS_KEY": secret ?? started.secretAccessKey,
                                 "AWS_SESSION_TOKEN": "", "AWS_REGION": started.region]
        }
        do {
            try body(mounted, server!, files)
        } catch {
            Issue.record("daemon log:\n\(mounted.daemonLog)")
            throw error
        }
    }

    /// `revalidate`: a signed HEAD with `If-None-Match` at each open (0); an object put anew
    /// (another ETag) is fetched again, an unchanged one is not.
    @Test func aChangedObjectIsFetchedAgainPastRevalidate() throws {
        try withS3OriginMount { (mount: MountedStore, server: S3OriginServer, files: String) throws in
            _ = try mount.mustSucceed("setfattr -n user.cache.revalidate -v 0 data")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(files)/a.bin' && echo same") == "same")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(files)/a.bin' && echo same") == "same")
            #expect(server.requests().filter { $0 == "GET /origin-bucket/pre/a.bin" }.count == 1, "\(server.requests())")
            #expect(try mount.xattr("data", "user.cache.revalidations") == "1")
            try server.put(key: "pre/a.bin", contents: "a new version\n")
            #expect(try mount.mustSucceed("cat data/a.bin") == "a new version")
            #expect(server.requests().filter { $0 == "GET /origin-bucket/pre/a.bin" }.count == 2, "\(server.requests())")
            #expect(try mount.xattr("data", "user.cache.revalidations") == "2")
        }
    }

    @Test func aKeyIsFetchedOnceSignedAndTheBucketIsListed() throws {
        try withS3OriginMount { (mount: MountedStore, server: S3OriginServer, files: String) throws in
            #expect(try mount.mustSucceed("cmp data/a.bin '\(files)/a.bin' && echo same") == "same")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(files)/a.bin' && echo same") == "same")
            #expect(server.requests().filter { $0 == "GET /origin-bucket/pre/a.bin" }.count == 1, "\(server.requests())")
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "a.bin sub dir")
            #expect(try mount.mustSucceed("cat 'data/sub dir/ü b+c.txt'") == "encoded")
            #expect(server.requests().contains("GET /origin-bucket/pre/sub%20dir/%C3%BC%20b%2Bc.txt"), "\(server.requests())")
            #expect(try mount.xattr("data/a.bin", "user.cache.etag").hasPrefix("\""))
            #expect(try mount.xattr("data", "user.cache.origin") == "s3://origin-bucket/pre/")
            let refused = try mount.sh("setfattr -n user.cache.origin -v 's3://x/' data")
            #expect(!refused.succeeded && refused.error.contains("Invalid argument"))
            #expect(mount.daemonLog.contains("is not an S3 bucket name"))
        }
    }

    @Test func aMissingKeyIsENOENT() throws {
        try withS3OriginMount { mount, _, _ in
            let missing = try mount.sh("cat data/none.bin")
            #expect(!missing.succeeded && missing.error.contains("No such file"), "\(missing)")
            let nested = try mount.sh("cat 'data/sub dir/none.bin'")
            #expect(!nested.succeeded && nested.error.contains("No such file"), "\(nested)")
        }
    }

    @Test func wrongCredentialsAreEIOWithAClearLogLine() throws {
        try withS3OriginMount(secret: "not-the-secret") { mount, _, _ in
            let denied = try mount.sh("cat data/a.bin")
            #expect(!denied.succeeded && denied.error.contains("Input/output error"), "\(denied)")
            #expect(mount.daemonLog.contains("S3 denied HEAD s3://origin-bucket/pre/a.bin (403): check credentials"),
                    "\(mount.daemonLog)")
        }
    }
}
