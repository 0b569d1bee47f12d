import NIOCore
import Testing

@testable import RedisClient

@Suite struct RESPCodecTests {
    private func buffer(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
    private func buffer(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }

    /// Decodes one whole value and checks nothing is left over.
    private func decodeWhole(_ bytes: [UInt8]) throws -> RESPValue? {
        var input = buffer(bytes)
        let value = try RESPDecoder.parse(&input)
        #expect(input.readableBytes == 0, "bytes left after the value")
        return value
    }

    @Test func decodesEveryType() throws {
        #expect(try decodeWhole(Array("+OK\r\n".utf8)) == .simpleString("OK"))
        #expect(try decodeWhole(Array("-ERR unknown command\r\n".utf8)) == .error("ERR unknown command"))
        #expect(try decodeWhole(Array(":1000\r\n".utf8)) == .integer(1000))
        #expect(try decodeWhole(Array(":-42\r\n".utf8)) == .integer(-42))
        #expect(try decodeWhole(Array("$5\r\nhello\r\n".utf8)) == .bulkString(Array("hello".utf8)))
        #expect(try decodeWhole(Array("$0\r\n\r\n".utf8)) == .bulkString([]))
        #expect(try decodeWhole(Array("*0\r\n".utf8)) == .array([]))
        #expect(
            try decodeWhole(Array("*3\r\n:1\r\n+two\r\n$5\r\nthree\r\n".utf8))
                == .array([.integer(1), .simpleString("two"), .bulkString(Array("three".utf8))]))
    }

    @Test func decodesNullBulkStringAndNullArray() throws {
        #expect(try decodeWhole(Array("$-1\r\n".utf8)) == .bulkString(nil))
        #expect(try decodeWhole(Array("*-1\r\n".utf8)) == .array(nil))
        #expect(
            try decodeWhole(Array("*2\r\n$-1\r\n*-1\r\n".utf8)) == .array([.bulkString(nil), .array(nil)]))
    }

    @Test func decodesBinaryBulkStrings() throws {
        let payload: [UInt8] = [0, 13, 10, 255, 36, 42, 13, 10]
        let frame = Array("$8\r\n".utf8) + payload + Array("\r\n".utf8)
        #expect(try decodeWhole(frame) == .bulkString(payload))
    }

    @Test func decodesNestedArrays() throws {
        let text = "*2\r\n*2\r\n:1\r\n*1\r\n$1\r\na\r\n*3\r\n-ERR x\r\n*0\r\n*-1\r\n"
        let expected: RESPValue = .array([
            .array([.integer(1), .array([.bulkString(Array("a".utf8))])]),
            .array([.error("ERR x"), .array([]), .array(nil)]),
        ])
        #expect(try decodeWhole(Array(text.utf8)) == expected)
    }

    /// Every value of a pipeline, split at every byte offset: the first part alone decodes
    /// nothing and consumes nothing (or only whole values), the rest completes it.
    @Test func decodesFramesSplitAtEveryOffset() throws {
        let text = "+OK\r\n-ERR no\r\n:-7\r\n$6\r\nab\r\ncd\r\n$-1\r\n*-1\r\n*2\r\n*1\r\n:1\r\n$0\r\n\r\n"
        let expected: [RESPValue] = [
            .simpleString("OK"), .error("ERR no"), .integer(-7), .bulkString(Array("ab\r\ncd".utf8)),
            .bulkString(nil), .array(nil), .array([.array([.integer(1)]), .bulkString([])]),
        ]
        let bytes = Array(text.utf8)
        for offset in 0...bytes.count {
            var input = buffer(Array(bytes[..<offset]))
            var decoded: [RESPValue] = []
            while let value = try RESPDecoder.parse(&input) { decoded.append(value) }
            input.writeBytes(bytes[offset...])
            while let value = try RESPDecoder.parse(&input) { decoded.append(value) }
            #expect(decoded == expected, "split at offset \(offset)")
            #expect(input.readableBytes == 0, "split at offset \(offset)")
        }
    }

    @Test func waitsForAMissingTail() throws {
        for partial in ["", "$", "$5", "$5\r", "$5\r\nhel", "$5\r\nhello", "$5\r\nhello\r", "*2\r\n:1\r\n", ":12"] {
            var input = buffer(partial)
            #expect(try RESPDecoder.parse(&input) == nil, "\(partial.debugDescription) is not whole")
            #expect(input.readableBytes == partial.utf8.count, "\(partial.debugDescription) was consumed")
        }
    }

    @Test(arguments: [
        ("?x\r\n", "unknown RESP type byte"),
        ("$-2\r\n", "negative bulk string length"),
        ("*-5\r\n", "negative array length"),
        ("$536870913\r\n", "over the limit"),
        ("*999999999999\r\n", "over the limit"),
        ("$abc\r\n", "not a number"),
        ("$\r\n", "not a number"),
        (":+5\r\n", "not a number"),
        (":99999999999999999999\r\n", "not a number"),
        ("$3\r\nfooXY", "not followed by CRLF"),
        (":1\rX", "CR not followed by LF"),
        ("*1\r\n!\r\n", "unknown RESP type byte"),
    ])
    func refusesMalformedInput(input: String, reason: String) throws {
        var bytes = buffer(input)
        let error = #expect(throws: RESPDecodingError.self) { try RESPDecoder.parse(&bytes) }
        #expect(error?.description.contains(reason) == true, "\(input.debugDescription): \(String(describing: error))")
    }

    @Test func refusesALineWithoutEnd() throws {
        var input = buffer("+" + String(repeating: "a", count: RESPDecoder.maximumLineLength + 1))
        #expect(throws: RESPDecodingError.self) { try RESPDecoder.parse(&input) }
    }

    @Test func refusesNestingTooDeep() throws {
        var input = buffer(String(repeating: "*1\r\n", count: RESPDecoder.maximumDepth + 1) + ":1\r\n")
        #expect(throws: RESPDecodingError.self) { try RESPDecoder.parse(&input) }
    }

    @Test func encodesCommandsAsArraysOfBulkStrings() {
        var encoded = RESPEncoder.encodeCommand([Array("SET".utf8), [0, 13, 10], []])
        let bytes = encoded.readBytes(length: encoded.readableBytes)!
        #expect(bytes == Array("*3\r\n$3\r\nSET\r\n$3\r\n".utf8) + [0, 13, 10] + Array("\r\n$0\r\n\r\n".utf8))
    }

    @Test func encodedCommandsDecodeBack() throws {
        let arguments: [[UInt8]] = [Array("SET".utf8), Array(0...255), Array("\r\n".utf8)]
        var encoded = RESPEncoder.encodeCommand(arguments)
        #expect(try RESPDecoder.parse(&encoded) == .array(arguments.map { .bulkString($0) }))
    }
}
