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

  /// What a broadcast did to the hub's channel.
  enum ChannelChange: Sendable, Hashable {
    /// Made for this broadcast: kept for the hub's next ones.
    case created(String)
    /// APNs no longer knows it (`BadChannelId`: deleted, or its app's channels reset): forgotten,
    /// so the notice's next attempt makes a new one.
    case gone(String)
  }

  /// Records a notice's broadcast: sent, failed for good, or due again; keeps a new channel and
  /// forgets a gone one.
  func record(
    _ outcome: NoticeOutcome, of due: NotifyStore.DueNotice, channel: ChannelChange?, ended: PushOutcome?
  ) throws {
    let store = self.store
    let now = clock.now()
    try store.database.write { db in
      try self.publish(ended, correlationID: due.correlationID, in: db)
      switch channel {
      case .created(let id): try store.saveChannel(id, hub: due.notice.hub, at: now, in: db)
      case .gone(let id): try store.forgetChannel(id, hub: due.notice.hub, in: db)
      case nil: break
      }
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
        due, .failed, channel: nil, ended: ended(nil, channel: due.channelID ?? "", nil, "Expired"))
    }
    var newChannel: ChannelChange?
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
        return .notice(due, outcome, channel: nil, ended: final)
      }
      channel = id
      newChannel = .created(id)
    }
    let request = APNsBroadcastRequest(
      channelID: channel, bundleID: options.bundleID, priority: 10, expiration: notice.expiresAt,
      id: Self.apnsIDs.next(),
      payload: PushPayloads.hubNotice(notice, timestamp: LiveActivityContent.seconds(now)))
    let response = try? await transport.broadcast(request)
    // A channel kept from before that APNs no longer knows: forgotten, and the notice tried again
    // at once on a new one (a new channel refused so is a failure like any other).
    if response?.status == 400, response?.reason == "BadChannelId", newChannel == nil {
      logger.warning("the hub's APNs channel is gone; making a new one", ["hub": notice.hub])
      return .notice(due, .retry(at: now), channel: .gone(channel), ended: nil)
    }
    let outcome = after(Self.answer(response))
    if case .retry = outcome { return .notice(due, outcome, channel: newChannel, ended: nil) }
    return .notice(
      due, outcome, channel: newChannel,
      ended: ended(
        request, channel: channel, response?.status, response?.reason ?? (response == nil ? "NoAnswer" : nil))
    )
  }
}
