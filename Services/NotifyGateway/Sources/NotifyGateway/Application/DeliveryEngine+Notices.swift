import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// Hub notices: each broadcast once to its hub's channel, the channel made on first use.
extension DeliveryEngine {
  /// How a notice's broadcast ended.
  enum NoticeOutcome: Sendable, Hashable {
    case sent
    case failed
    case retry(at: Date)
  }

  /// Records a notice's broadcast: sent, failed for good, or due again; keeps a new channel.
  func record(
    _ outcome: NoticeOutcome, of due: NotifyStore.DueNotice, newChannel: String?, ended: PushOutcome?
  ) throws {
    let store = self.store
    let now = clock.now()
    try store.database.write { db in
      try self.publish(ended, correlationID: due.correlationID, in: db)
      if let newChannel { try store.saveChannel(newChannel, hub: due.notice.hub, at: now, in: db) }
      switch outcome {
      case .sent: try store.finishNotice(due.notice.noticeId, state: "sent", in: db)
      case .failed: try store.finishNotice(due.notice.noticeId, state: "failed", in: db)
      case .retry(let at): try store.retryNotice(due.notice.noticeId, at: at, in: db)
      }
    }
  }

  /// Broadcasts a hub notice to the hub's channel, creating the channel on first use (message
  /// storage on: a device offline meanwhile gets the newest when it comes back).
  func broadcast(_ due: NotifyStore.DueNotice) async -> Record {
    let now = clock.now()
    let notice = due.notice
    func ended(_ request: APNsBroadcastRequest?, channel: String, _ status: Int?, _ reason: String?)
      -> PushOutcome
    {
      let answeredAt = clock.now()
      return PushOutcome(
        pushId: request?.id ?? Self.apnsIDs.next(), tokenKind: .channel, token: channel, orderId: "",
        userId: "",
        pushType: APNsRequest.PushType.liveactivity.rawValue, event: LiveActivityEvent.update.rawValue,
        priority: 10, status: status, reason: reason,
        latencyMs: Self.milliseconds(from: notice.postedAt, to: answeredAt), answeredAt: answeredAt)
    }
    func after(_ answer: PushDelivery.Answer) -> NoticeOutcome {
      switch answer {
      case .delivered: return .sent
      case .tryAgain:
        return PushDelivery.retryTime(
          attempts: due.attempts, expiresAt: notice.expiresAt, now: clock.now(), jitter: jitter()
        )
        .map { .retry(at: $0) } ?? .failed
      case .refused, .tokenGone: return .failed
      }
    }
    guard HubNoticeRules.isWorthBroadcasting(notice, at: now) else {
      return .notice(
        due, .failed, newChannel: nil, ended: ended(nil, channel: due.channelID ?? "", nil, "Expired"))
    }
    var newChannel: String?
    let channel: String
    if let existing = due.channelID {
      channel = existing
    } else {
      let created = try? await transport.createChannel(
        APNsChannelRequest(bundleID: options.bundleID, storagePolicy: 1, id: Self.apnsIDs.next()))
      guard let created, created.status == 201, let id = created.channelID else {
        let answer = Self.answer(created.map { APNsResponse(status: $0.status, reason: $0.reason) })
        let outcome = after(answer)
        let final: PushOutcome? =
          if case .retry = outcome { nil } else {
            ended(nil, channel: "", created?.status, created?.reason ?? "NoAnswer")
          }
        return .notice(due, outcome, newChannel: nil, ended: final)
      }
      channel = id
      newChannel = id
    }
    let request = APNsBroadcastRequest(
      channelID: channel, bundleID: options.bundleID, priority: 10, expiration: notice.expiresAt,
      id: Self.apnsIDs.next(),
      payload: PushPayloads.hubNotice(notice, timestamp: LiveActivityContent.seconds(now)))
    let response = try? await transport.broadcast(request)
    let outcome = after(Self.answer(response))
    if case .retry = outcome { return .notice(due, outcome, newChannel: newChannel, ended: nil) }
    return .notice(
      due, outcome, newChannel: newChannel,
      ended: ended(
        request, channel: channel, response?.status, response?.reason ?? (response == nil ? "NoAnswer" : nil))
    )
  }
}
