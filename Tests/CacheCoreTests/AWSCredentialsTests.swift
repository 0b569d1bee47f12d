@testable import CacheCore
import Foundation
import Testing

@Suite struct AWSCredentialsTests {
    /// A temporary HOME with `.aws/credentials` holding `text` (none if nil).
    func withHome(credentials text: String?, _ body: (String) throws -> Void) throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("aws-home-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home + "/.aws", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        if let text { try text.write(toFile: home + "/.aws/credentials", atomically: true, encoding: .utf8) }
        try body(home)
    }

    let file = """
        # comment
        [default]
        aws_access_key_id = AKDEFAULT
        aws_secret_access_key=secret/default+key

        ; another comment
        [profile work]
        AWS_ACCESS_KEY_ID = AKWORK
        aws_secret_access_key = secret=work
        aws_session_token = token-work

        [broken]
        aws_access_key_id = AKBROKEN
        """

    @Test func theEnvironmentComesFirst() throws {
        try withHome(credentials: file) { home throws in
            let found = try AWSCredentials.load(environment: [
                "HOME": home, "AWS_ACCESS_KEY_ID": "AKENV", "AWS_SECRET_ACCESS_KEY": "secret-env", "AWS_SESSION_TOKEN": "tok",
            ])
            #expect(found == AWSCredentials(accessKeyID: "AKENV", secretAccessKey: "secret-env", sessionToken: "tok"))
        }
    }

    @Test func halfTheEnvironmentIsAnError() throws {
        #expect(throws: AWSCredentialsError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")) {
            try AWSCredentials.load(environment: ["AWS_ACCESS_KEY_ID": "AK"])
        }
        #expect(throws: AWSCredentialsError("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not")) {
            try AWSCredentials.load(environment: ["AWS_SECRET_ACCESS_KEY": "SK", "AWS_ACCESS_KEY_ID": ""])
        }
    }

    @Test func theDefaultProfileOfTheFileInHome() throws {
        try withHome(credentials: file) { home throws in
            #expect(try AWSCredentials.load(environment: ["HOME": home])
                == AWSCredentials(accessKeyID: "AKDEFAULT", secretAccessKey: "secret/default+key"))
        }
    }

    @Test func aProfileNamedByAWSProfile() throws {
        try withHome(credentials: file) { home throws in
            #expect(try AWSCredentials.load(environment: ["HOME": home, "AWS_PROFILE": "work"])
                == AWSCredentials(accessKeyID: "AKWORK", secretAccessKey: "secret=work", sessionToken: "token-work"))
        }
    }

    @Test func aFileNamedByAWSSharedCredentialsFile() throws {
        try withHome(credentials: nil) { home throws in
            let path = home + "/elsewhere.ini"
            try "[default]\naws_access_key_id=AKOTHER\naws_secret_access_key=SKOTHER\n".write(toFile: path, atomically: true, encoding: .utf8)
            #expect(try AWSCredentials.load(environment: ["HOME": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": path])
                == AWSCredentials(accessKeyID: "AKOTHER", secretAccessKey: "SKOTHER"))
        }
    }

    @Test func clearErrorsWhenNothingIsFound() throws {
        try withHome(credentials: nil) { home throws in
            #expect(throws: AWSCredentialsError("no AWS credentials: AWS_ACCESS_KEY_ID is not set and \(home)/.aws/credentials does not exist")) {
                try AWSCredentials.load(environment: ["HOME": home])
            }
        }
        try withHome(credentials: file) { home throws in
            #expect(throws: AWSCredentialsError("\(home)/.aws/credentials has no profile [missing]")) {
                try AWSCredentials.load(environment: ["HOME": home, "AWS_PROFILE": "missing"])
            }
            #expect(throws: AWSCredentialsError(
                "profile [broken] of \(home)/.aws/credentials needs aws_access_key_id and aws_secret_access_key")) {
                try AWSCredentials.load(environment: ["HOME": home, "AWS_PROFILE": "broken"])
            }
        }
        #expect(throws: AWSCredentialsError.self) { try AWSCredentials.load(environment: [:]) }
    }

    @Test func anUnreadableFileSaysSo() throws {
        try withHome(credentials: nil) { home throws in
            let directory = home + "/.aws/credentials"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            do {
                _ = try AWSCredentials.load(environment: ["HOME": home])
                Issue.record("a directory was read as a credentials file")
            } catch {
                #expect("\(error)".hasPrefix("cannot read \(directory)"))
            }
        }
    }

    @Test func theRegion() {
        #expect(AWSCredentials.region(environment: [:]) == "us-east-1")
        #expect(AWSCredentials.region(environment: ["AWS_DEFAULT_REGION": "eu-west-2"]) == "eu-west-2")
        #expect(AWSCredentials.region(environment: ["AWS_DEFAULT_REGION": "eu-west-2", "AWS_REGION": "ap-south-1"]) == "ap-south-1")
    }
}
