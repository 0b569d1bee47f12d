import Foundation
import Glibc
import Testing

/// A pool whose origin is an S3 bucket, served by moto on loopback with its signature checks
/// on: signed HEAD and GET through a real mount, listing, a missing key, wrong credentials.
@Suite struct S3OriginTests {
    /// Mounts with `data` reading through to `s3://origin-bucket/pre/` on a fresh moto, whose
    /// bucket holds `a.bin` (5000 bytes) and `sub dir/ü b+c.txt`; `secret` replaces the
    /// daemon's secret key; with `bigObject`, also `big.bin` (10 MiB, held in blocks).
    func withS3OriginMount(secret: String? = nil, bigObject: Bool = false, _ body: (MountedStore, S3OriginServer, String) throws -> Void) throws {
        var server: S3OriginServer?
        defer { server?.stop() }
        var files = ""
        let mounted = try MountedStore { store in
            files = store.directory + "/s3-files"
            try FileManager.default.createDirectory(atPath: files + "/sub dir", withIntermediateDirectories: true)
            let written = try Shell.bash("head -c 5000 /dev/urandom > '\(files)/a.bin'; echo encoded > '\(files)/sub dir/ü b+c.txt'")
            guard written.succeeded else { throw MountError(message: written.error) }
            if bigObject { try writeRandomFile(files + "/big.bin", bytes: 10 << 20) }
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

    /// A large object is held in blocks: one signed ranged GET per block read. Put anew while
    /// a reader holds it, the next block's answer names another version (moto's `If-Match`
    /// or the ETag it sends) and the reader gets EIO, never a mix of two versions.
    @Test func aLargeObjectIsReadInRangesAndAChangeMidFileIsNeverMixed() throws {
        try withS3OriginMount(bigObject: true) { (mount: MountedStore, server: S3OriginServer, files: String) throws in
            #expect(try mount.mustSucceed("cmp data/big.bin '\(files)/big.bin' && echo same") == "same")
            let ranged = server.requests().filter { $0.hasPrefix("GET /origin-bucket/pre/big.bin bytes=") }
            #expect(ranged.sorted() == ["GET /origin-bucket/pre/big.bin bytes=0-4194303",
                                        "GET /origin-bucket/pre/big.bin bytes=4194304-8388607",
                                        "GET /origin-bucket/pre/big.bin bytes=8388608-10485759"], "\(server.requests())")
            #expect(try mount.xattr("data", "user.cache.usage") == String(10 << 20))
            // Dropped, so the next open reads it again, block by block, with no read-ahead. (`dd
            // skip` on an open descriptor seeks from where it is: 1 MiB + 7 MiB, in the last block.)
            _ = try mount.mustSucceed("setfattr -n user.cache.max_fetches -v 1 data && rm data/big.bin")
            let marker = mount.directory + "/read-one", go = mount.directory + "/go"
            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            let output = OutputFile()
            defer { output.remove() }
            let reader = try ChildProcess(["bash", "-c", """
                cd '\(mount.mountpoint)'
                exec 3< data/big.bin
                dd bs=1M count=1 status=none <&3 | cmp - <(head -c 1M '\(files)/big.bin') || exit 9
                touch '\(marker)'
                while [ ! -e '\(go)' ]; do sleep 0.05; done
                dd bs=1M skip=7 count=1 status=none <&3 > /dev/null
                """], stdin: quiet, stdout: quiet, stderr: output.fd)
            #expect(Shell.waitUntil(seconds: 20) { access(marker, F_OK) == 0 || !reader.isRunning })
            try server.put(key: "pre/big.bin", contents: "a new, short version\n")
            try createMarker(go)
            let status = reader.wait()
            #expect(status != 0 && output.contents().contains("Input/output error"), "\(status): \(output.contents())")
            #expect(try mount.mustSucceed("cat data/big.bin") == "a new, short version")
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
