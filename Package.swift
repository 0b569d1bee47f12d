// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "cachefs",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "cachefs", targets: ["cachefs"]),
        .executable(name: "cachefs-bench-files", targets: ["BenchFiles"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        .systemLibrary(
            name: "CFuse3",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]
        ),
        .systemLibrary(name: "CLinux"),
        .target(
            name: "CachePolicy",
            dependencies: [
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // Values every layer shares: entries, errors, pool settings, events, tunables.
        .target(
            name: "CacheModel",
            dependencies: [
                "CachePolicy",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The namespace and its lock, which only `Names` takes; its collaborators are protocols.
        .target(
            name: "CacheNames",
            dependencies: [
                "CLinux",
                "CacheModel",
                "CachePolicy",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CacheCore",
            dependencies: [
                "CLinux",
                "CacheModel",
                "CacheNames",
                "CachePolicy",
                "RedisClient",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "FuseAdapter",
            dependencies: [
                "CFuse3",
                "CacheCore",
                "CacheModel",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "CacheMetrics",
            dependencies: [
                "CacheCore",
                "CacheModel",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "cachefs",
            dependencies: [
                "CacheCore",
                "CacheModel",
                "CachePolicy",
                "CLinux",
                "CacheMetrics",
                "FuseAdapter",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // A Redis client (RESP2 over SwiftNIO, TLS, Redis Cluster) for the shared tier.
        .target(
            name: "RedisClient",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The C helper of scripts/bench (its per-file loops).
        .executableTarget(
            name: "BenchFiles",
            path: "Sources/BenchFiles",
            cSettings: [.unsafeFlags(["-Wall"])]
        ),
        .testTarget(
            name: "CachePolicyTests",
            dependencies: ["CachePolicy"]
        ),
        .testTarget(
            name: "CacheCoreTests",
            dependencies: ["CacheCore", "CacheModel", "CacheNames"]
        ),
        .testTarget(
            name: "RedisClientTests",
            dependencies: [
                "RedisClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["cachefs"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
