import CacheModel
import Foundation
import Glibc

/// The `user.cache.origin` value of a pool: parsed and checked once when it is set, again
/// when a pool's origin is first used after a mount.
public enum OriginURL {
    /// Whether a URL names an origin, or why it cannot be one (the caller answers EINVAL).
    /// Nothing is contacted: an unreachable server is an error of the lookups, not of the URL.
    public static func check(_ text: String) -> Result<Void, OriginURLError> {
        origin(for: text, context: .forChecking()).map { _ in () }
    }

    /// The origin a URL names, sending its requests (if any) through `context`.
    static func origin(for text: String, context: OriginContext) -> Result<any Origin, OriginURLError> {
        let url = text.trimmingCharacters(in: .whitespaces)
        if url.hasPrefix("file://") {
            let path = String(url.dropFirst("file://".count))
            guard path.hasPrefix("/") else { return .failure(.init("a file:// origin needs an absolute path: file:///DIR")) }
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                return .failure(.init("\(path) is not a directory"))
            }
            let root = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
            return .success(FileOrigin(root: root))
        }
        if url.hasPrefix("exec:") {
            let program = String(url.dropFirst("exec:".count))
            guard program.hasPrefix("/") else { return .failure(.init("an exec: origin needs an absolute path: exec:/PROGRAM")) }
            guard access(program, X_OK) == 0 else { return .failure(.init("\(program) is not an executable program")) }
            return .success(ExecOrigin(program: program))
        }
        if url.hasPrefix("http://") || url.hasPrefix("https://") {
            return httpBase(url).map { HTTPOrigin(base: $0, transport: context.transport) }
        }
        if url.hasPrefix("s3://") {
            return S3Location.parse(url).map { S3Origin(location: $0, access: context.s3, transport: context.transport) }
        }
        return .failure(.init("expected a URL such as file:///srv/images, https://example.com/files/ or s3://bucket/prefix/"))
    }
}

extension OriginURL {
    /// The base URL of an http(s) origin, ending with `/`: a host is needed; a query or a
    /// fragment cannot be, as names are appended to the path.
    static func httpBase(_ url: String) -> Result<String, OriginURLError> {
        guard let parsed = URLComponents(string: url), let host = parsed.host, !host.isEmpty else {
            return .failure(.init("\(url) is not a URL with a host, such as https://example.com/files/"))
        }
        guard parsed.query == nil, parsed.fragment == nil else {
            return .failure(.init("an http(s) origin cannot have a query or a fragment: \(url)"))
        }
        return .success(url.hasSuffix("/") ? url : url + "/")
    }
}

public struct OriginURLError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A `--origin POOL=URL` mount option.
public struct OriginOverride: Sendable, Equatable {
    public var pool: String
    public var url: String

    /// Parses `POOL=URL`, checking the URL as `user.cache.origin` does.
    public static func parse(_ text: String) -> Result<OriginOverride, OriginURLError> {
        guard let equals = text.firstIndex(of: "=") else { return .failure(.init("expected POOL=URL")) }
        let pool = String(text[..<equals])
        guard PoolOverride.isValidPoolName(pool) else { return .failure(.init("\(pool) is not a pool name")) }
        let url = String(text[text.index(after: equals)...])
        return OriginURL.check(url).map { _ in OriginOverride(pool: pool, url: url) }
    }
}
