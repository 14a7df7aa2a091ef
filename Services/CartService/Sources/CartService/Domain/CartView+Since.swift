import GrocerContracts

extension CartView {
  /// The same cart listing only the adjustments newer than `seenVersion` (all when nil).
  func since(_ seenVersion: Int64?) -> CartView {
    guard let seenVersion else { return self }
    var view = self
    view.adjustments.removeAll { $0.version <= seenVersion }
    return view
  }
}
