import GrocerContracts

/// Which adjustments a cart keeps: those of its newest versions only, so a cart that changes
/// often does not grow an endless history.
enum AdjustmentWindow {
  /// Adjustments of the newest this many versions are kept.
  static let versionsKept: Int64 = 100

  /// Once the cart is at `version`, adjustments recorded at this version or before are dropped;
  /// nil while none is old enough.
  static func droppedThrough(at version: Int64) -> Int64? {
    version > versionsKept ? version - versionsKept : nil
  }

  /// `adjustments` as the cart at `version` keeps them.
  static func kept(_ adjustments: [CartAdjustment], at version: Int64) -> [CartAdjustment] {
    let oldest = version - versionsKept
    return adjustments.filter { $0.version > oldest }
  }
}
