import CacheModel
import Foundation

/// What an origin's `Cache-Control` says of a copy (RFC 9111), as far as a pool with
/// `cache_control` honours it: `no-store` (not kept), `no-cache` (asked about at every open),
/// `max-age`/`s-maxage` (trusted that long, then asked). `s-maxage` wins over `max-age`: a pool
/// serves every user of the machine, a shared cache in the RFC's words. Anything else
/// (`private`, `must-revalidate`, extensions) changes nothing.
struct CacheControl: Equatable {
    var noStore = false
    var noCache = false
    var maxAge: Int64?
    var sharedMaxAge: Int64?

    init(_ header: String?) {
        guard let header else { return }
        for directive in header.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = parts.first?.lowercased() else { continue }
            let seconds = parts.count == 2 ? Int64(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) : nil
            switch name {
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "max-age": maxAge = seconds.map { max($0, 0) }
            case "s-maxage": sharedMaxAge = seconds.map { max($0, 0) }
            default: continue
            }
        }
    }

    /// How long a copy is trusted before its origin is asked again, in seconds; nil when the
    /// header says nothing of it (the pool's `revalidate` applies).
    var trustSeconds: Int64? {
        if noCache { return 0 }
        return sharedMaxAge ?? maxAge
    }
}

extension OriginDelivery {
    var cachingWord: CacheControl { CacheControl(cacheControl) }
}
