/// The operators' commands behind `grocer` (being built).
public enum GrocerOps {
  public static let usage = "usage: grocer <command> (commands are being built)"
}
