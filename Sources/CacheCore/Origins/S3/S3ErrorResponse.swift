import Foundation

/// The body of an S3 error (`<Error><Code>NoSuchKey</Code><Message>…</Message>…</Error>`),
/// for the log line of a failed request. A HEAD has no body: its status says it all.
public struct S3ErrorResponse: Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var resource: String?
    public var requestID: String?

    /// Nil if the body is not an S3 error document.
    public static func parse(_ data: Data) -> S3ErrorResponse? {
        guard let ends = XMLElementEnds.parse(data), ends.last?.path == ["Error"] else { return nil }
        func field(_ name: String) -> String? { ends.first { $0.path == ["Error", name] }?.text }
        guard let code = field("Code") else { return nil }
        return S3ErrorResponse(code: code, message: field("Message") ?? "", resource: field("Resource"),
                               requestID: field("RequestId"))
    }

    /// `NoSuchKey: The specified key does not exist. (resource /b/k, request id 4442587F)`.
    public var description: String {
        let details = [resource.map { "resource \($0)" }, requestID.map { "request id \($0)" }].compactMap { $0 }
        return code + (message.isEmpty ? "" : ": \(message)") + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")
    }
}
