@testable import CacheCore
import Testing

/// How http(s) origin URLs are checked and how names become request URLs.
@Suite struct HTTPOriginURLTests {
    @Test func eachSegmentIsPercentEncodedKeepingOnlyUnreservedCharacters() {
        let origin = HTTPOrigin(base: "http://h/", transport: HTTPTransport())
        #expect(origin.url(of: [Array("Aa0-._~".utf8)]) == "http://h/Aa0-._~")
        #expect(origin.url(of: [Array("a b%c?d#e/f+g".utf8)]) == "http://h/a%20b%25c%3Fd%23e%2Ff%2Bg")
        #expect(origin.url(of: [Array("é".utf8)]) == "http://h/%C3%A9")
        #expect(origin.url(of: [[0xFF, 0x00, 0x0A]]) == "http://h/%FF%00%0A")
    }

    @Test func aNameIsAppendedToTheBaseOneEncodedSegmentPerComponent() {
        let origin = HTTPOrigin(base: "https://example.com/files/", transport: HTTPTransport())
        #expect(origin.url(of: [Array("sub dir".utf8), Array("a&b.txt".utf8)]) == "https://example.com/files/sub%20dir/a%26b.txt")
    }

    @Test func theBaseURLNeedsAHostAndGetsATrailingSlash() {
        #expect(OriginURL.httpBase("http://127.0.0.1:8080/files") == .success("http://127.0.0.1:8080/files/"))
        #expect(OriginURL.httpBase("https://example.com") == .success("https://example.com/"))
        #expect(OriginURL.httpBase("https://example.com/") == .success("https://example.com/"))
        for bad in ["http://", "http:///path", "https://example.com/?list=1", "https://example.com/#top", "http://exa mple.com/"] {
            guard case .failure = OriginURL.httpBase(bad) else {
                Issue.record("\(bad) was accepted")
                continue
            }
        }
    }

    @Test func anUnreachableServerIsNoErrorWhenTheURLIsSet() throws {
        // Port 1 on loopback refuses; the URL is still a valid origin, its lookups fail.
        try OriginURL.check("http://127.0.0.1:1/").get()
        try OriginURL.check("https://cache.invalid/base/").get()
    }
}
