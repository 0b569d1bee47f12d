/// The one place the version lives; `cachefs --version` prints it.
enum CachefsVersion {
    static let current = "0.9.0"
}
