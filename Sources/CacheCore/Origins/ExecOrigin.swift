import CacheModel
import Foundation
import Glibc

/// `exec:/path/to/program`: a program the daemon runs for each name, with the name's path
/// below the pool as its last argument. `PROGRAM --size NAME` prints the size in bytes;
/// `PROGRAM NAME` writes the bytes to standard output. Exit 0 means found, 44 not found,
/// anything else a failure (retried). The program's stderr is the daemon's (its log).
///
/// Run as a ``ChildProcess`` (posix_spawn; not Foundation's `Process`, which can crash the
/// daemon, see there) on the fetch's own thread: the daemon is thread-based and blocking,
/// and swift-subprocess's async API would put the pipe reads on the two threads of the
/// cooperative pool.
struct ExecOrigin: Origin {
    let program: String
    static let notFoundStatus: Int32 = 44
    static let chunkSize = Tunables.execOriginChunkBytes

    /// A program names no versions: what it prints for a name is that name's file.
    var sharedVersions: SharedVersions { .onePerName }

    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry {
        var output = Data()
        let status = try run(["--size", name(path)]) { chunk in
            output.append(contentsOf: chunk)
            return output.count < 4096
        }
        if status == Self.notFoundStatus { return .missing }
        guard status == 0 else { throw .failed("\(program) --size exited with \(status)") }
        let text = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let size = Int64(text), size >= 0 else {
            throw .failed("\(program) --size printed '\(text.prefix(80))', not a size in bytes")
        }
        return .file(size: size)
    }

    func fetch(_ path: [[UInt8]], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> OriginDelivery {
        var delivered: Int64 = 0
        let status = try run([name(path)]) { chunk in
            delivered += Int64(chunk.count)
            return receive(chunk)
        }
        if status == Self.notFoundStatus { throw .notFound }
        guard status == 0 else { throw .failed("\(program) exited with \(status)") }
        return OriginDelivery(bytes: delivered)
    }

    private func name(_ path: [[UInt8]]) -> String {
        path.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }

    /// Runs the program, handing its standard output to `receive` as it comes; when
    /// `receive` answers false the program is asked to stop (SIGTERM). Returns its exit
    /// status (128 plus the signal that ended it, as a shell says).
    private func run(_ arguments: [String], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> Int32 {
        var child: ChildProcess
        do {
            child = try ChildProcess(program: program, arguments: arguments)
        } catch {
            throw .failed("cannot run \(program): \(error)")
        }
        let (_, ending) = DescriptorStream.deliver(child.output, chunkSize: Self.chunkSize, to: receive)
        var readError: Int32 = 0
        switch ending {
        case .end: break
        case .stopped: child.terminate()
        case .failed(let code): readError = code
        }
        let status = child.wait().status
        if readError != 0 { throw .failed("reading from \(program): \(String(cString: strerror(readError)))") }
        return status
    }
}
