import Glibc

/// The path of the running cachefs binary, to start it again (the background daemon, the
/// connection guardian).
enum CurrentExecutable {
    static func path() throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else {
            throw MountPreflight.Problem(description: "cannot find the cachefs executable: \(String(cString: strerror(errno)))")
        }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
