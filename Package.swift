// swift-tools-version:6.0
import PackageDescription

/// One package, five services. Each C library is wrapped once in `Shared/` and nothing else
/// imports it; each service is a library (tested in-process) plus a thin executable.
let package = Package(
  name: "Grocer",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "stock-service", targets: ["stock-service"]),
    .executable(name: "cart-service", targets: ["cart-service"]),
    .executable(name: "order-service", targets: ["order-service"]),
    .executable(name: "tracking-service", targets: ["tracking-service"]),
    .executable(name: "notify-gateway", targets: ["notify-gateway"]),
    .executable(name: "grocer-token", targets: ["grocer-token"]),
    .executable(name: "grocer", targets: ["grocer"]),
  ],
  targets: [
    // C libraries from Debian, each behind one Swift module.
    .systemLibrary(name: "CMicroHTTPD", path: "Shared/CMicroHTTPD", pkgConfig: "libmicrohttpd"),
    .systemLibrary(name: "CRabbitMQ", path: "Shared/CRabbitMQ", pkgConfig: "librabbitmq"),
    .systemLibrary(name: "CSQLite", path: "Shared/CSQLite", pkgConfig: "sqlite3"),
    .systemLibrary(name: "COpenSSL", path: "Shared/COpenSSL", pkgConfig: "openssl"),
    .systemLibrary(name: "CCurl", path: "Shared/CCurl", pkgConfig: "libcurl"),

    // The shared foundation.
    .target(name: "GrocerCore", path: "Shared/GrocerCore"),
    .target(
      name: "GrocerHTTP", dependencies: ["GrocerCore", "CMicroHTTPD"], path: "Shared/GrocerHTTP",
      resources: [.embedInCode("openapi-shared.json")]),
    .target(name: "GrocerAMQP", dependencies: ["GrocerCore", "CRabbitMQ"], path: "Shared/GrocerAMQP"),
    .target(name: "GrocerStorage", dependencies: ["GrocerCore", "CSQLite"], path: "Shared/GrocerStorage"),
    .target(name: "GrocerAuth", dependencies: ["GrocerCore", "COpenSSL"], path: "Shared/GrocerAuth"),
    .target(
      name: "GrocerHTTPClient", dependencies: ["GrocerCore", "CCurl"], path: "Shared/GrocerHTTPClient"),
    // What services say to each other: event payloads, request/reply messages, shared values.
    .target(name: "GrocerContracts", dependencies: ["GrocerCore"], path: "Shared/GrocerContracts"),
    .executableTarget(
      name: "grocer-token", dependencies: ["GrocerCore", "GrocerAuth"], path: "Shared/Tools/grocer-token"),
    // The operators' command (`grocer`): its commands live in GrocerOps, tested in-process.
    .target(
      name: "GrocerOps",
      dependencies: [
        "GrocerCore", "GrocerAuth", "GrocerAMQP", "GrocerContracts", "GrocerHTTPClient", "StockService",
        "TrackingService", "NotifyGateway",
      ],
      path: "Shared/Tools/GrocerOps"),
    .executableTarget(
      name: "grocer", dependencies: ["GrocerOps", "GrocerCore"], path: "Shared/Tools/grocer"),

    // Benchmarks (commands, not tests; `make bench` runs Benchmarks/*/run.sh).
    .executableTarget(
      name: "grocer-bench-relay", dependencies: ["GrocerCore", "GrocerStorage", "GrocerAMQP"],
      path: "Benchmarks/outbox-relay/Sources"),

    .executableTarget(
      name: "grocer-bench-stock-path", dependencies: ["StockService", "GrocerHTTP", "GrocerCore"],
      path: "Benchmarks/stock-lookup/Sources"),

    .executableTarget(
      name: "grocer-bench-cart-store", dependencies: ["CartService", "GrocerContracts", "GrocerCore"],
      path: "Benchmarks/cart/Sources"),

    // StockService.
    .target(
      name: "StockService",
      dependencies: [
        "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerStorage", "GrocerAuth",
      ],
      path: "Services/StockService/Sources/StockService",
      resources: [.embedInCode("HTTP/openapi.json")]),
    .executableTarget(
      name: "stock-service", dependencies: ["StockService", "GrocerCore"],
      path: "Services/StockService/Sources/stock-service"),

    // CartService.
    .target(
      name: "CartService",
      dependencies: [
        "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerStorage", "GrocerAuth",
      ],
      path: "Services/CartService/Sources/CartService",
      resources: [.embedInCode("HTTP/openapi.json")]),
    .executableTarget(
      name: "cart-service", dependencies: ["CartService", "GrocerCore"],
      path: "Services/CartService/Sources/cart-service"),

    // OrderService.
    .target(
      name: "OrderService",
      dependencies: [
        "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerStorage", "GrocerAuth",
      ],
      path: "Services/OrderService/Sources/OrderService",
      resources: [.embedInCode("HTTP/openapi.json")]),
    .executableTarget(
      name: "order-service", dependencies: ["OrderService", "GrocerCore", "GrocerAuth"],
      path: "Services/OrderService/Sources/order-service"),

    // TrackingService.
    .target(
      name: "TrackingService",
      dependencies: [
        "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerStorage", "GrocerAuth",
      ],
      path: "Services/TrackingService/Sources/TrackingService",
      resources: [.embedInCode("HTTP/openapi.json")]),
    .executableTarget(
      name: "tracking-service", dependencies: ["TrackingService", "GrocerCore"],
      path: "Services/TrackingService/Sources/tracking-service"),

    // NotifyGateway.
    .target(
      name: "NotifyGateway",
      dependencies: [
        "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerStorage", "GrocerAuth",
        "GrocerHTTPClient",
      ],
      path: "Services/NotifyGateway/Sources/NotifyGateway",
      resources: [.embedInCode("HTTP/openapi.json")]),
    .executableTarget(
      name: "notify-gateway", dependencies: ["NotifyGateway", "GrocerCore"],
      path: "Services/NotifyGateway/Sources/notify-gateway"),

    // Tests: helpers shared by the test targets (the broker fixture, polling).
    .target(
      name: "GrocerTestSupport", dependencies: ["GrocerCore", "GrocerAMQP"], path: "Tests/GrocerTestSupport"),
    .testTarget(name: "GrocerCoreTests", dependencies: ["GrocerCore"], path: "Tests/GrocerCoreTests"),
    // The whole system as processes behind the nginx gateway (the end-to-end journey).
    .testTarget(
      name: "SystemTests",
      dependencies: [
        "TrackingService", "GrocerAuth", "GrocerAMQP", "GrocerCore", "GrocerContracts", "GrocerTestSupport",
      ],
      path: "Tests/SystemTests"),
    .testTarget(
      name: "GrocerOpsTests",
      dependencies: [
        "GrocerOps", "GrocerCore", "GrocerAMQP", "GrocerAuth", "GrocerContracts", "GrocerTestSupport",
      ],
      path: "Tests/GrocerOpsTests"),
    .testTarget(
      name: "GrocerHTTPTests", dependencies: ["GrocerHTTP", "GrocerCore"], path: "Tests/GrocerHTTPTests"),
    .testTarget(
      name: "GrocerAMQPTests", dependencies: ["GrocerAMQP", "GrocerCore", "GrocerTestSupport"],
      path: "Tests/GrocerAMQPTests"),
    .testTarget(
      name: "GrocerStorageTests", dependencies: ["GrocerStorage", "GrocerCore"],
      path: "Tests/GrocerStorageTests"),
    .testTarget(
      name: "GrocerHTTPClientTests",
      dependencies: ["GrocerHTTPClient", "GrocerCore", "GrocerHTTP", "GrocerTestSupport"],
      path: "Tests/GrocerHTTPClientTests"),
    .testTarget(
      name: "GrocerAuthTests", dependencies: ["GrocerAuth", "GrocerCore"], path: "Tests/GrocerAuthTests"),
    .testTarget(
      name: "StockServiceTests",
      dependencies: [
        "StockService", "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerStorage",
        "GrocerAuth",
        "GrocerTestSupport",
      ],
      path: "Tests/StockServiceTests"),
    .testTarget(
      name: "CartServiceTests",
      dependencies: [
        "CartService", "StockService", "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP",
        "GrocerStorage", "GrocerAuth",
        "GrocerTestSupport",
      ],
      path: "Tests/CartServiceTests"),
    .testTarget(
      name: "OrderServiceTests",
      dependencies: [
        "OrderService", "CartService", "StockService", "GrocerCore", "GrocerContracts", "GrocerHTTP",
        "GrocerAMQP", "GrocerStorage", "GrocerAuth", "GrocerTestSupport",
      ],
      path: "Tests/OrderServiceTests"),
    .testTarget(
      name: "TrackingServiceTests",
      dependencies: [
        "TrackingService", "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerStorage",
        "GrocerAuth", "GrocerTestSupport",
      ],
      path: "Tests/TrackingServiceTests"),
    .testTarget(
      name: "NotifyGatewayTests",
      dependencies: [
        "NotifyGateway", "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerStorage",
        "GrocerAuth", "GrocerHTTPClient", "GrocerTestSupport",
      ],
      path: "Tests/NotifyGatewayTests", exclude: ["Golden"]),
  ],
  swiftLanguageModes: [.v6]
)
