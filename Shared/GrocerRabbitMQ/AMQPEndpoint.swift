import Foundation
import GrocerAMQP

/// The parts of an AMQP URL librabbitmq needs.
struct AMQPEndpoint: Sendable, Hashable {
  var host: String
  var port: Int
  var user: String
  var password: String
  var vhost: String

  init(url: String) throws {
    guard let components = URLComponents(string: url), components.scheme == "amqp",
      let host = components.host, !host.isEmpty
    else { throw AMQPError.invalidURL(url) }
    self.host = host
    self.port = components.port ?? 5672
    self.user = components.user?.removingPercentEncoding ?? "guest"
    self.password = components.password?.removingPercentEncoding ?? "guest"
    let path = components.percentEncodedPath
    if path.isEmpty || path == "/" {
      self.vhost = "/"
    } else {
      self.vhost = String(path.dropFirst()).removingPercentEncoding ?? String(path.dropFirst())
    }
  }
}
