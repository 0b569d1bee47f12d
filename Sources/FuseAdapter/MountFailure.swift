import Foundation
import Glibc

/// Why the kernel mount failed, in one line that names the cause and what to do.
///
/// libfuse and the setuid `fusermount3` it runs for users who are not root explain a refused
/// mount on standard error, in their own words and over several lines; ``capturingStandardError(_:)``
/// collects those words so ``explain(_:mountpoint:)`` can turn them into one line.
public enum MountFailure {
    /// What a user who is not root is told when fusermount3 will not mount on the directory
    /// (said here, after the kernel's refusal, and by the preflight before a store is made).
    public static let unwritableMountpointAdvice = "a user who is not root may mount only on a directory they can "
        + "write to (and own, if it is sticky); mount on a directory of your own (mkdir ~/cache), or as root"

    /// Runs `body` with descriptor 2 sent to a temporary file, and returns what was written
    /// there (by libfuse, or by fusermount3, which inherits the descriptor).
    static func capturingStandardError<Result>(_ body: () -> Result) -> (result: Result, text: String) {
        guard let file = tmpfile() else { return (body(), "") }
        defer { fclose(file) }
        fflush(nil)
        let saved = dup(2)
        guard saved >= 0 else { return (body(), "") }
        dup2(fileno(file), 2)
        let result = body()
        fflush(nil)
        dup2(saved, 2)
        close(saved)
        rewind(file)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return (result, String(decoding: bytes, as: UTF8.self))
    }

    /// One line from what libfuse and fusermount3 said.
    static func explain(_ text: String, mountpoint: String) -> String {
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let said = lines.map { line -> String in
            for prefix in ["fuse: ", "fusermount3: "] where line.hasPrefix(prefix) { return String(line.dropFirst(prefix.count)) }
            return line
        }.joined(separator: "; ")
        let cause = said.isEmpty ? "the kernel refused it" : said
        let advice: String
        if text.contains("no write access to mountpoint") || text.contains("not owned by user") {
            // fusermount3's own rule for users who are not root; /dev/fuse is fine.
            advice = unwritableMountpointAdvice
        } else if text.contains("user_allow_other") {
            advice = "-o allow_other needs a line 'user_allow_other' in /etc/fuse.conf (ask an administrator), or mount without allow_other"
        } else if text.contains("/dev/fuse"), text.contains("Permission denied") || text.contains("Operation not permitted") {
            advice = "this user may not open /dev/fuse: ask an administrator for read and write access to it (Debian's default is mode 0666), or mount as root"
        } else if text.contains("/dev/fuse"), text.contains("No such file or directory") || text.contains("No such device") {
            advice = "the FUSE device is missing: load the module (modprobe fuse) and check /dev/fuse"
        } else {
            advice = "check that /dev/fuse is the FUSE device (ls -l /dev/fuse shows 'c' and 10, 229) and that the fuse module is loaded"
        }
        return "cannot mount on \(mountpoint): \(cause); \(advice)"
    }
}
