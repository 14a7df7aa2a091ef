import Foundation
import GrocerCore

/// Event types NotifyGateway publishes: how each push ended, subject `push/<apns-id>`, sequence
/// 1 (a push ends once). Retries in between are not events; only the final answer is.
public enum PushEventType {
  /// APNs accepted the push.
  public static let delivered = "push.delivered"
  /// APNs refused it, the token is gone, or it was given up (retries past its expiration).
  public static let failed = "push.failed"
  public static let source = "notify-gateway"
}

/// Payload of `push.delivered` and `push.failed`: `{ pushId, tokenKind, token, orderId, userId,
/// pushType, event, version, priority, status, reason, latencyMs, answeredAt, staleDate }`.
public struct PushOutcome: Codable, Hashable, Sendable {
  /// Which kind of token the push went to.
  public enum TokenKind: String, Codable, Hashable, Sendable {
    /// An order's Live Activity (ActivityKit update and end pushes).
    case liveActivity
    /// A device registered for alerts.
    case device
    /// A device's push-to-start token (the push starts a Live Activity).
    case pushToStart
    /// A hub's broadcast channel (`token` is the channel id; no order or user).
    case channel
  }

  /// The push's `apns-id`.
  public var pushId: String
  public var tokenKind: TokenKind
  public var token: String
  public var orderId: String
  public var userId: String
  /// `apns-push-type`: `liveactivity`, `alert`, …
  public var pushType: String
  /// An ActivityKit push's `event` (`update`, `end`); nil for others.
  public var event: String?
  /// The tracking version a Live Activity push carried; nil for others.
  public var version: Int64?
  public var priority: Int
  /// APNs's HTTP status; nil when no answer came (the push was given up) or it was never sent
  /// (expired first).
  public var status: Int?
  /// APNs's `reason`, or ours when APNs gave none (`Expired`, `NoAnswer`).
  public var reason: String?
  /// From receiving what caused the push to APNs's answer, in milliseconds.
  public var latencyMs: Int
  public var answeredAt: Date
  /// When a delivered update goes stale on the lock screen (its `stale-date`); nil otherwise.
  public var staleDate: Date?

  public init(
    pushId: String, tokenKind: TokenKind, token: String, orderId: String, userId: String, pushType: String,
    event: String? = nil, version: Int64? = nil, priority: Int, status: Int?, reason: String?, latencyMs: Int,
    answeredAt: Date, staleDate: Date? = nil
  ) {
    self.pushId = pushId
    self.tokenKind = tokenKind
    self.token = token
    self.orderId = orderId
    self.userId = userId
    self.pushType = pushType
    self.event = event
    self.version = version
    self.priority = priority
    self.status = status
    self.reason = reason
    self.latencyMs = latencyMs
    self.answeredAt = answeredAt
    self.staleDate = staleDate
  }

  /// Whether the push says its token is gone for good (410, or `BadDeviceToken`).
  public var tokenIsGone: Bool { status == 410 || reason == "BadDeviceToken" || reason == "Unregistered" }

  /// The event's message: `push.delivered` when APNs accepted it, else `push.failed`. Written in
  /// one pass by hand: one per push, on the gateway's writer.
  public func message(id: String, delivered: Bool, correlationId: String? = nil) -> OutgoingMessage {
    EventEnvelope.message(
      id: id, type: delivered ? PushEventType.delivered : PushEventType.failed, occurredAt: answeredAt,
      source: PushEventType.source, correlationId: correlationId, subject: EventSubject.push(pushId),
      sequence: 1,
      payloadJSON: jsonBytes)
  }

  /// The payload's JSON text, byte for byte as `JSON.encoder()` writes it (keys sorted, absent
  /// optionals left out).
  public var jsonBytes: [UInt8] {
    var out = JSONBytes(capacity: 512)
    out.beginObject()
    out.key("answeredAt")
    out.date(answeredAt)
    if let event {
      out.key("event")
      out.string(event)
    }
    out.key("latencyMs")
    out.int(latencyMs)
    out.key("orderId")
    out.string(orderId)
    out.key("priority")
    out.int(priority)
    out.key("pushId")
    out.string(pushId)
    out.key("pushType")
    out.string(pushType)
    if let reason {
      out.key("reason")
      out.string(reason)
    }
    if let staleDate {
      out.key("staleDate")
      out.date(staleDate)
    }
    if let status {
      out.key("status")
      out.int(status)
    }
    out.key("token")
    out.string(token)
    out.key("tokenKind")
    out.string(tokenKind.rawValue)
    out.key("userId")
    out.string(userId)
    if let version {
      out.key("version")
      out.int(version)
    }
    out.endObject()
    return out.bytes
  }
}
