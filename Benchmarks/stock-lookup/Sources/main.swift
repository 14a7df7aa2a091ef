import Foundation
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import StockService
import Synchronization

/// StockService's own work per stock lookup, without sockets or libmicrohttpd: the request as
/// the transport builds it (target, wrk's headers), the router, the middleware and the memory
/// handler answering a remembered reply. The HTTP benchmark's CPU per request less this is the
/// kernel's and libmicrohttpd's share.
///
/// `grocer-bench-stock-path [REQUESTS_PER_THREAD] [PATH_FILE]` runs 1 thread, then 2 at once
/// (the cores this machine has: shared reference counts and locks bounce between them); prints
/// `RESULT threads=… ns_per_request=…` for each. PATH_FILE holds one request target per line
/// (the HTTP benchmark's); without it, 200 targets of 20 demo ids are made up.
let arguments = CommandLine.arguments.dropFirst()
let perThread = arguments.first.flatMap(Int.init) ?? 300_000
let directory = NSTemporaryDirectory() + "grocer-bench-stock-path-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: directory) }

var configuration = StockServiceConfiguration(settings: Settings(["GROCER_DATA_DIR": directory]))
configuration.serviceName = "stock-bench-path"
configuration.replicaID = "bench"
_ = try loadDemoAssortment(configuration: configuration, logger: .discarding())
let app = try buildStockService(configuration: configuration, logger: .discarding())

let targets: [String]
if let file = arguments.dropFirst().first {
  targets = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
} else {
  var generator = SplitMix64(seed: 11)
  targets = (0..<200).map { _ in
    let ids = (0..<20).map { _ in String(format: "p%05d", Int(generator.next() % 3000) + 1) }
    return "/v1/hubs/h1/stock?ids=" + ids.joined(separator: ",")
  }
}
let headers: HTTPHeaders = [
  "Host": "127.0.0.1:18081",
  "Authorization": "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJiZW5jaC11c2VyIn0.c2lnbmF0dXJl",
]

// Warm: every target once through the async path (reads the database, fills the cache).
for target in targets {
  let response = await app.router.respond(to: HTTPRequest(method: "GET", target: target, headers: headers))
  guard response.status == 200 else {
    FileHandle.standardError.write(Data("warm-up \(target) answered \(response.status)\n".utf8))
    exit(1)
  }
}

/// Answers `perThread` requests on each of `threads` threads at once; ns of wall time per request
/// on one thread.
func measure(threads: Int) -> Double {
  let router = app.router
  let begin = DispatchSemaphore(value: 0)
  let done = DispatchGroup()
  let failures = Mutex(0)
  for thread in 0..<threads {
    done.enter()
    // Each thread its own copies, as the transport makes each request's strings from its own
    // buffer: shared ones would have every request retain strings the other thread retains.
    let own = targets.map { String(decoding: Array($0.utf8), as: UTF8.self) }
    Thread {
      begin.wait()
      var answered = 0
      for index in 0..<perThread {
        let target = own[(index + thread * 7) % own.count]
        var request = HTTPRequest(method: "GET", target: target, headers: headers)
        if let response = router.respondImmediately(to: &request), response.status == 200 { answered += 1 }
      }
      if answered != perThread { failures.withLock { $0 += perThread - answered } }
      done.leave()
    }.start()
  }
  let started = ContinuousClock.now
  for _ in 0..<threads { begin.signal() }
  done.wait()
  let elapsed = ContinuousClock.now - started
  let failed = failures.withLock { $0 }
  if failed > 0 {
    FileHandle.standardError.write(Data("\(failed) requests were not answered from memory\n".utf8))
    exit(1)
  }
  let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
  return nanoseconds / Double(perThread)
}

_ = measure(threads: 1)
for threads in [1, 2] {
  print("RESULT threads=\(threads) ns_per_request=\(Int(measure(threads: threads)))")
}
