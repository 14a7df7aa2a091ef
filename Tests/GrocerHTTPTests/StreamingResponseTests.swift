import Foundation
import GrocerHTTP
import GrocerHTTPServer
import Synchronization
import Testing

/// Responses written while they are sent (`HTTPBodyStream`, for server-sent events), through the
/// real transport: chunks arrive as they are written, an idle stream is parked, the end keeps the
/// connection, a client that left is noticed at the next write, and shutdown ends open streams.
@Suite(.serialized) struct StreamingResponseTests {
  /// The streams the server handed out, in order.
  final class Streams: Sendable {
    let all = Mutex<[HTTPBodyStream]>([])
    let cancelled = Atomic<Int>(0)

    func next(after count: Int) async -> HTTPBodyStream? {
      for _ in 0..<500 {
        if let stream = all.withLock({ $0.count > count ? $0[count] : nil }) { return stream }
        try? await Task.sleep(for: .milliseconds(10))
      }
      return nil
    }
  }

  static func server(_ streams: Streams) async throws -> HTTPServer {
    var router = Router(logger: .discarding())
    router.get("/events") { _ in
      let stream = HTTPBodyStream()
      stream.onCancel { streams.cancelled.add(1, ordering: .relaxed) }
      streams.all.withLock { $0.append(stream) }
      stream.write(Array(": hello\n\n".utf8))
      return .eventStream(stream)
    }
    router.get("/plain") { _ in .text("plain") }
    let server = HTTPServer(
      configuration: HTTPServerConfiguration(port: 0, threadPoolSize: 2), responder: router,
      logger: .discarding())
    try await server.start()
    return server
  }

  @Test func chunksArriveAsTheyAreWrittenAndTheEndKeepsTheConnection() async throws {
    let streams = Streams()
    let server = try await Self.server(streams)
    let socket = try RawSocket(port: server.port)
    socket.write(get("/events"))
    let head = try await blocking { socket.read(until: ": hello\n\n") }
    let headers = try #require(head)
    #expect(headers.hasPrefix("HTTP/1.1 200"))
    #expect(headers.lowercased().contains("content-type: text/event-stream"))
    #expect(headers.lowercased().contains("transfer-encoding: chunked"))
    #expect(headers.lowercased().contains("x-accel-buffering: no"))
    let stream = try #require(await streams.next(after: 0))
    // Parked meanwhile; each write wakes it.
    for n in 1...3 {
      try await Task.sleep(for: .milliseconds(50))
      #expect(stream.write(Array("data: \(n)\n\n".utf8)))
      let got = try await blocking { socket.read(until: "data: \(n)\n\n") }
      #expect(got != nil, "event \(n)")
    }
    stream.finish()
    let end = try await blocking { socket.read(until: "0\r\n\r\n") }
    #expect(end != nil, "the chunked body ends")
    #expect(!stream.write(Array("late".utf8)))
    socket.write(get("/plain"))
    let next = try await blocking { socket.response() }
    #expect(next?.body == "plain", "the connection is kept for the next request")
    await server.shutdown()
  }

  @Test func aClientThatLeftIsNoticedAtTheNextWrite() async throws {
    let streams = Streams()
    let server = try await Self.server(streams)
    do {
      let socket = try RawSocket(port: server.port)
      socket.write(get("/events"))
      _ = try await blocking { socket.read(until: ": hello\n\n") }
    }  // closed here
    let stream = try #require(await streams.next(after: 0))
    var noticed = false
    for _ in 0..<100 where !noticed {
      try await Task.sleep(for: .milliseconds(20))
      _ = stream.write(Array(": heartbeat\n\n".utf8))
      noticed = streams.cancelled.load(ordering: .relaxed) == 1
    }
    #expect(noticed, "the producer is told the client left")
    #expect(!stream.write(Array("x".utf8)))
    await server.shutdown()
  }

  @Test func shutdownEndsOpenStreams() async throws {
    let streams = Streams()
    let server = try await Self.server(streams)
    let sockets = try (0..<3).map { _ in try RawSocket(port: server.port) }
    for socket in sockets {
      socket.write(get("/events"))
      _ = try await blocking { socket.read(until: ": hello\n\n") }
    }
    _ = await streams.next(after: 2)
    await server.shutdown()
    #expect(streams.cancelled.load(ordering: .relaxed) == 3)
    for socket in sockets {
      let ended = try await blocking { socket.read(until: "0\r\n\r\n") != nil || socket.waitForClose() }
      #expect(ended)
    }
  }

  /// Without the transport: a client that falls too far behind is cancelled, not buffered for.
  @Test func aStreamNotReadIsCancelledPastItsLimit() {
    let stream = HTTPBodyStream(maximumPending: 100)
    let cancelled = Atomic(false)
    stream.onCancel { cancelled.store(true, ordering: .relaxed) }
    #expect(stream.write(Array(repeating: 65, count: 60)))
    #expect(!stream.write(Array(repeating: 65, count: 60)))
    #expect(cancelled.load(ordering: .relaxed) && stream.isClosed)
  }
}
