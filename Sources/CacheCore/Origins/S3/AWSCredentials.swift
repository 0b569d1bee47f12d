import Foundation

/// The keys S3 requests are signed with, and the region they are signed for.
public struct AWSCredentials: Sendable, Equatable {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// Read once when the daemon mounts, as the AWS CLI looks: `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` first; else the profile
    /// `AWS_PROFILE` (or `default`) of the shared credentials file
    /// (`AWS_SHARED_CREDENTIALS_FILE`, or `$HOME/.aws/credentials`).
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(AWSCredentialsError) -> AWSCredentials {
        let accessKey = nonEmpty(environment["AWS_ACCESS_KEY_ID"])
        let secretKey = nonEmpty(environment["AWS_SECRET_ACCESS_KEY"])
        switch (accessKey, secretKey) {
        case let (accessKey?, secretKey?):
            return AWSCredentials(accessKeyID: accessKey, secretAccessKey: secretKey,
                                  sessionToken: nonEmpty(environment["AWS_SESSION_TOKEN"]))
        case (.some, nil):
            throw AWSCredentialsError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
        case (nil, .some):
            throw AWSCredentialsError("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not")
        case (nil, nil):
            return try fromFile(environment: environment)
        }
    }

    /// `AWS_REGION`, else `AWS_DEFAULT_REGION`, else us-east-1.
    public static func region(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        nonEmpty(environment["AWS_REGION"]) ?? nonEmpty(environment["AWS_DEFAULT_REGION"]) ?? "us-east-1"
    }

    private static func fromFile(environment: [String: String]) throws(AWSCredentialsError) -> AWSCredentials {
        let profile = nonEmpty(environment["AWS_PROFILE"]) ?? "default"
        let path: String
        if let file = nonEmpty(environment["AWS_SHARED_CREDENTIALS_FILE"]) {
            path = file
        } else if let home = nonEmpty(environment["HOME"]) {
            path = home + "/.aws/credentials"
        } else {
            throw AWSCredentialsError("no AWS credentials: AWS_ACCESS_KEY_ID is not set, and neither "
                                          + "AWS_SHARED_CREDENTIALS_FILE nor HOME names a credentials file")
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw AWSCredentialsError("no AWS credentials: AWS_ACCESS_KEY_ID is not set and \(path) does not exist")
        }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw AWSCredentialsError("cannot read \(path): \(error.localizedDescription)")
        }
        guard let section = CredentialsFile.sections(text)[profile] else {
            throw AWSCredentialsError("\(path) has no profile [\(profile)]")
        }
        guard let accessKey = nonEmpty(section["aws_access_key_id"]),
              let secretKey = nonEmpty(section["aws_secret_access_key"]) else {
            throw AWSCredentialsError("profile [\(profile)] of \(path) needs aws_access_key_id and aws_secret_access_key")
        }
        return AWSCredentials(accessKeyID: accessKey, secretAccessKey: secretKey,
                              sessionToken: nonEmpty(section["aws_session_token"]))
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }
}

/// Why no credentials could be read; the description says where cachefs looked.
public struct AWSCredentialsError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
