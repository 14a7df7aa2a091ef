import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP
import Testing

@testable import NotifyGateway

/// A device token moves to whoever registered it last (an account switch on one phone): alerts
/// queued for the previous owner must not follow it to the new one.
@Suite struct DeviceOwnershipReviewTests {
  @Test func anAlertQueuedForUserAIsNotDeliveredAfterUserBTookTheDevice() async throws {
    let fixture = try NotifyFixture()
    let device = NotifyFixture.deviceToken(201)
    #expect(
      await fixture.client.send("PUT", "/v1/devices/\(device)", headers: fixture.headers("ua")).status == 204)
    try fixture.app.commands.queueAlert(
      AlertText(title: "Payment declined", body: "Card ending 4242 was declined"), user: "ua", orderId: "oa",
      occurredAt: fixture.clock.now(), messageID: "declined-oa", consumer: fixture.consumer)
    // Before the alert went out, user B signs in on that phone.
    #expect(
      await fixture.client.send("PUT", "/v1/devices/\(device)", headers: fixture.headers("ub")).status == 204)
    #expect(try fixture.app.store.devices(of: "ua").isEmpty)
    await fixture.deliver()
    let leaked = fixture.received(device).filter { String(describing: $0.payload).contains("4242") }
    #expect(leaked.isEmpty, "user A's alert was shown to user B")
    // And user B cannot remove a token that is not theirs... but could take it: A can no longer delete it.
    let deleteByA = await fixture.client.send(
      "DELETE", "/v1/devices/\(device)", headers: fixture.headers("ua"))
    #expect(deleteByA.status == 404)
  }
}
