// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "idpipe",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "idpipe", targets: ["idpipe"]),
        .executable(name: "idpipe-sandbox", targets: ["idpipe-sandbox"]),
        .executable(name: "idpipe-bench", targets: ["idpipe-bench"]),
        .library(name: "IdPipeCore", targets: ["IdPipeCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // C libraries, each wrapped once.
        .systemLibrary(name: "CLibCSV", providers: [.apt(["libcsv-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // Linux calls glibc declares only under _GNU_SOURCE (memfd_create); no library of its own.
        .systemLibrary(name: "CLinux"),

        // Model, pure stages, pipeline definition, planner, report rendering. No I/O, no C.
        .target(name: "IdPipeCore", dependencies: [
            .product(name: "Yams", package: "Yams"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The only module that touches OpenSSL.
        .target(name: "IdPipeCrypto", dependencies: ["IdPipeCore", "COpenSSL"]),
        // The only module that touches libcsv.
        .target(name: "IdPipeCSV", dependencies: ["CLibCSV"]),
        // Streaming readers of the input files (export JSON/CSV, mapped CSV, side inputs).
        .target(name: "IdPipeExtract", dependencies: ["IdPipeCore", "IdPipeCSV", "IdPipeCrypto", "IdPipeConnect", "CLinux"]),
        // The SQLite checkpoint store.
        .target(name: "IdPipeStore", dependencies: [
            "IdPipeCore",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The remote services: HTTP transport interface, rate limits, retries, Google/Apple/Facebook clients.
        // Pure Swift above a replaceable transport, so every request can be checked against a stub.
        .target(name: "IdPipeConnect", dependencies: [
            "IdPipeCore", "IdPipeCrypto",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Apply: carries out a recorded plan on the services, each effect recorded before and after.
        .target(name: "IdPipeApply", dependencies: [
            "IdPipeCore", "IdPipeConnect", "IdPipeCrypto", "IdPipeStore",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The live transport on async-http-client.
        .target(name: "IdPipeHTTP", dependencies: [
            "IdPipeConnect",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        // The local stand-in for Identity Toolkit, Google OAuth, Apple and Facebook. It verifies with its own
        // code (OpenSSL verify, its own base64url and JSON handling), never with the client's.
        .target(name: "IdPipeSandbox", dependencies: [
            "COpenSSL",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        .executableTarget(name: "idpipe-sandbox", dependencies: [
            "IdPipeSandbox",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // Benchmarks that need the sandbox (they print figures; no timed unit tests).
        .executableTarget(name: "idpipe-bench", dependencies: [
            "IdPipeConnect", "IdPipeHTTP", "IdPipeSandbox",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // The command line: parse, build the live services, call the core, map to exit codes. Linked with jemalloc,
        // which takes over malloc: a plan allocates on its workers and frees on other threads (the merge, the
        // committer), where glibc's allocator took 5-7 % of the time in locks and consolidation.
        .executableTarget(name: "idpipe", dependencies: [
            "IdPipeCore", "IdPipeExtract", "IdPipeStore", "IdPipeCrypto", "IdPipeConnect", "IdPipeHTTP", "IdPipeApply", "CLinux",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], linkerSettings: [.linkedLibrary("jemalloc")]),

        // Helpers shared by the test targets.
        .target(name: "IdPipeTestSupport", path: "Tests/IdPipeTestSupport"),
        .testTarget(name: "IdPipeCoreTests", dependencies: ["IdPipeCore", "IdPipeTestSupport"]),
        .testTarget(name: "IdPipeCryptoTests", dependencies: ["IdPipeCrypto"]),
        .testTarget(name: "IdPipeCSVTests", dependencies: ["IdPipeCSV", "IdPipeTestSupport"]),
        .testTarget(name: "IdPipeExtractTests", dependencies: ["IdPipeExtract", "IdPipeCore", "IdPipeCSV", "IdPipeTestSupport"]),
        .testTarget(name: "IdPipeStoreTests", dependencies: ["IdPipeStore", "IdPipeCore", "IdPipeTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "IdPipeApplyTests", dependencies: ["IdPipeApply", "IdPipeStore", "IdPipeCore", "IdPipeConnect", "IdPipeCrypto", "IdPipeTestSupport"]),
        .testTarget(name: "IdPipeConnectTests", dependencies: ["IdPipeConnect", "IdPipeCrypto", "IdPipeTestSupport"]),
        .testTarget(name: "SandboxTests", dependencies: [
            "IdPipeSandbox", "IdPipeConnect", "IdPipeHTTP", "IdPipeCrypto", "IdPipeTestSupport",
        ]),
        .testTarget(name: "EndToEndTests", dependencies: ["IdPipeCore", "IdPipeTestSupport"]),
    ]
)
