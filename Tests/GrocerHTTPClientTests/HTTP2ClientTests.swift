import Foundation
import GrocerCore
import GrocerTestSupport
import Testing

@testable import GrocerHTTPClient

/// The client against real servers: nginx speaking HTTP/2 in front of a GrocerHTTP echo server,
/// a socket that never answers, and a port nobody listens on.
@Suite(.serialized) struct HTTP2ClientTests {
  static func client(
    _ baseURL: String, mode: HTTP2ClientConfiguration.VersionMode = .http2PriorKnowledge,
    timeout: Duration = .seconds(10), caFile: String? = nil, insecure: Bool = false, maxInFlight: Int = 1000
  ) async throws -> HTTP2Client {
    let client = HTTP2Client(
      configuration: HTTP2ClientConfiguration(
        baseURL: baseURL, versionMode: mode, requestTimeout: timeout, caFile: caFile, insecure: insecure,
        maxInFlight: maxInFlight),
      logger: .discarding())
    try await client.start()
    return client
  }

  /// A client of the stack's TLS port (h2 by ALPN, as APNs), trusting its test certificate.
  static func tlsClient(
    _ stack: EchoStack, timeout: Duration = .seconds(10), maxInFlight: Int = 1000
  ) async throws -> HTTP2Client {
    try await client(
      stack.tlsURL, mode: .http2TLS, timeout: timeout, caFile: stack.certificatePath, maxInFlight: maxInFlight
    )
  }

  /// The error `body` throws, or nil if it returns.
  static func failure(_ body: () async throws -> HTTPClientResponse) async -> (any Error)? {
    do {
      _ = try await body()
      return nil
    } catch {
      return error
    }
  }

  @Test func libcurlSpeaksHTTP2() {
    #expect(CurlGlobal.versionText.contains("nghttp2"))
  }

  @Test func aRequestGoesOverHTTP2() async throws {
    try await EchoStack.run { stack in
      let client = try await Self.tlsClient(stack)
      let response = try await client.send(HTTPClientRequest(method: "GET", path: "/echo/one?x=1"))
      #expect(response.status == 200)
      #expect(response.version == .http2)
      #expect(response.header("x-echo-method") == "GET")
      #expect(response.header("X-Echo-Target") == "/echo/one?x=1")
      #expect(response.body.isEmpty)
      #expect(client.connectionsOpened == 1)
      await client.shutdown()
      let log = try await stack.accessLog(count: 1)
      #expect(log.map(\.version) == ["HTTP/2.0"])
    }
  }

  /// h2c with prior knowledge (no TLS): every request answered over HTTP/2. With libcurl < 8
  /// each takes a connection of its own (see `CurlGlobal.priorKnowledgeReuseIsBroken`).
  @Test func priorKnowledgeRequestsAreAnsweredOverCleartextHTTP2() async throws {
    try await EchoStack.run { stack in
      let client = try await Self.client(stack.h2cURL)
      let responses = try await withThrowingTaskGroup(of: HTTPClientResponse.self) { group in
        for index in 0..<20 {
          group.addTask {
            try await client.send(
              HTTPClientRequest(method: "POST", path: "/echo/\(index)", body: Array("h2c \(index)".utf8)))
          }
        }
        return try await group.reduce(into: []) { $0.append($1) }
      }
      #expect(responses.count == 20)
      #expect(responses.allSatisfy { $0.status == 200 && $0.version == .http2 })
      #expect(Set(responses.map(\.bodyString)) == Set((0..<20).map { "h2c \($0)" }))
      let expectedConnections = CurlGlobal.priorKnowledgeReuseIsBroken ? 20 : 1
      #expect(client.connectionsOpened == expectedConnections)
      await client.shutdown()
      let log = try await stack.accessLog(count: 20)
      #expect(log.count == 20)
      #expect(log.allSatisfy { $0.version == "HTTP/2.0" && $0.status == "200" })
    }
  }

  /// Sends `count` POSTs to `/echo/<tag>-<i>` at once and checks each answer is its own.
  static func sendConcurrently(_ client: HTTP2Client, count: Int, tag: String) async throws {
    let results = try await withThrowingTaskGroup(of: (Int, HTTPClientResponse).self) { group in
      for index in 0..<count {
        group.addTask {
          let response = try await client.send(
            HTTPClientRequest(
              method: "POST", path: "/echo/\(tag)-\(index)", headers: [("x-test-index", "\(index)")],
              body: Array("request \(index)".utf8)))
          return (index, response)
        }
      }
      var results: [Int: HTTPClientResponse] = [:]
      for try await (index, response) in group { results[index] = response }
      return results
    }
    #expect(results.count == count)
    for (index, response) in results {
      #expect(response.status == 200)
      #expect(response.version == .http2)
      #expect(response.bodyString == "request \(index)")
      #expect(response.header("x-echo-x-test-index") == "\(index)")
      #expect(response.header("x-echo-target") == "/echo/\(tag)-\(index)")
    }
  }

  /// nginx allows 128 streams per connection, so 200 at once take two connections by default,
  /// and exactly one when the client may open only one (libcurl queues the rest).
  @Test func twoHundredConcurrentRequestsAreMultiplexedOverOneOrTwoConnections() async throws {
    try await EchoStack.run { stack in
      let client = try await Self.tlsClient(stack)
      try await Self.sendConcurrently(client, count: 200, tag: "default")
      let opened = client.connectionsOpened
      #expect((1...2).contains(opened))
      await client.shutdown()

      let single = HTTP2Client(
        configuration: HTTP2ClientConfiguration(
          baseURL: stack.tlsURL, caFile: stack.certificatePath, maxConnectionsPerHost: 1),
        logger: .discarding())
      try await single.start()
      try await Self.sendConcurrently(single, count: 200, tag: "single")
      #expect(single.connectionsOpened == 1)
      await single.shutdown()

      let log = try await stack.accessLog(count: 400)
      #expect(log.count == 400)
      #expect(log.allSatisfy { $0.method == "POST" && $0.version == "HTTP/2.0" && $0.status == "200" })
      let byDefault = Set(log.filter { $0.uri.hasPrefix("/echo/default-") }.map(\.connection))
      #expect(byDefault.count == opened)
      let bySingle = Set(log.filter { $0.uri.hasPrefix("/echo/single-") }.map(\.connection))
      #expect(bySingle.count == 1)
      #expect(bySingle.isDisjoint(with: byDefault))
    }
  }

  @Test func headersAndALargeBodyArriveIntact() async throws {
    try await EchoStack.run { stack in
      let client = try await Self.tlsClient(stack)
      var generator = SplitMix64(seed: 42)
      let body = (0..<200_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      let headers = [
        ("X-Test-Plain", "value"),
        ("x-test-punctuation", "a, b; c=d \"quoted\" /path?q=1&r=2"),
        ("x-test-repeated", "first"),
        ("x-test-repeated", "second"),
        ("content-type", "application/octet-stream"),
      ]
      let response = try await client.send(
        HTTPClientRequest(method: "PUT", path: "echo/big?token=abc%20def", headers: headers, body: body))
      #expect(response.status == 200)
      #expect(response.version == .http2)
      #expect(response.header("x-echo-method") == "PUT")
      #expect(response.header("x-echo-target") == "/echo/big?token=abc%20def")
      #expect(response.header("x-echo-x-test-plain") == "value")
      #expect(response.header("x-echo-x-test-punctuation") == "a, b; c=d \"quoted\" /path?q=1&r=2")
      #expect(response.headerValues("x-echo-x-test-repeated") == ["first", "second"])
      #expect(response.header("x-echo-content-type") == "application/octet-stream")
      #expect(response.headers.allSatisfy { $0.name == $0.name.lowercased() })
      #expect(response.body.count == body.count)
      #expect(response.body == body)

      // A POST without a content type goes without one (libcurl would add a form type).
      let post = try await client.send(
        HTTPClientRequest(method: "POST", path: "/echo", body: Array("{\"a\":1}".utf8)))
      #expect(post.header("x-echo-content-type") == "none")
      #expect(post.bodyString == "{\"a\":1}")
      let delete = try await client.send(HTTPClientRequest(method: "DELETE", path: "/echo/gone"))
      #expect(delete.header("x-echo-method") == "DELETE")
      #expect(client.connectionsOpened == 1)
      await client.shutdown()
    }
  }

  @Test func tlsWithTheTestCertificateNegotiatesHTTP2() async throws {
    try await EchoStack.run { stack in
      let trusting = try await Self.client(stack.tlsURL, mode: .http2TLS, caFile: stack.certificatePath)
      let response = try await trusting.send(HTTPClientRequest(method: "GET", path: "/echo/tls"))
      #expect(response.status == 200)
      #expect(response.version == .http2)
      await trusting.shutdown()

      let insecure = try await Self.client(stack.tlsURL, mode: .http2TLS, insecure: true)
      #expect(try await insecure.send(HTTPClientRequest(method: "GET", path: "/echo")).version == .http2)
      await insecure.shutdown()

      // The system's CAs do not know the test certificate: a connect failure, nothing sent.
      let verifying = try await Self.client(stack.tlsURL, mode: .http2TLS)
      let error = await Self.failure {
        try await verifying.send(HTTPClientRequest(method: "GET", path: "/echo"))
      }
      let clientError = try #require(error as? HTTPClientError)
      #expect(clientError.kind == .connectFailed)
      #expect(clientError.curlCode == 60)  // CURLE_PEER_FAILED_VERIFICATION
      await verifying.shutdown()
    }
  }

  @Test func aServerThatNeverAnswersIsReportedAsATimeOut() async throws {
    let silent = try SilentServer()
    let client = try await Self.client(silent.url, timeout: .milliseconds(300))
    let started = ContinuousClock.now
    let error = await Self.failure { try await client.send(HTTPClientRequest(method: "GET", path: "/")) }
    let elapsed = ContinuousClock.now - started
    let clientError = try #require(error as? HTTPClientError)
    #expect(clientError.kind == .timedOut)
    #expect(clientError.curlCode == 28)  // CURLE_OPERATION_TIMEDOUT
    #expect(elapsed >= .milliseconds(250))
    #expect(elapsed < .seconds(2))
    await client.shutdown()
  }

  @Test func aSlowAnswerTimesOutAndTheConnectionKeepsServing() async throws {
    try await EchoStack.run { stack in
      let client = try await Self.tlsClient(stack, timeout: .milliseconds(400))
      let error = await Self.failure {
        try await client.send(HTTPClientRequest(method: "GET", path: "/slow"))
      }
      #expect((error as? HTTPClientError)?.kind == .timedOut)
      let next = try await client.send(HTTPClientRequest(method: "GET", path: "/echo/after"))
      #expect(next.status == 200)
      #expect(next.header("x-echo-target") == "/echo/after")
      await client.shutdown()
    }
  }

  @Test func requestsQueuedBeyondMaxInFlightTimeOutWhileTheyWait() async throws {
    let silent = try SilentServer()
    let client = try await Self.client(silent.url, timeout: .milliseconds(300), maxInFlight: 1)
    let started = ContinuousClock.now
    let errors = await withTaskGroup(of: (any Error)?.self) { group in
      for _ in 0..<3 {
        group.addTask {
          await Self.failure { try await client.send(HTTPClientRequest(method: "GET", path: "/")) }
        }
      }
      return await group.reduce(into: []) { $0.append($1) }
    }
    #expect(errors.count == 3)
    #expect(errors.allSatisfy { ($0 as? HTTPClientError)?.kind == .timedOut }, "\(errors)")
    #expect(ContinuousClock.now - started < .seconds(2))
    #expect(client.inFlight == 0)
    await client.shutdown()
  }

  @Test func aLowMaxInFlightStillAnswersEveryRequest() async throws {
    try await EchoStack.run { stack in
      let client = try await Self.tlsClient(stack, maxInFlight: 4)
      let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
        for index in 0..<50 {
          group.addTask {
            try await client.send(HTTPClientRequest(method: "GET", path: "/echo/\(index)")).status
          }
        }
        return try await group.reduce(into: []) { $0.append($1) }
      }
      #expect(statuses == Array(repeating: 200, count: 50))
      #expect(client.inFlight == 0)
      await client.shutdown()
    }
  }

  @Test func aServerThatIsDownGivesAConnectErrorAtOnce() async throws {
    let port = try LocalPort.free()
    let client = try await Self.client("http://127.0.0.1:\(port)")
    let started = ContinuousClock.now
    let error = await Self.failure { try await client.send(HTTPClientRequest(method: "GET", path: "/")) }
    let clientError = try #require(error as? HTTPClientError)
    #expect(clientError.kind == .connectFailed)
    #expect(clientError.curlCode == 7)  // CURLE_COULDNT_CONNECT
    #expect(ContinuousClock.now - started < .seconds(2))
    await client.shutdown()
  }

  @Test func shutdownFailsRequestsInFlight() async throws {
    let silent = try SilentServer()
    let client = try await Self.client(silent.url, timeout: .seconds(30))
    let requests = Task {
      await withTaskGroup(of: (any Error)?.self) { group in
        for _ in 0..<10 {
          group.addTask {
            await Self.failure { try await client.send(HTTPClientRequest(method: "GET", path: "/")) }
          }
        }
        return await group.reduce(into: []) { $0.append($1) }
      }
    }
    let deadline = ContinuousClock.now + .seconds(5)
    while client.inFlight < 10 && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(client.inFlight == 10)
    try await Task.sleep(for: .milliseconds(100))  // let libcurl connect and send
    let started = ContinuousClock.now
    await client.shutdown()
    let errors = await requests.value
    #expect(ContinuousClock.now - started < .seconds(2))
    #expect(errors.count == 10)
    #expect(errors.allSatisfy { ($0 as? HTTPClientError)?.kind == .shutDown }, "\(errors)")
    let after = await Self.failure { try await client.send(HTTPClientRequest(method: "GET", path: "/")) }
    #expect((after as? HTTPClientError)?.kind == .shutDown)
  }

  @Test func cancellingTheTaskFailsItsRequestWithCancellationError() async throws {
    let silent = try SilentServer()
    let client = try await Self.client(silent.url, timeout: .seconds(30))
    let request = Task {
      await Self.failure { try await client.send(HTTPClientRequest(method: "GET", path: "/")) }
    }
    let deadline = ContinuousClock.now + .seconds(5)
    while client.inFlight < 1 && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(10))
    }
    try await Task.sleep(for: .milliseconds(50))
    let started = ContinuousClock.now
    request.cancel()
    let error = await request.value
    #expect(error is CancellationError)
    #expect(ContinuousClock.now - started < .seconds(1))
    #expect(client.inFlight == 0)
    await client.shutdown()
  }

  @Test func sendingBeforeStartFails() async throws {
    let client = HTTP2Client(
      configuration: HTTP2ClientConfiguration(baseURL: "http://127.0.0.1:1"), logger: .discarding())
    let error = await Self.failure { try await client.send(HTTPClientRequest(method: "GET", path: "/")) }
    #expect((error as? HTTPClientError)?.kind == .shutDown)
  }
}
