import Foundation
import Glibc

/// An S3 server on 127.0.0.1 for one test: moto with one bucket holding the files of a
/// folder, started by `scripts/lib/s3_origin_server.py` from the venv that
/// `scripts/lib/install-deps.sh` installs. Always stop it (`withS3OriginServer` does).
final class S3OriginServer {
    let endpoint: String
    let port: Int
    let bucket: String
    let region: String
    let accessKeyID: String
    let secretAccessKey: String
    /// With `session`: temporary keys of an assumed role and their session token.
    let session: (accessKeyID: String, secretAccessKey: String, token: String)?
    /// One line `METHOD URI` per S3 request served, the URI as sent (percent-encoded).
    let requestLog: String
    private let child: ChildProcess
    private let stdinWriter: Int32
    private var stopped = false
    private let output: OutputFile
    private let errors: OutputFile

    /// `upload`'s files go in the bucket under `prefix`. With `auth`, moto checks every
    /// signature and only `accessKeyID`/`secretAccessKey` (and `session`) are accepted.
    init(bucket: String, upload: String? = nil, prefix: String = "", auth: Bool = true, session: Bool = false,
         logIn directory: String) throws {
        let venv = ProcessInfo.processInfo.environment["CACHEFS_TEST_VENV"] ?? "/opt/cachefs-test-venv"
        guard access(venv + "/bin/python", X_OK) == 0 else {
            throw MountError(message: "\(venv)/bin/python is missing: run scripts/lib/install-deps.sh (it installs moto)")
        }
        let script = ScriptHelper.path("s3_origin_server.py")
        requestLog = directory + "/s3-requests.log"
        var arguments = [venv + "/bin/python", script, "--bucket", bucket, "--prefix", prefix,
                         "--log", requestLog, "--until-stdin-closes"]
        if let upload { arguments += ["--upload", upload] }
        if auth { arguments.append("--auth") }
        if session { arguments.append("--session") }
        var ends: [Int32] = [0, 0]
        // Glibc's module has no pipe2; if a concurrent spawn inherits an end in between,
        // `stop` still ends the server with a signal.
        guard pipe(&ends) == 0 else { throw MountError(message: "pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        output = OutputFile()
        errors = OutputFile()
        do {
            child = try ChildProcess(arguments, stdin: ends[0], stdout: output.fd, stderr: errors.fd)
        } catch {
            close(ends[0])
            close(ends[1])
            throw error
        }
        close(ends[0])
        stdinWriter = ends[1]
        let child = child, output = output
        let started = Shell.waitUntil(seconds: 60) { output.contents().hasSuffix("\n") || !child.isRunning }
        let line = output.contents()
        guard started, let data = line.data(using: .utf8),
              let info = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let endpoint = info["endpoint"] as? String, let port = info["port"] as? Int,
              let region = info["region"] as? String, let accessKeyID = info["access_key_id"] as? String,
              let secretAccessKey = info["secret_access_key"] as? String else {
            close(stdinWriter)
            child.signal(SIGKILL)
            child.wait()
            let message = "the S3 server did not start: \(line) \(errors.contents())"
            output.remove()
            errors.remove()
            throw MountError(message: message)
        }
        self.endpoint = endpoint
        self.port = port
        self.bucket = bucket
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        if let key = info["session_access_key_id"] as? String, let secret = info["session_secret_access_key"] as? String,
           let token = info["session_token"] as? String {
            self.session = (key, secret, token)
        } else {
            self.session = nil
        }
    }

    /// Puts `contents` as `key` through the server's S3 API (boto3 from the test venv).
    func put(key: String, contents: String) throws {
        let venv = ProcessInfo.processInfo.environment["CACHEFS_TEST_VENV"] ?? "/opt/cachefs-test-venv"
        let script = """
            import boto3, sys
            client = boto3.client('s3', endpoint_url=sys.argv[1], region_name=sys.argv[2],
                                  aws_access_key_id=sys.argv[3], aws_secret_access_key=sys.argv[4])
            client.put_object(Bucket=sys.argv[5], Key=sys.argv[6], Body=sys.argv[7].encode())
            """
        let result = try Shell.run([venv + "/bin/python", "-c", script, endpoint, region, accessKeyID, secretAccessKey,
                                    bucket, key, contents])
        guard result.succeeded else { throw MountError(message: "cannot put \(key): \(result.error)") }
    }

    /// Puts the bytes of the file at `path` as `key`, as ``put(key:contents:)`` does.
    func put(key: String, contentsOf path: String) throws {
        try boto3("client.put_object(Bucket=sys.argv[5], Key=sys.argv[6], Body=open(sys.argv[7], 'rb').read())",
                  key, path, doing: "put")
    }

    /// Writes the bytes of the object `key` to the file at `path`.
    func download(key: String, to path: String) throws {
        try boto3("open(sys.argv[7], 'wb').write(client.get_object(Bucket=sys.argv[5], Key=sys.argv[6])['Body'].read())",
                  key, path, doing: "download")
    }

    private func boto3(_ statement: String, _ key: String, _ path: String, doing what: String) throws {
        let venv = ProcessInfo.processInfo.environment["CACHEFS_TEST_VENV"] ?? "/opt/cachefs-test-venv"
        let script = """
            import boto3, sys
            client = boto3.client('s3', endpoint_url=sys.argv[1], region_name=sys.argv[2],
                                  aws_access_key_id=sys.argv[3], aws_secret_access_key=sys.argv[4])
            \(statement)
            """
        let result = try Shell.run([venv + "/bin/python", "-c", script, endpoint, region, accessKeyID, secretAccessKey,
                                    bucket, key, path])
        guard result.succeeded else { throw MountError(message: "cannot \(what) \(key): \(result.error)") }
    }

    /// SIGSTOP: the server keeps its port and connections but answers nothing (a stalled S3).
    func suspend() { child.signal(SIGSTOP) }
    func resume() { child.signal(SIGCONT) }

    func requests() -> [String] {
        ((try? String(contentsOfFile: requestLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// What the server wrote to stderr (moto logs each request there).
    var log: String { errors.contents() }

    /// Ends the server (also a suspended one); once only, later calls do nothing.
    func stop() {
        guard !stopped else { return }
        stopped = true
        close(stdinWriter)
        child.signal(SIGTERM)
        child.signal(SIGCONT)
        if !Shell.waitUntil(seconds: 10, { !child.isRunning }) { child.signal(SIGKILL) }
        child.wait()
        output.remove()
        errors.remove()
    }
}

/// Runs `body` with a fresh S3 server, stopped afterwards also when `body` throws.
func withS3OriginServer<T>(bucket: String, upload: String? = nil, prefix: String = "", auth: Bool = true,
                           session: Bool = false, logIn directory: String,
                           _ body: (S3OriginServer) throws -> T) throws -> T {
    let server = try S3OriginServer(bucket: bucket, upload: upload, prefix: prefix, auth: auth, session: session,
                                    logIn: directory)
    defer { server.stop() }
    return try body(server)
}
