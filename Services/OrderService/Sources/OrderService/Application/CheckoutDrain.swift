import GrocerCore
import GrocerRuntime

/// Lets checkout drives that are under way finish on shutdown (after HTTP stopped taking
/// requests, before the broker and the relay go), for at most `grace`. One cut short is carried
/// on by recovery at the next start, as after a crash.
///
/// It has no work of its own while the service runs: `run()` waits for the graceful shutdown,
/// then drains.
public final class CheckoutDrain: LifecycleService {
  public let name = "checkout-drain"
  private let saga: CheckoutSaga
  private let grace: Duration
  private let drained = Completion()

  public init(saga: CheckoutSaga, grace: Duration = .seconds(10)) {
    self.saga = saga
    self.grace = grace
  }

  public func start() async throws {}

  public func shutdown() async {
    await saga.drivesFinished(within: grace)
    drained.finish()
  }

  public func finished() async throws { try await drained.wait() }
}
