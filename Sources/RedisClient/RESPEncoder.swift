import NIOCore

/// Writes a command as Redis expects it from a client: an array of bulk strings (binary safe).
enum RESPEncoder {
    static func encodeCommand(_ arguments: [[UInt8]], into buffer: inout ByteBuffer) {
        buffer.writeString("*\(arguments.count)\r\n")
        for argument in arguments {
            buffer.writeString("$\(argument.count)\r\n")
            buffer.writeBytes(argument)
            buffer.writeStaticString("\r\n")
        }
    }

    static func encodeCommand(_ arguments: [[UInt8]]) -> ByteBuffer {
        let size = arguments.reduce(16) { $0 + $1.count + 16 }
        var buffer = ByteBufferAllocator().buffer(capacity: size)
        encodeCommand(arguments, into: &buffer)
        return buffer
    }
}
