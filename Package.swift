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
    .systemLibrary(name: "CPostgres", path: "Shared/CPostgres", pkgConfig: "libpq"),

    // The shared foundation. Vocabulary (money, ids, the event envelope, clocks, JSON) depends
    // on nothing; the fast-path primitives and the runtime (logs, metrics, lifecycle) sit on it.
    .target(name: "GrocerCore", path: "Shared/GrocerCore"),
    .target(name: "GrocerFastPath", dependencies: ["GrocerCore"], path: "Shared/GrocerFastPath"),
    .target(
      name: "GrocerRuntime", dependencies: ["GrocerCore", "GrocerFastPath"], path: "Shared/GrocerRuntime"),
    // HTTP's interface (request, response, router, middleware, errors; no C), apart from the
    // libmicrohttpd server and from the in-process test client.
    .target(
      name: "GrocerHTTP", dependencies: ["GrocerCore", "GrocerFastPath", "GrocerRuntime"],
      path: "Shared/GrocerHTTP", resources: [.embedInCode("openapi-shared.json")]),
    .target(
      name: "GrocerHTTPServer",
      dependencies: ["GrocerHTTP", "GrocerCore", "GrocerFastPath", "GrocerRuntime", "CMicroHTTPD"],
      path: "Shared/GrocerHTTPServer"),
    .target(
      name: "GrocerHTTPTesting", dependencies: ["GrocerHTTP", "GrocerCore"], path: "Shared/GrocerHTTPTesting"),
    // Messaging's interface (queues, deliveries, dispositions, the connection's state machine, the
    // request/reply seam; no C), apart from the librabbitmq client that implements it.
    .target(
      name: "GrocerAMQP", dependencies: ["GrocerCore", "GrocerRuntime"], path: "Shared/GrocerAMQP"),
    .target(
      name: "GrocerRabbitMQ",
      dependencies: ["GrocerAMQP", "GrocerCore", "GrocerFastPath", "GrocerRuntime", "CRabbitMQ"],
      path: "Shared/GrocerRabbitMQ"),
    // Storage's interface (the database and connection protocols, rows, migrations, the outbox,
    // inbox and relay; no C), apart from the SQLite engine that implements it.
    .target(
      name: "GrocerStorage", dependencies: ["GrocerCore", "GrocerRuntime"], path: "Shared/GrocerStorage"),
    .target(
      name: "GrocerSQLite", dependencies: ["GrocerStorage", "GrocerCore", "GrocerRuntime", "CSQLite"],
      path: "Shared/GrocerSQLite"),
    .target(
      name: "GrocerPostgres", dependencies: ["GrocerStorage", "GrocerCore", "GrocerRuntime", "CPostgres"],
      path: "Shared/GrocerPostgres"),
    // Which engine a service's database is on (GROCER_DATABASE_URL), for composition roots.
    .target(
      name: "GrocerDatabase",
      dependencies: ["GrocerStorage", "GrocerSQLite", "GrocerPostgres", "GrocerRuntime"],
      path: "Shared/GrocerDatabase"),
    .target(
      name: "GrocerAuth", dependencies: ["GrocerCore", "GrocerRuntime", "COpenSSL"], path: "Shared/GrocerAuth"
    ),
    .target(
      name: "GrocerHTTPClient", dependencies: ["GrocerCore", "GrocerRuntime", "CCurl"],
      path: "Shared/GrocerHTTPClient"),
    // What services say to each other: event payloads, request/reply messages, shared values.
    .target(name: "GrocerContracts", dependencies: ["GrocerCore"], path: "Shared/GrocerContracts"),

    // The operators' and traffic tools (Tools/ → Services/ → Shared/): `grocer` (its commands,
    // the tracking simulator and the push load tool live in GrocerOps, tested in-process) and
    // `grocer-token`.
    .target(
      name: "GrocerOps",
      dependencies: [
        "GrocerCore", "GrocerRuntime", "GrocerAuth", "GrocerAMQP", "GrocerRabbitMQ", "GrocerContracts",
        "GrocerHTTPClient",
        "GrocerStorage", "GrocerSQLite", "StockService", "TrackingService", "NotifyGateway", "APNsSimulator",
      ],
      path: "Tools/GrocerOps"),
    .executableTarget(
      name: "grocer", dependencies: ["GrocerOps", "GrocerCore", "GrocerRuntime"], path: "Tools/grocer"),
    .executableTarget(
      name: "grocer-token", dependencies: ["GrocerCore", "GrocerRuntime", "GrocerAuth"],
      path: "Tools/grocer-token"),

    // Benchmarks (commands, not tests; `make bench` runs Benchmarks/*/run.sh).
    .executableTarget(
      name: "grocer-bench-relay",
      dependencies: [
        "GrocerCore", "GrocerRuntime", "GrocerStorage", "GrocerSQLite", "GrocerAMQP", "GrocerRabbitMQ",
      ],
      path: "Benchmarks/outbox-relay/Sources"),

    .executableTarget(
      name: "grocer-bench-stock-path",
      dependencies: ["StockService", "GrocerHTTP", "GrocerCore", "GrocerFastPath", "GrocerRuntime"],
      path: "Benchmarks/stock-lookup/Sources"),

    .executableTarget(
      name: "grocer-bench-codecs",
      dependencies: ["GrocerContracts", "GrocerCore", "GrocerAuth", "OrderService"],
      path: "Benchmarks/codecs/Sources"),

    .executableTarget(
      name: "grocer-bench-cart-store",
      dependencies: ["CartService", "GrocerContracts", "GrocerCore", "GrocerRuntime"],
      path: "Benchmarks/cart/Sources"),

    // StockService.
    .target(
      name: "StockService",
      dependencies: [
        "GrocerCore", "GrocerFastPath", "GrocerRuntime", "GrocerContracts", "GrocerHTTP", "GrocerHTTPServer",
        "GrocerAMQP", "GrocerRabbitMQ", "GrocerStorage", "GrocerSQLite", "GrocerDatabase", "GrocerAuth",
      ],
      path: "Services/StockService/Sources/StockService", resources: [.embedInCode("HTTP/openapi.json")]),
    .executableTarget(
      name: "stock-service", dependencies: ["StockService", "GrocerCore", "GrocerRuntime"],
      path: "Services/StockService/Sources/stock-service"),

    // CartService.
    .target(
      name: "CartService",
      dependencies: [
        "GrocerCore", "GrocerFastPath", "GrocerRuntime", "GrocerContracts", "GrocerHTTP", "GrocerHTTPServer",
        "GrocerAMQP", "GrocerRabbitMQ", "GrocerStorage", "GrocerSQLite", "GrocerDatabase", "GrocerAuth",
      ],
      path: "Services/CartService/Sources/CartService", resources: [.embedInCode("HTTP/openapi.json")]),
    .executableTarget(
      name: "cart-service", dependencies: ["CartService", "GrocerCore", "GrocerRuntime"],
      path: "Services/CartService/Sources/cart-service"),

    // OrderService.
    .target(
      name: "OrderService",
      dependencies: [
        "GrocerCore", "GrocerFastPath", "GrocerRuntime", "GrocerContracts", "GrocerHTTP", "GrocerHTTPServer",
        "GrocerAMQP", "GrocerRabbitMQ", "GrocerStorage", "GrocerDatabase", "GrocerAuth",
      ],
      path: "Services/OrderService/Sources/OrderService", resources: [.embedInCode("HTTP/openapi.json")]),
    .executableTarget(
      name: "order-service", dependencies: ["OrderService", "GrocerCore", "GrocerAuth", "GrocerRuntime"],
      path: "Services/OrderService/Sources/order-service"),

    // TrackingService.
    .target(
      name: "TrackingService",
      dependencies: [
        "GrocerCore", "GrocerFastPath", "GrocerRuntime", "GrocerContracts", "GrocerHTTP", "GrocerHTTPServer",
        "GrocerAMQP", "GrocerRabbitMQ", "GrocerStorage", "GrocerSQLite", "GrocerDatabase", "GrocerAuth",
      ],
      path: "Services/TrackingService/Sources/TrackingService", resources: [.embedInCode("HTTP/openapi.json")]
    ),
    .executableTarget(
      name: "tracking-service", dependencies: ["TrackingService", "GrocerCore", "GrocerRuntime"],
      path: "Services/TrackingService/Sources/tracking-service"),

    // NotifyGateway.
    .target(
      name: "NotifyGateway",
      dependencies: [
        "GrocerCore", "GrocerFastPath", "GrocerRuntime", "GrocerContracts", "GrocerHTTP", "GrocerHTTPServer",
        "GrocerAMQP", "GrocerRabbitMQ", "GrocerStorage", "GrocerDatabase", "GrocerAuth",
        "GrocerHTTPClient", "APNsSimulator",
      ],
      path: "Services/NotifyGateway/Sources/NotifyGateway", resources: [.embedInCode("HTTP/openapi.json")]),
    // The APNs provider API's requests and rules, and the simulator that enforces them: the
    // simulated transport and the standalone `notify-gateway apns-simulator` both use it.
    .target(
      name: "APNsSimulator",
      dependencies: ["GrocerCore", "GrocerRuntime", "GrocerHTTP", "GrocerAuth"],
      path: "Services/NotifyGateway/Sources/APNsSimulator"),
    .executableTarget(
      name: "notify-gateway", dependencies: ["NotifyGateway", "GrocerCore", "GrocerRuntime"],
      path: "Services/NotifyGateway/Sources/notify-gateway"),

    // Tests: helpers shared by the test targets (the broker fixture, polling).
    .target(
      name: "GrocerTestSupport",
      dependencies: [
        "GrocerCore", "GrocerAMQP", "GrocerRabbitMQ", "GrocerRuntime", "GrocerFastPath", "GrocerStorage",
        "GrocerDatabase", "GrocerPostgres",
      ],
      path: "Tests/GrocerTestSupport"),
    .testTarget(
      name: "GrocerPostgresTests",
      dependencies: ["GrocerPostgres", "GrocerStorage", "GrocerCore", "GrocerRuntime", "GrocerTestSupport"],
      path: "Tests/GrocerPostgresTests"),
    .testTarget(
      name: "GrocerContractsTests", dependencies: ["GrocerContracts", "GrocerCore"],
      path: "Tests/GrocerContractsTests"),
    .testTarget(
      name: "GrocerCoreTests", dependencies: ["GrocerCore", "GrocerRuntime", "GrocerFastPath"],
      path: "Tests/GrocerCoreTests"),
    // The whole system as processes behind the nginx gateway (the end-to-end journey).
    .testTarget(
      name: "SystemTests",
      dependencies: [
        "GrocerOps", "GrocerAuth", "GrocerAMQP", "GrocerRabbitMQ", "GrocerCore", "GrocerContracts",
        "GrocerTestSupport",
        "GrocerRuntime", "GrocerFastPath",
      ],
      path: "Tests/SystemTests"),
    .testTarget(
      name: "GrocerOpsTests",
      dependencies: [
        "GrocerOps", "GrocerCore", "GrocerAMQP", "GrocerRabbitMQ", "GrocerAuth", "GrocerContracts",
        "GrocerTestSupport",
        "GrocerRuntime",
        "GrocerFastPath", "GrocerStorage", "GrocerSQLite", "TrackingService", "APNsSimulator", "StockService",
      ],
      path: "Tests/GrocerOpsTests"),
    .testTarget(
      name: "GrocerHTTPTests",
      dependencies: [
        "GrocerHTTP", "GrocerCore", "GrocerRuntime", "GrocerFastPath", "GrocerHTTPServer",
        "GrocerHTTPTesting",
      ], path: "Tests/GrocerHTTPTests"),
    .testTarget(
      name: "GrocerAMQPTests",
      dependencies: [
        "GrocerAMQP", "GrocerRabbitMQ", "GrocerCore", "GrocerTestSupport", "GrocerRuntime", "GrocerFastPath",
      ],
      path: "Tests/GrocerAMQPTests"),
    .testTarget(
      name: "GrocerStorageTests",
      dependencies: ["GrocerStorage", "GrocerSQLite", "GrocerCore", "GrocerRuntime", "GrocerFastPath"],
      path: "Tests/GrocerStorageTests"),
    .testTarget(
      name: "GrocerHTTPClientTests",
      dependencies: [
        "GrocerHTTPClient", "GrocerCore", "GrocerHTTP", "GrocerTestSupport", "GrocerRuntime",
        "GrocerFastPath", "GrocerHTTPServer", "GrocerHTTPTesting",
      ],
      path: "Tests/GrocerHTTPClientTests"),
    .testTarget(
      name: "GrocerAuthTests", dependencies: ["GrocerAuth", "GrocerCore", "GrocerRuntime", "GrocerFastPath"],
      path: "Tests/GrocerAuthTests"),
    .testTarget(
      name: "StockServiceTests",
      dependencies: [
        "StockService", "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerRabbitMQ",
        "GrocerStorage", "GrocerSQLite",
        "GrocerAuth",
        "GrocerTestSupport", "GrocerRuntime", "GrocerFastPath", "GrocerHTTPServer", "GrocerHTTPTesting",
      ],
      path: "Tests/StockServiceTests"),
    .testTarget(
      name: "CartServiceTests",
      dependencies: [
        "CartService", "StockService", "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP",
        "GrocerRabbitMQ",
        "GrocerStorage", "GrocerSQLite", "GrocerAuth",
        "GrocerTestSupport", "GrocerRuntime", "GrocerFastPath", "GrocerHTTPServer", "GrocerHTTPTesting",
      ],
      path: "Tests/CartServiceTests"),
    .testTarget(
      name: "OrderServiceTests",
      dependencies: [
        "OrderService", "CartService", "StockService", "GrocerCore", "GrocerContracts", "GrocerHTTP",
        "GrocerAMQP", "GrocerRabbitMQ", "GrocerStorage", "GrocerSQLite", "GrocerAuth", "GrocerTestSupport",
        "GrocerRuntime",
        "GrocerFastPath",
        "GrocerHTTPServer", "GrocerHTTPTesting",
      ],
      path: "Tests/OrderServiceTests"),
    .testTarget(
      name: "TrackingServiceTests",
      dependencies: [
        "TrackingService", "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerRabbitMQ",
        "GrocerStorage", "GrocerSQLite", "GrocerDatabase",
        "GrocerAuth", "GrocerTestSupport", "GrocerRuntime", "GrocerFastPath", "GrocerHTTPServer",
        "GrocerHTTPTesting",
      ],
      path: "Tests/TrackingServiceTests"),
    .testTarget(
      name: "NotifyGatewayTests",
      dependencies: [
        "NotifyGateway", "GrocerCore", "GrocerContracts", "GrocerHTTP", "GrocerAMQP", "GrocerRabbitMQ",
        "GrocerStorage", "GrocerSQLite",
        "GrocerAuth", "GrocerHTTPClient", "GrocerTestSupport", "GrocerRuntime", "GrocerFastPath",
        "GrocerHTTPServer", "GrocerHTTPTesting", "APNsSimulator",
      ],
      path: "Tests/NotifyGatewayTests", exclude: ["Golden"]),
  ],
  swiftLanguageModes: [.v6]
)
