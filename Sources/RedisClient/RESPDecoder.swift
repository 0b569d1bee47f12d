import NIOCore

/// Why bytes from the server are not RESP2.
struct RESPDecodingError: Error, Hashable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Decodes RESP2 replies. A reply split anywhere waits for the rest (`needMoreData`);
/// malformed input throws, and the pipeline then closes the connection.
struct RESPDecoder: ByteToMessageDecoder {
    typealias InboundOut = RESPValue

    /// Redis's own cap on a bulk string (`proto-max-bulk-len`).
    static let maximumBulkLength = 512 * 1024 * 1024
    /// An array cannot announce more elements than this (Redis cannot hold more in a reply).
    static let maximumArrayCount = 512 * 1024 * 1024
    /// A type line (`+...`, `-...`, `:...`, a length) longer than this is refused, so
    /// garbage without a CRLF does not grow the buffer forever.
    static let maximumLineLength = 64 * 1024
    /// Nested arrays deeper than this are refused (the parser recurses).
    static let maximumDepth = 128

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let value = try Self.parse(&buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        try self.decode(context: context, buffer: &buffer)
    }

    /// One whole value from the buffer's front, consuming it; `nil` (consuming nothing) when
    /// the value has not fully arrived.
    static func parse(_ buffer: inout ByteBuffer) throws -> RESPValue? {
        // Walk the frame first without copying anything out: a large array arriving in many
        // reads is then copied once, when whole, not once per read.
        var probe = buffer
        guard try skipValue(&probe, depth: 0) else { return nil }
        var cursor = buffer
        guard let value = try parseValue(&cursor, depth: 0) else { return nil }
        buffer.moveReaderIndex(to: cursor.readerIndex)
        return value
    }

    /// Moves past one whole value, checking it as `parseValue` does; false if it has not fully arrived.
    private static func skipValue(_ buffer: inout ByteBuffer, depth: Int) throws -> Bool {
        guard let type = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return false }
        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            return try readLine(&buffer) != nil
        case UInt8(ascii: ":"):
            guard let line = try readLine(&buffer) else { return false }
            _ = try parseInteger(line, what: "integer")
            return true
        case UInt8(ascii: "$"):
            guard let line = try readLine(&buffer) else { return false }
            guard let length = try parseLength(line, what: "bulk string", maximum: maximumBulkLength) else { return true }
            guard buffer.readableBytes >= length + 2 else { return false }
            buffer.moveReaderIndex(forwardBy: length)
            return try readCRLF(&buffer, after: length)
        case UInt8(ascii: "*"):
            guard depth < maximumDepth else {
                throw RESPDecodingError("arrays nested deeper than \(maximumDepth) levels")
            }
            guard let line = try readLine(&buffer) else { return false }
            guard let count = try parseLength(line, what: "array", maximum: maximumArrayCount) else { return true }
            for _ in 0..<count {
                guard try skipValue(&buffer, depth: depth + 1) else { return false }
            }
            return true
        default:
            throw RESPDecodingError("unknown RESP type byte 0x\(String(type, radix: 16))")
        }
    }

    private static func readCRLF(_ buffer: inout ByteBuffer, after length: Int) throws -> Bool {
        guard buffer.readBytes(length: 2) == [UInt8(ascii: "\r"), UInt8(ascii: "\n")] else {
            throw RESPDecodingError("bulk string of \(length) bytes is not followed by CRLF")
        }
        return true
    }

    private static func parseValue(_ buffer: inout ByteBuffer, depth: Int) throws -> RESPValue? {
        guard let type = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            guard let line = try readLine(&buffer) else { return nil }
            return .simpleString(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: "-"):
            guard let line = try readLine(&buffer) else { return nil }
            return .error(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: ":"):
            guard let line = try readLine(&buffer) else { return nil }
            return .integer(try parseInteger(line, what: "integer"))
        case UInt8(ascii: "$"):
            return try parseBulkString(&buffer)
        case UInt8(ascii: "*"):
            return try parseArray(&buffer, depth: depth)
        default:
            throw RESPDecodingError("unknown RESP type byte 0x\(String(type, radix: 16))")
        }
    }

    private static func parseBulkString(_ buffer: inout ByteBuffer) throws -> RESPValue? {
        guard let line = try readLine(&buffer) else { return nil }
        let length = try parseLength(line, what: "bulk string", maximum: maximumBulkLength)
        guard let length else { return .bulkString(nil) }
        guard buffer.readableBytes >= length + 2 else { return nil }
        let bytes = buffer.readBytes(length: length)!
        _ = try readCRLF(&buffer, after: length)
        return .bulkString(bytes)
    }

    private static func parseArray(_ buffer: inout ByteBuffer, depth: Int) throws -> RESPValue? {
        guard depth < maximumDepth else {
            throw RESPDecodingError("arrays nested deeper than \(maximumDepth) levels")
        }
        guard let line = try readLine(&buffer) else { return nil }
        let count = try parseLength(line, what: "array", maximum: maximumArrayCount)
        guard let count else { return .array(nil) }
        var elements: [RESPValue] = []
        // Every element takes at least 3 bytes, so a huge count cannot reserve more than arrived.
        elements.reserveCapacity(min(count, buffer.readableBytes / 3))
        for _ in 0..<count {
            guard let element = try parseValue(&buffer, depth: depth + 1) else { return nil }
            elements.append(element)
        }
        return .array(elements)
    }

    /// The bytes after the type byte up to CRLF, consuming the line; `nil` if the CRLF has not come.
    private static func readLine(_ buffer: inout ByteBuffer) throws -> [UInt8]? {
        let view = buffer.readableBytesView.dropFirst()
        guard let carriageReturn = view.firstIndex(of: UInt8(ascii: "\r")) else {
            if view.count > maximumLineLength {
                throw RESPDecodingError("a line longer than \(maximumLineLength) bytes without CRLF")
            }
            return nil
        }
        guard carriageReturn + 1 < view.endIndex else { return nil }
        guard view[carriageReturn + 1] == UInt8(ascii: "\n") else {
            throw RESPDecodingError("CR not followed by LF")
        }
        let line = Array(view[view.startIndex..<carriageReturn])
        buffer.moveReaderIndex(forwardBy: 1 + line.count + 2)
        return line
    }

    /// A length: `nil` for -1 (null), an error for other negatives or past `maximum`.
    private static func parseLength(_ line: [UInt8], what: String, maximum: Int) throws -> Int? {
        let length = try parseInteger(line, what: "\(what) length")
        if length == -1 { return nil }
        guard length >= 0 else { throw RESPDecodingError("negative \(what) length \(length)") }
        guard length <= maximum else {
            throw RESPDecodingError("\(what) length \(length) is over the limit of \(maximum)")
        }
        return Int(length)
    }

    private static func parseInteger(_ line: [UInt8], what: String) throws -> Int64 {
        let text = String(decoding: line, as: UTF8.self)
        // Int64(_:) accepts a leading "+", which RESP does not.
        guard line.first != UInt8(ascii: "+"), let number = Int64(text) else {
            throw RESPDecodingError("\(what) is not a number: \"\(text.prefix(40))\"")
        }
        return number
    }
}
