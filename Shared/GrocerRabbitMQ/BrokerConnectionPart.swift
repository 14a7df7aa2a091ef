import GrocerAMQP

/// A part of a service that holds a broker connection of its own: readiness asks each whether
/// it is connected and which node it is on.
public protocol BrokerConnectionPart: Sendable {
  var name: String { get }
  var isConnected: Bool { get }
  /// `host:port` of the node it is connected to; nil while it is not.
  var connectedNode: String? { get }
}

extension AMQPPublisher: BrokerConnectionPart {}
extension AMQPConsumer: BrokerConnectionPart {}
extension AMQPRPCServer: BrokerConnectionPart {}
extension AMQPRPCClient: BrokerConnectionPart {}

/// What `/health/ready` says of a service's broker connections.
public struct BrokerConnections: Sendable {
  public let parts: [any BrokerConnectionPart]

  public init(_ parts: [any BrokerConnectionPart]) {
    self.parts = parts
  }

  /// Whether every part is connected.
  public var areConnected: Bool { parts.allSatisfy(\.isConnected) }

  /// The node of each part that is connected, by part name.
  public var nodes: [String: String] {
    var nodes: [String: String] = [:]
    for part in parts {
      if let node = part.connectedNode { nodes[part.name] = node }
    }
    return nodes
  }
}
