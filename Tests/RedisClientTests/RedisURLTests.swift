import Testing

@testable import RedisClient

@Suite struct RedisURLTests {
    @Test func aPlainURLTakesTheDefaults() throws {
        let url = try RedisURL(parsing: "redis://localhost")
        #expect(url.host == "localhost")
        #expect(url.port == 6379)
        #expect(url.database == 0)
        #expect(url.username == nil)
        #expect(url.password == nil)
        #expect(url.usesTLS == false)
    }

    @Test func everyPartIsRead() throws {
        let url = try RedisURL(parsing: "rediss://alice:p%40ss%3Aword@cache.example:7000/3")
        #expect(url.host == "cache.example")
        #expect(url.port == 7000)
        #expect(url.database == 3)
        #expect(url.username == "alice")
        #expect(url.password == "p@ss:word")
        #expect(url.usesTLS)
    }

    @Test func aPasswordWithoutAUser() throws {
        let url = try RedisURL(parsing: "redis://:secret@10.0.0.5:6380/")
        #expect(url.username == nil)
        #expect(url.password == "secret")
        #expect(url.host == "10.0.0.5")
        #expect(url.port == 6380)
        #expect(url.database == 0)
    }

    @Test func aUserWithoutAPassword() throws {
        let url = try RedisURL(parsing: "redis://bob@host")
        #expect(url.username == "bob")
        #expect(url.password == nil)
    }

    @Test func anIPv6Host() throws {
        let url = try RedisURL(parsing: "redis://[::1]:6390/2")
        #expect(url.host == "::1")
        #expect(url.port == 6390)
        #expect(url.database == 2)
        #expect(url.description == "redis://[::1]:6390/2")
    }

    @Test(arguments: [
        ("http://localhost:6379", "scheme must be redis:// or rediss://"),
        ("localhost:6379", "scheme must be redis:// or rediss://"),
        ("redis://", "host is missing"),
        ("redis://:6379", "host is missing"),
        ("redis://user:pw@", "host is missing"),
        ("redis://host:0", "port must be a number from 1 to 65535"),
        ("redis://host:70000", "port must be a number from 1 to 65535"),
        ("redis://host:abc", "port must be a number from 1 to 65535"),
        ("redis://host:", "port must be a number from 1 to 65535"),
        ("redis://host/x", "database must be a number"),
        ("redis://host/-1", "database must be a number"),
        ("redis://host/1/2", "database must be a number"),
        ("redis://host?db=1", "query and fragment parts are not supported"),
        ("redis://u:%zz@host", "password has a bad percent escape"),
        ("redis://[::1:6379", "IPv6 host is missing"),
    ])
    func badURLsAreRefusedClearly(text: String, reason: String) {
        let error = #expect(throws: RedisError.self) { try RedisURL(parsing: text) }
        guard case .invalidURL(let message)? = error else {
            Issue.record("\(text): expected invalidURL, got \(String(describing: error))")
            return
        }
        #expect(message.contains(reason), "\(text): \(message)")
    }

    @Test func thePasswordIsNeverShown() throws {
        let url = try RedisURL(parsing: "redis://alice:hunter2@host:1/0")
        #expect(!url.description.contains("hunter2"))
        #expect(url.description == "redis://alice:***@host:1/0")
        let options = RedisConnectionOptions(url: url)
        #expect(!options.description.contains("hunter2"))
        let error = #expect(throws: RedisError.self) { try RedisURL(parsing: "http://alice:hunter2@host") }
        #expect(error.map { !"\($0)".contains("hunter2") } == true)
    }

    @Test func aPasswordPassedInWinsOverTheURLs() throws {
        let url = try RedisURL(parsing: "redis://alice:fromurl@host")
        #expect(RedisConnectionOptions(url: url, password: "fromfile").password == "fromfile")
        #expect(RedisConnectionOptions(url: url).password == "fromurl")
        #expect(RedisConnectionOptions(url: url).username == "alice")
    }
}
