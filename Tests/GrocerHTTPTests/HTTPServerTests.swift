import Dispatch
import Foundation
import GrocerCore
import GrocerHTTP
import GrocerHTTPServer
import GrocerRuntime
import Synchronization
import Testing

/// Runs blocking socket work off Swift's cooperative pool, which the server's async handlers need.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
  }
}

func get(_ path: String) -> String { "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n" }

/// Sends `requests` one after another on one new kept-alive connection, each once the previous
/// one was answered; the answers in order (nil where none came).
func exchange(_ port: Int, ipv6: Bool = false, _ requests: [String]) throws -> [RawSocket.Response?] {
  let connection = try RawSocket(port: port, ipv6: ipv6)
  return requests.map { request in
    connection.write(request)
    return connection.response()
  }
}

/// A route answered inside the transport's callback (`answer`, never falling back to the async
/// handler, which gives the same answer).
func answeredInTheCallback(
  _ method: String, _ template: String, _ answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse
) -> Route {
  Route(method, template, { answer($0) }).answeringFromMemory { answer($0) }
}

/// What a fresh connection gets for `GET /sync`: proof the server is still up after abuse.
func stillAnswers(_ port: Int) throws -> RawSocket.Response? {
  try exchange(port, [get("/sync")])[0]
}

/// Opens once an async handler has started, so a test can act while it is in flight.
final class Gate: Sendable {
  private let opened = Atomic(false)
  func open() { opened.store(true, ordering: .releasing) }
  func wait() async {
    while !opened.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
  }
}

@Suite(.serialized) struct HTTPServerTests {
  static func server(
    idleTimeout: Int = 5, grace: Duration = .seconds(5), gate: Gate = Gate(),
    asyncDelay: Duration = .milliseconds(20), yieldEvery: Int = 32
  ) async throws -> HTTPServer {
    var router = Router(middleware: [RequestIDMiddleware()], logger: .discarding())
    router.add(answeredInTheCallback("GET", "/sync") { _ in .text("sync") })
    router.get(
      "/async",
      { _ in
        gate.open()
        try await Task.sleep(for: asyncDelay)
        return .text("async")
      })
    router.add(answeredInTheCallback("POST", "/echo") { request in .text("\(request.body.count)") })
    router.get(
      "/names/{name}",
      { request in
        .text("\(request.pathParameters["name"] ?? "-")|\(request.query["q"] ?? "-")|\(request.rawQuery)")
      })
    router.get(
      "/callback",
      { request in
        // Answered from another thread, as a database writer queue would.
        try await withCheckedThrowingContinuation { continuation in
          DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) {
            if request.query["fail"] != nil {
              continuation.resume(throwing: HTTPError.conflict(code: "asked", detail: "asked to fail"))
            } else {
              continuation.resume(returning: .text("callback"))
            }
          }
        }
      })
    let configuration = HTTPServerConfiguration(
      port: 0, threadPoolSize: 2, connectionTimeoutSeconds: idleTimeout, shutdownGracePeriod: grace,
      yieldEvery: yieldEvery)
    let server = HTTPServer(configuration: configuration, responder: router, logger: .discarding())
    try await server.start()
    return server
  }

  /// Yielding the core is a courtesy to other threads, not a change in what is answered: a
  /// server that yields after every response and one that never does answer alike.
  @Test(arguments: [0, 1, 3])
  func answersAreTheSameHoweverOftenTheTransportYields(yieldEvery: Int) async throws {
    let server = try await Self.server(yieldEvery: yieldEvery)
    let port = server.port
    let answers = try await blocking {
      try exchange(port, [get("/sync"), get("/async"), get("/callback"), get("/sync"), get("/names/x?q=1")])
    }
    #expect(answers.map { $0?.status } == [200, 200, 200, 200, 200])
    #expect(answers.map { $0?.body } == ["sync", "async", "callback", "sync", "x|1|q=1"])
    await server.shutdown()
  }

  @Test func theYieldIsReadFromSettings() {
    #expect(HTTPServerConfiguration().yieldEvery == 32)
    #expect(HTTPServerConfiguration(settings: Settings(["GROCER_HTTP_YIELD_EVERY": "3"])).yieldEvery == 3)
    #expect(HTTPServerConfiguration(settings: Settings(["GROCER_HTTP_YIELD_EVERY": "0"])).yieldEvery == 0)
    #expect(HTTPServerConfiguration(yieldEvery: -4).yieldEvery == 0)
  }

  @Test func syncAndAsyncHandlersAnswerOnOneKeptAliveConnection() async throws {
    let server = try await Self.server()
    let port = server.port
    #expect(port > 0)
    let answers = try await blocking { try exchange(port, [get("/sync"), get("/async")]) }
    let (first, second) = (answers[0], answers[1])
    #expect(first?.status == 200)
    #expect(first?.body == "sync")
    #expect(first?.headers["connection"]?.lowercased() != "close")
    #expect(first?.headers["x-request-id"] != nil)
    #expect(second?.status == 200)
    #expect(second?.body == "async")
    await server.shutdown()
  }

  /// MHD is told to leave the target as it came (`grocer_mhd_keep_escaped`): the router decodes
  /// the path's segments and the query itself, once.
  @Test func anEncodedPathAndQueryAreDecodedOnceOverTheSocket() async throws {
    let server = try await Self.server()
    let port = server.port
    let response = try await blocking {
      try exchange(port, [get("/names/a%2Fb%20c%2525?q=x%2Cy+z&n=%41")])[0]
    }
    #expect(response?.status == 200)
    #expect(response?.body == "a/b c%25|x,y z|q=x%2Cy+z&n=%41")
    await server.shutdown()
  }

  /// Every response carries one `Date` (RFC 9110 §6.6.1), written by us rather than MHD: this
  /// second's time in IMF-fixdate form.
  @Test func everyResponseHasOneDateOfNow() async throws {
    let server = try await Self.server()
    let port = server.port
    let before = Date().timeIntervalSince1970.rounded(.down)
    let answers = try await blocking { try exchange(port, [get("/sync"), get("/nowhere")]) }
    let (answered, missing) = (answers[0], answers[1])
    let after = Date().timeIntervalSince1970
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    for response in [answered, missing] {
      let text = try #require(response?.headers["date"])
      let date = try #require(formatter.date(from: text), "\(text)")
      #expect(date.timeIntervalSince1970 >= before && date.timeIntervalSince1970 <= after)
    }
    #expect(missing?.status == 404)
    await server.shutdown()
  }

  @Test func anAnswerFromAnotherThreadArrivesOnAKeptAliveConnection() async throws {
    let server = try await Self.server()
    let port = server.port
    let answers = try await blocking {
      try exchange(port, [get("/callback"), get("/callback?fail=1"), get("/sync")])
    }
    let (first, second, third) = (answers[0], answers[1], answers[2])
    #expect(first?.status == 200)
    #expect(first?.body == "callback")
    #expect(first?.headers["x-request-id"] != nil)
    #expect(second?.status == 409)
    #expect(second?.body.contains("asked") == true)
    #expect(second?.headers["x-request-id"] != nil)
    #expect(third?.status == 200)
    await server.shutdown()
  }

  @Test func aBodyWithinTheLimitIsRead() async throws {
    let server = try await Self.server()
    let port = server.port
    let response = try await blocking {
      let connection = try RawSocket(port: port)
      let body = String(repeating: "x", count: 60_000)
      connection.write("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
      return connection.response()
    }
    #expect(response?.body == "60000")
    await server.shutdown()
  }

  @Test func aDeclaredTenMegabyteBodyIs413AndTheServerStaysUp() async throws {
    let server = try await Self.server()
    let port = server.port
    let (refused, after) = try await blocking {
      let connection = try RawSocket(port: port)
      connection.write("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n")
      connection.write([UInt8](repeating: 0x41, count: 100_000))
      let refused = connection.response()
      return (refused, try stillAnswers(port))
    }
    #expect(refused?.status == 413)
    #expect(refused?.headers["content-type"] == "application/problem+json")
    #expect(after?.status == 200)
    await server.shutdown()
  }

  @Test func aStreamedBodyOverTheLimitIs413() async throws {
    let server = try await Self.server()
    let port = server.port
    let (refused, after) = try await blocking {
      let connection = try RawSocket(port: port)
      connection.write("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
      let chunk = "8000\r\n" + String(repeating: "y", count: 0x8000) + "\r\n"
      for _ in 0..<2 { connection.write(chunk) }
      connection.write("10\r\n" + String(repeating: "z", count: 16) + "\r\n0\r\n\r\n")
      let refused = connection.response()
      return (refused, try stillAnswers(port))
    }
    #expect(refused?.status == 413)
    #expect(after?.status == 200)
    await server.shutdown()
  }

  @Test func aClientStreamingFarOverTheLimitIsCutOffAndTheServerStaysUp() async throws {
    let server = try await Self.server()
    let port = server.port
    let (wrote, after) = try await blocking {
      let connection = try RawSocket(port: port)
      connection.write("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
      let chunk = "8000\r\n" + String(repeating: "y", count: 0x8000) + "\r\n"
      var wrote = 0
      for _ in 0..<320 where connection.write(chunk) { wrote += 1 }
      return (wrote, try stillAnswers(port))
    }
    #expect(wrote < 320)
    #expect(after?.status == 200)
    await server.shutdown()
  }

  /// What every service's OpenAPI document declares for every operation (`URITooLong`,
  /// `RequestHeaderFieldsTooLarge`): MHD answers a request that does not fit in the connection's
  /// memory itself, before routing, with 414 while the request line is still being read and 431
  /// once it is into the headers; a short HTML page without a Content-Type, and the connection closes.
  @Test(arguments: [(414, "uri", 9_000), (431, "header", 9_000), (431, "header", 100_000)])
  func aRequestTooBigForTheConnectionMemoryGetsMHDsOwnAnswerAndTheServerStaysUp(
    status: Int, longPart: String, letters: Int
  ) async throws {
    let server = try await Self.server()
    let port = server.port
    let (refused, closed, after) = try await blocking {
      let connection = try RawSocket(port: port)
      let long = String(repeating: "x", count: letters)
      connection.write(
        longPart == "uri"
          ? "GET /sync?q=\(long) HTTP/1.1\r\nHost: x\r\n\r\n"
          : "GET /sync HTTP/1.1\r\nHost: x\r\nX-Big: \(long)\r\n\r\n")
      let refused = connection.response()
      return (refused, connection.waitForClose(), try stillAnswers(port))
    }
    #expect(refused?.status == status)
    #expect(refused?.headers["content-type"] == nil)
    #expect(closed)
    #expect(after?.status == 200)
    await server.shutdown()
  }

  @Test func aClientThatNeverFinishesItsHeadersIsDroppedAfterTheIdleTimeout() async throws {
    let server = try await Self.server(idleTimeout: 1)
    let port = server.port
    let started = ContinuousClock.now
    let closed = try await blocking {
      let connection = try RawSocket(port: port)
      connection.write("GET /sync HTTP/1.1\r\nHost: x\r\n")
      return connection.waitForClose()
    }
    #expect(closed)
    #expect(ContinuousClock.now - started < .seconds(4))
    await server.shutdown()
  }

  @Test func shutdownWaitsForAnAsyncHandlerInFlightAndDeliversItsAnswer() async throws {
    let gate = Gate()
    let server = try await Self.server(gate: gate, asyncDelay: .milliseconds(300))
    let port = server.port
    let connection = try RawSocket(port: port)
    let pending = Task {
      try await blocking {
        connection.write(get("/async")); return connection.response()
      }
    }
    await gate.wait()
    await server.shutdown()
    let response = try await pending.value
    #expect(response?.status == 200)
    #expect(response?.body == "async")
  }

  @Test func shutdownAnswers503WhenAnAsyncHandlerOutlivesTheGracePeriod() async throws {
    let gate = Gate()
    let server = try await Self.server(grace: .milliseconds(100), gate: gate, asyncDelay: .seconds(2))
    let port = server.port
    let connection = try RawSocket(port: port)
    let pending = Task {
      try await blocking {
        connection.write(get("/async")); return connection.response()
      }
    }
    await gate.wait()
    await server.shutdown()
    let response = try await pending.value
    #expect(response == nil || response?.status == 503)
  }

  @Test func manyConcurrentConnectionsAreAllAnswered() async throws {
    let server = try await Self.server()
    let port = server.port
    let answered = try await blocking {
      let count = Atomic(0)
      let group = DispatchGroup()
      for index in 0..<64 {
        group.enter()
        // One thread per client, so all 64 connections are really open at once.
        Thread {
          defer { group.leave() }
          guard let connection = try? RawSocket(port: port) else { return }
          for _ in 0..<10 {
            connection.write(get(index % 2 == 0 ? "/sync" : "/async"))
            if connection.response()?.status == 200 { count.add(1, ordering: .relaxed) }
          }
        }.start()
      }
      group.wait()
      return count.load(ordering: .relaxed)
    }
    #expect(answered == 640)
    await server.shutdown()
  }

  /// Each new connection goes to the transport thread holding the fewest, and a closed one is
  /// counted off its thread, so the next goes where there is room.
  @Test func connectionsAreSpreadEvenlyOverTheTransportThreads() async throws {
    let server = try await Self.server()
    let port = server.port
    var connections = try await blocking {
      try (0..<10).map { _ in
        let connection = try RawSocket(port: port)
        connection.write(get("/sync"))
        _ = connection.response()
        return connection
      }
    }
    #expect(server.connectionsPerThread == [5, 5])
    #expect(server.openConnections == 10)
    // Close three held by the first thread (the first connection went there, then they
    // alternated): the last reference to a `RawSocket` closes it.
    for index in [4, 2, 0] { connections.remove(at: index) }
    var waited = 0
    while server.connectionsPerThread != [2, 5] && waited < 200 {
      try await Task.sleep(for: .milliseconds(10))
      waited += 1
    }
    #expect(server.connectionsPerThread == [2, 5])
    let more = try await blocking {
      try (0..<3).map { _ in
        let connection = try RawSocket(port: port)
        connection.write(get("/sync"))
        return (connection, connection.response()?.status)
      }
    }
    #expect(more.map(\.1) == [200, 200, 200])
    #expect(server.connectionsPerThread == [5, 5])
    withExtendedLifetime((connections, more)) {}
    await server.shutdown()
  }

  /// An IPv6 host is served over IPv6 (and only IPv6: the same port on IPv4 is another socket).
  @Test func anIPv6HostIsServed() async throws {
    var router = Router(logger: .discarding())
    router.add(answeredInTheCallback("GET", "/sync") { _ in .text("six") })
    let server = HTTPServer(
      configuration: HTTPServerConfiguration(host: "::1", port: 0), responder: router, logger: .discarding())
    try await server.start()
    let port = server.port
    let response = try await blocking { try exchange(port, ipv6: true, [get("/sync")])[0] }
    #expect(response?.body == "six")
    await server.shutdown()
  }

  /// A host that is no IPv4 or IPv6 address is refused by name (a misspelt GROCER_HTTP_HOST).
  @Test(arguments: ["localhost", "127.0.0.300", "::g"])
  func aHostThatIsNoAddressFailsTheStart(host: String) async {
    let server = HTTPServer(
      configuration: HTTPServerConfiguration(host: host, port: 0), responder: Router(logger: .discarding()),
      logger: .discarding())
    await #expect {
      try await server.start()
    } throws: { error in
      if case HTTPServerError.invalidHost(let named) = error { return named == host }
      return false
    }
    #expect(server.port == 0)
  }

  /// A port number past 65535 is refused, not wrapped onto another port.
  @Test func aPortOutOfRangeFailsTheStart() async throws {
    let server = HTTPServer(
      configuration: HTTPServerConfiguration(port: 70_000), responder: Router(logger: .discarding()),
      logger: .discarding())
    await #expect(throws: HTTPServerError.self) { try await server.start() }
  }

  /// The port is bound once: a second server asking for it fails to start instead of sharing it.
  @Test func aPortInUseFailsTheSecondServersStart() async throws {
    let server = try await Self.server()
    let second = HTTPServer(
      configuration: HTTPServerConfiguration(port: server.port), responder: Router(logger: .discarding()),
      logger: .discarding())
    await #expect(throws: HTTPServerError.self) { try await second.start() }
    #expect(second.port == 0)
    #expect(try await blocking { try stillAnswers(server.port) }?.status == 200)
    await server.shutdown()
  }
}
