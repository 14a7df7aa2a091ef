import APNsSimulator
import Foundation
import GrocerCore
import GrocerHTTP
import Testing

/// The simulator's channel management and broadcast endpoints (iOS 18), in-process, as a
/// provider library would call them.
@Suite struct APNsChannelRoutesTests {
  typealias Routes = APNsSimulatorRoutesTests

  func create(_ world: Routes.World, body: String, bundle: String = Routes.bundle) async -> HTTPResponse {
    await world.client.send(
      "POST", "/1/apps/\(bundle)/channels",
      headers: [
        "authorization": world.provider.authorizationHeaderValue(), "content-type": "application/json",
      ],
      body: body)
  }

  func broadcast(
    _ world: Routes.World, channel: String?, priority: String = "10", payload: String = #"{"aps":{}}"#
  )
    async -> HTTPResponse
  {
    var headers = [
      "authorization": world.provider.authorizationHeaderValue(), "apns-push-type": "LiveActivity",
      "apns-priority": priority, "apns-request-id": UUID().uuidString.lowercased(),
    ]
    if let channel { headers["apns-channel-id"] = channel }
    return await world.client.send(
      "POST", "/4/broadcasts/apps/\(Routes.bundle)", headers: headers, body: payload)
  }

  @Test func aChannelIsCreatedUsedListedAndDeleted() async throws {
    let world = try Routes.world()
    let created = await create(world, body: #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
    #expect(created.status == 201)
    let channel = try #require(created.headers["apns-channel-id"])
    #expect(Data(base64Encoded: channel)?.count == 16 && !channel.contains("/"))
    let sent = await broadcast(world, channel: channel, payload: #"{"aps":{"event":"update"}}"#)
    #expect(sent.status == 200)
    #expect(try world.simulator.broadcasts(to: channel).map(\.status) == [200])
    let listed = await world.client.send(
      "GET", "/1/apps/\(Routes.bundle)/all-channels",
      headers: ["authorization": world.provider.authorizationHeaderValue()])
    #expect(listed.status == 200 && listed.bodyString.contains(channel))
    let record = await world.client.get("/v1/sim/channels/\(channel)", headers: world.staff())
    #expect(record.status == 200 && record.bodyString.contains(#""event":"update""#))
    let deleted = await world.client.send(
      "DELETE", "/1/apps/\(Routes.bundle)/channels",
      headers: ["authorization": world.provider.authorizationHeaderValue(), "apns-channel-id": channel])
    #expect(deleted.status == 204)
    let gone = await broadcast(world, channel: channel)
    #expect(gone.status == 400 && Routes.reason(gone) == "BadChannelId")
  }

  @Test func badChannelRequestsGetApplesAnswers() async throws {
    let world = try Routes.world()
    let policy = await create(world, body: #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#)
    #expect(policy.status == 400 && Routes.reason(policy) == "BadMessageStoragePolicy")
    let type = await create(world, body: #"{"message-storage-policy":0,"push-type":"alert"}"#)
    #expect(type.status == 400 && Routes.reason(type) == "InvalidPushType")
    let other = await create(
      world, body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#, bundle: "com.other")
    #expect(other.status == 400 && Routes.reason(other) == "BadTopic")
    let unsigned = await world.client.send(
      "POST", "/1/apps/\(Routes.bundle)/channels",
      body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
    #expect(unsigned.status == 403 && Routes.reason(unsigned) == "MissingProviderToken")
    let missing = await broadcast(world, channel: nil)
    #expect(missing.status == 400 && Routes.reason(missing) == "MissingChannelId")
    let unknown = await broadcast(world, channel: "bm9zdWNoY2hhbm5lbA==")
    #expect(unknown.status == 400 && Routes.reason(unknown) == "BadChannelId")
    let created = await create(world, body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
    let channel = try #require(created.headers["apns-channel-id"])
    let priority = await broadcast(world, channel: channel, priority: "7")
    #expect(priority.status == 400 && Routes.reason(priority) == "BadPriority")
    let lowPower = await broadcast(world, channel: channel, priority: "1")
    #expect(lowPower.status == 200, "priority 1 is a broadcast's low-power priority")
    let empty = await broadcast(world, channel: channel, payload: "")
    #expect(empty.status == 400 && Routes.reason(empty) == "PayloadEmpty")
  }
}
