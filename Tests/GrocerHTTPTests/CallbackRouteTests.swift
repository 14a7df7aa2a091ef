import Foundation
import GrocerCore
import GrocerHTTP
import GrocerRuntime
import Testing

/// `Route.answeredByCallback`: the adapter's completion path runs the callback with no task, the
/// async path awaits the same callback, and the middleware runs around both.
@Suite struct CallbackRouteTests {
  /// Answers from another thread, as a database writer queue does.
  private static let queue = DispatchQueue(label: "callback-route-tests")

  private func router() -> Router {
    var router = Router(
      middleware: [RequestIDMiddleware(ids: SequentialIDs(prefix: "req"))], logger: .discarding())
    router.add(
      Route.answeredByCallback("POST", "/work/{outcome}") { request, done in
        let outcome = request.pathParameters["outcome"]
        Self.queue.async {
          switch outcome {
          case "fails": done(.failure(HTTPError.notFound(code: "noWork", detail: "no such work")))
          default: done(.success(.text("done on the queue")))
          }
        }
      })
    return router
  }

  private func completed(_ router: Router, _ request: HTTPRequest) async -> HTTPResponse {
    await withCheckedContinuation { continuation in
      router.respond(to: request) { continuation.resume(returning: $0) }
    }
  }

  @Test func theCompletionPathRunsTheCallbackInsideTheMiddleware() async {
    let response = await completed(router(), HTTPRequest(method: "POST", target: "/work/ok"))
    #expect(response.status == 200)
    #expect(response.bodyString == "done on the queue")
    #expect(response.headers["X-Request-ID"] == "req-1")
  }

  @Test func aFailureTheCallbackGivesIsItsProblem() async {
    let response = await completed(router(), HTTPRequest(method: "POST", target: "/work/fails"))
    #expect(response.status == 404)
    #expect(response.bodyString.contains("noWork"))
  }

  @Test func theAsyncPathAwaitsTheSameCallback() async {
    let router = router()
    let response = await router.respond(to: HTTPRequest(method: "POST", target: "/work/ok"))
    #expect(response.bodyString == "done on the queue")
    #expect(await router.respond(to: HTTPRequest(method: "POST", target: "/work/fails")).status == 404)
  }

  @Test func otherRoutesOnTheCompletionPathAreAwaitedByATask() async {
    var router = router()
    router.get("/plain", { _ in .text("plain") })
    #expect(await completed(router, HTTPRequest(method: "GET", target: "/plain")).bodyString == "plain")
    #expect(await completed(router, HTTPRequest(method: "GET", target: "/nowhere")).status == 404)
  }
}
