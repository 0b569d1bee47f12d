import Glibc

/// Where a passphrase is typed. Injectable, so key-source tests need no terminal.
public protocol PassphrasePrompt: Sendable {
    /// Whether someone can be asked at all (stdin is a terminal).
    var isInteractive: Bool { get }
    /// Shows `prompt` and reads one line without echo, its line ending dropped.
    func readPassphrase(prompt: String) throws(EncryptionError) -> SecretBytes
}

/// The real terminal: prompts on `output` (stderr, so stdout stays the command's), reads
/// `input` with echo off (termios) and puts the terminal's settings back afterwards.
public struct TerminalPassphrasePrompt: PassphrasePrompt {
    let input: Int32
    let output: Int32
    static let maximumLength = 4096

    public init(input: Int32 = STDIN_FILENO, output: Int32 = STDERR_FILENO) {
        self.input = input
        self.output = output
    }

    public var isInteractive: Bool { isatty(input) == 1 }

    public func readPassphrase(prompt: String) throws(EncryptionError) -> SecretBytes {
        var saved = termios()
        guard tcgetattr(input, &saved) == 0 else { throw .io(operation: "read the terminal's settings", errno: errno) }
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        guard tcsetattr(input, TCSAFLUSH, &silent) == 0 else {
            throw .io(operation: "turn the terminal's echo off", errno: errno)
        }
        defer {
            _ = tcsetattr(input, TCSAFLUSH, &saved)
            // The typed newline was not echoed either.
            write("\n")
        }
        write(prompt)
        let line = try SecretBytes(capacity: Self.maximumLength + 1) { (buffer) throws(EncryptionError) -> Int in
            var count = 0
            while count < buffer.count {
                let result = Glibc.read(input, buffer.baseAddress.map { $0 + count }, 1)
                if result < 0 && errno == EINTR { continue }
                if result < 0 { throw .io(operation: "read the passphrase", errno: errno) }
                if result == 0 || buffer[count] == UInt8(ascii: "\n") { break }
                count += 1
            }
            return count
        }
        guard line.count <= Self.maximumLength else {
            throw .io(operation: "read the passphrase (longer than \(Self.maximumLength) bytes)", errno: E2BIG)
        }
        return line
    }

    private func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in _ = Glibc.write(output, bytes.baseAddress, bytes.count) }
    }
}
