import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import GrocerStorage

/// Push-to-start: a customer's due orders started in turn on each device with a start token.
extension DeliveryEngine {
  /// One device's part of a push-to-start: its starts afterwards, an alert instead, the start
  /// push's answer, whether its start token is gone.
  struct StartOnDevice: Sendable {
    var device: NotifyStore.StartDevice
    var recentStarts: [Date]
    var alertInstead = false
    var ended: PushOutcome?
    var tokenGone = false
  }

  /// Records a push-to-start: each device's budget, alerts instead, answers, start tokens gone;
  /// the order waits no more.
  func record(_ devices: [StartOnDevice], of start: NotifyStore.DueStart) throws {
    let store = self.store
    let now = clock.now()
    try store.database.write { db in
      for result in devices {
        try self.publish(result.ended, correlationID: start.correlationID, in: db)
        if result.recentStarts != result.device.recentStarts {
          try store.saveStartTimes(result.recentStarts, device: result.device.token, in: db)
        }
        if result.tokenGone {
          try store.forgetStartToken(result.device.startToken, device: result.device.token, in: db)
        }
        if result.alertInstead {
          try store.queueAlert(
            .followInApp, device: result.device.token, user: start.userId, orderId: start.orderId,
            occurredAt: now,
            correlationID: start.correlationID, at: now, expiresAt: now + self.options.alertLifetime, in: db)
        }
      }
      try store.finishStart(start.orderId, in: db)
      try store.releaseStartClaim(user: start.userId, sender: self.options.sender, in: db)
    }
  }

  /// Starts one customer's due orders in turn, each device's starts carried from one order to the
  /// next, so its budget counts them all.
  func start(_ orders: [NotifyStore.DueStart]) async -> Record {
    var recent: [String: [Date]] = [:]
    var results: [(NotifyStore.DueStart, [StartOnDevice])] = []
    for var due in orders {
      for index in due.devices.indices {
        if let known = recent[due.devices[index].token] { due.devices[index].recentStarts = known }
      }
      let devices = await start(due)
      for device in devices { recent[device.device.token] = device.recentStarts }
      results.append((due, devices))
    }
    return .starting(results)
  }

  /// Starts the order's Live Activity on each device with a start token, as the start policy
  /// says: a start push (`event: start`, the order's newest content), an alert when the device's
  /// starts are used up, nothing when the app started it meanwhile.
  private func start(_ due: NotifyStore.DueStart) async -> [StartOnDevice] {
    let now = clock.now()
    let content =
      due.snapshot.map(LiveActivityContent.init)
      ?? LiveActivityContent(
        status: TrackingStatus.placed.rawValue, etaEarliest: nil, etaLatest: nil, riderFirstName: nil)
    let timestamp =
      due.snapshot.map { LiveActivityContent.seconds($0.generatedAt) } ?? LiveActivityContent.seconds(now)
    let relevance = due.snapshot.map(LiveActivityRelevance.score) ?? 100
    var results: [StartOnDevice] = []
    for device in due.devices {
      let (decision, recent) = options.start.decide(
        hasActivity: due.hasActivity, recent: device.recentStarts, now: now)
      var result = StartOnDevice(device: device, recentStarts: recent)
      switch decision {
      case .notNeeded: continue
      case .alertInstead: result.alertInstead = true
      case .start:
        let request = APNsRequest(
          token: device.startToken, pushType: .liveactivity,
          topic: options.bundleID + APNsRules.liveActivitySuffix, priority: 10,
          expiration: now + options.alertLifetime, id: Self.apnsIDs.next(),
          payload: PushPayloads.liveActivityStart(
            content, orderId: due.orderId, hub: due.hub, alert: .orderConfirmed, timestamp: timestamp,
            relevance: relevance))
        let response = await send(request)
        count(request, response)
        let answer = Self.answer(response)
        // Not started: the start does not count against the budget, and the device is told
        // where to follow the order instead.
        if answer != .delivered {
          result.recentStarts = device.recentStarts
          result.alertInstead = answer != .tokenGone
        }
        result.tokenGone = answer == .tokenGone
        let answeredAt = clock.now()
        result.ended = PushOutcome(
          pushId: request.id, tokenKind: .pushToStart, token: device.startToken, orderId: due.orderId,
          userId: due.userId, pushType: APNsRequest.PushType.liveactivity.rawValue, event: "start",
          version: due.snapshot?.version, priority: 10, status: response?.status,
          reason: response?.reason ?? (response == nil ? "NoAnswer" : nil),
          latencyMs: Self.milliseconds(from: now, to: answeredAt), answeredAt: answeredAt,
          staleDate: answer == .delivered ? PushPayloads.staleDate(event: .start, timestamp: timestamp) : nil)
      }
      results.append(result)
    }
    return results
  }
}
