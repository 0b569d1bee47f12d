@testable import CacheCore
import Foundation
import Glibc
import Synchronization
import Testing

/// Which key source wins, and reading a passphrase from a terminal without echo.
@Suite struct KeySourceTests {
    @Test func anExplicitKeyFileWinsOverTheCredentialAndTheTerminal() throws {
        let credentials = try ScratchDirectory()
        try credentials.write(Array("from systemd\n".utf8), to: KeySource.credentialName)
        let source = try KeySource.find(keyFile: "/given.key", environment: ["CREDENTIALS_DIRECTORY": credentials.path],
                                        prompt: ScriptedPrompt(interactive: true))
        #expect(source == .keyFile("/given.key"))
    }

    @Test func theCredentialWinsOverTheTerminalWhenItsFileIsThere() throws {
        let credentials = try ScratchDirectory()
        let prompt = ScriptedPrompt(interactive: true)
        let environment = ["CREDENTIALS_DIRECTORY": credentials.path]
        #expect(try KeySource.find(keyFile: nil, environment: environment, prompt: prompt) == .terminal)
        try credentials.write(Array("from systemd\n".utf8), to: KeySource.credentialName)
        let path = credentials.file(KeySource.credentialName)
        #expect(try KeySource.find(keyFile: nil, environment: environment, prompt: prompt) == .credential(path))
        guard case .passphrase(let secret) = try KeySource.credential(path).load(prompt: prompt, confirming: false) else {
            Issue.record("the credential was not read as a passphrase")
            return
        }
        #expect(secret.withUnsafeBytes { Array($0) } == Array("from systemd".utf8))
        #expect(prompt.prompts.withLock { $0 }.isEmpty)
    }

    @Test func withoutAnySourceTheErrorSaysWhatToGive() throws {
        #expect(throws: EncryptionError.noKey) {
            try KeySource.find(keyFile: nil, environment: ["CREDENTIALS_DIRECTORY": "/nonexistent"],
                               prompt: ScriptedPrompt(interactive: false))
        }
    }

    @Test func aMissingExplicitKeyFileFailsRatherThanFallingThrough() throws {
        let prompt = ScriptedPrompt(interactive: true, answers: ["typed"])
        let source = try KeySource.find(keyFile: "/nonexistent/key", environment: [:], prompt: prompt)
        #expect(throws: EncryptionError.keyFileUnreadable(path: "/nonexistent/key", errno: ENOENT)) {
            try source.load(prompt: prompt, confirming: false)
        }
        #expect(prompt.prompts.withLock { $0 }.isEmpty)
    }

    @Test func aNewStoresPassphraseIsAskedTwiceAndMustMatch() throws {
        let matching = ScriptedPrompt(interactive: true, answers: ["correct horse", "correct horse"])
        guard case .passphrase = try KeySource.terminal.load(prompt: matching, confirming: true) else {
            Issue.record("a typed key was not a passphrase")
            return
        }
        #expect(matching.prompts.withLock { $0 }.count == 2)
        let differing = ScriptedPrompt(interactive: true, answers: ["correct horse", "correct hose"])
        #expect(throws: EncryptionError.passphrasesDiffer) { try KeySource.terminal.load(prompt: differing, confirming: true) }
        let once = ScriptedPrompt(interactive: true, answers: ["only once"])
        _ = try KeySource.terminal.load(prompt: once, confirming: false)
        #expect(once.prompts.withLock { $0 }.count == 1)
        #expect(throws: EncryptionError.emptyPassphrase) {
            try KeySource.terminal.load(prompt: ScriptedPrompt(interactive: true, answers: [""]), confirming: false)
        }
    }

    /// On a pseudo-terminal: echo is off while the passphrase is typed, the typed text never
    /// comes back to the screen, and the terminal's settings are restored afterwards.
    @Test func theTerminalPromptReadsWithoutEchoAndRestoresTheTerminal() throws {
        let pty = try #require(PseudoTerminal.functions())
        let master = pty.open(O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { close(master) }
        #expect(pty.grant(master) == 0 && pty.unlock(master) == 0)
        let name = try #require(pty.name(master).map { String(cString: $0) })
        let slave = open(name, O_RDWR | O_NOCTTY)
        try #require(slave >= 0)
        defer { close(slave) }
        let prompt = TerminalPassphrasePrompt(input: slave, output: slave)
        #expect(prompt.isInteractive)
        let null = open("/dev/null", O_RDONLY)
        defer { close(null) }
        #expect(!TerminalPassphrasePrompt(input: null).isInteractive)

        let result = Mutex<Result<[UInt8], EncryptionError>?>(nil)
        let reader = Thread {
            let outcome = Result { () throws(EncryptionError) in
                try prompt.readPassphrase(prompt: "Passphrase: ").withUnsafeBytes { Array($0) }
            }
            result.withLock { $0 = outcome }
        }
        reader.start()
        // Type only once echo is off, as a person would after seeing the prompt.
        var settings = termios()
        let silent = Shell.waitUntil(seconds: 5) {
            tcgetattr(slave, &settings) == 0 && settings.c_lflag & tcflag_t(ECHO) == 0
        }
        #expect(silent)
        let typed = Array("s3cret words\n".utf8)
        #expect(Glibc.write(master, typed, typed.count) == typed.count)
        #expect(Shell.waitUntil(seconds: 5) { result.withLock { $0 } != nil })
        #expect(try result.withLock { $0 }?.get() == Array("s3cret words".utf8))
        #expect(tcgetattr(slave, &settings) == 0 && settings.c_lflag & tcflag_t(ECHO) != 0)

        let screen = readAvailable(master)
        #expect(screen.contains("Passphrase: "), "\(screen)")
        #expect(!screen.contains("s3cret"), "\(screen)")
    }

    private func readAvailable(_ fd: Int32) -> String {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The pseudo-terminal calls, which Swift's Glibc module leaves out (they need
/// _XOPEN_SOURCE), looked up in the C library at run time.
private struct PseudoTerminal {
    let open: @convention(c) (Int32) -> Int32
    let grant: @convention(c) (Int32) -> Int32
    let unlock: @convention(c) (Int32) -> Int32
    let name: @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?

    static func functions() -> PseudoTerminal? {
        let library = dlopen(nil, RTLD_NOW)
        func symbol<T>(_ name: String, _ type: T.Type) -> T? {
            dlsym(library, name).map { unsafeBitCast($0, to: type) }
        }
        guard let open = symbol("posix_openpt", (@convention(c) (Int32) -> Int32).self),
              let grant = symbol("grantpt", (@convention(c) (Int32) -> Int32).self),
              let unlock = symbol("unlockpt", (@convention(c) (Int32) -> Int32).self),
              let name = symbol("ptsname", (@convention(c) (Int32) -> UnsafeMutablePointer<CChar>?).self)
        else { return nil }
        return PseudoTerminal(open: open, grant: grant, unlock: unlock, name: name)
    }
}
