import Foundation
import GrocerCore
import GrocerRuntime

/// The `grocer-token` command: its arguments, parsed and checked, and the token they ask for.
///
/// Lives in the library, not the executable, so the argument rules are tested as a function.
public struct TokenCommand: Hashable, Sendable {
  /// What the command line asks for.
  public enum Invocation: Hashable, Sendable {
    case mint(TokenCommand)
    case help
  }

  /// Bad arguments: the message is shown above the usage text, and the command exits with 2.
  public struct UsageError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
  }

  /// One day, in seconds.
  public static let defaultTimeToLive = 86_400
  /// Ten years: a longer-lived token is surely a typo.
  public static let maximumTimeToLive = 315_360_000

  /// The help text, shown by `--help` and after a usage error.
  public static let usage = """
    usage: grocer-token <user> [--role customer|staff|rider] [--hubs h1,h2|*] [--ttl seconds]

    Prints an HS256 token for local development, signed with GROCER_JWT_SECRET
    (or the documented local default secret when it is unset).

      <user>        the token's subject (sub): a user or rider id
      --role        customer (default), staff or rider
      --hubs        for staff: comma-separated hub ids, or * for all hubs
      --ttl         lifetime in seconds (default 86400)
      -h, --help    show this text
    """

  /// The token's subject (`sub`).
  public var user: String
  public var role: Principal.Role
  /// For staff: the hubs they may change; `["*"]` means all.
  public var hubs: [String]
  /// Seconds from issue to expiry.
  public var timeToLive: Int

  public init(
    user: String, role: Principal.Role = .customer, hubs: [String] = [],
    timeToLive: Int = TokenCommand.defaultTimeToLive
  ) {
    self.user = user
    self.role = role
    self.hubs = hubs
    self.timeToLive = timeToLive
  }

  /// Parses the arguments after the program name. Options may be written `--ttl 60` or
  /// `--ttl=60`, each at most once, before or after the user.
  public static func parse(arguments: [String]) throws(UsageError) -> Invocation {
    var user: String?
    var options: [String: String] = [:]
    var remaining = arguments[...]
    while let argument = remaining.popFirst() {
      if argument == "-h" || argument == "--help" { return .help }
      guard argument.hasPrefix("-") else {
        guard user == nil else { throw UsageError(message: "more than one user given: \(argument)") }
        guard !argument.isEmpty else { throw UsageError(message: "the user must not be empty") }
        user = argument
        continue
      }
      let name: String
      let value: String
      if let equals = argument.firstIndex(of: "=") {
        name = String(argument[..<equals])
        value = String(argument[argument.index(after: equals)...])
      } else {
        name = argument
        guard let next = remaining.popFirst() else { throw UsageError(message: "\(name) needs a value") }
        value = next
      }
      guard ["--role", "--hubs", "--ttl"].contains(name) else {
        throw UsageError(message: "unknown option \(name)")
      }
      guard options.updateValue(value, forKey: name) == nil else {
        throw UsageError(message: "\(name) given more than once")
      }
    }
    guard let user else { throw UsageError(message: "no user given") }
    var command = TokenCommand(user: user)
    if let role = options["--role"] {
      guard let parsed = Principal.Role(rawValue: role) else {
        throw UsageError(message: "unknown role \(role): expected customer, staff or rider")
      }
      command.role = parsed
    }
    if let hubs = options["--hubs"] {
      let list = hubs.split(separator: ",", omittingEmptySubsequences: false).map {
        $0.trimmingCharacters(in: .whitespaces)
      }
      guard !list.contains(where: \.isEmpty) else {
        throw UsageError(message: "--hubs needs comma-separated hub ids or *, got \"\(hubs)\"")
      }
      command.hubs = list
    }
    if let ttl = options["--ttl"] {
      guard let seconds = Int(ttl), seconds > 0, seconds <= maximumTimeToLive else {
        throw UsageError(message: "--ttl needs a whole number of seconds from 1 to \(maximumTimeToLive)")
      }
      command.timeToLive = seconds
    }
    return .mint(command)
  }

  /// The claims of a token issued at `now`.
  public func claims(now: Date) -> TokenClaims {
    TokenClaims(
      subject: user, role: role, hubs: hubs, issuedAt: now,
      expiresAt: now.addingTimeInterval(TimeInterval(timeToLive)))
  }

  /// The signed token, with the secret from `GROCER_JWT_SECRET` in `settings` or
  /// `Settings.localJWTSecret`.
  public func token(settings: Settings, now: Date) -> String {
    let secret = settings.string("GROCER_JWT_SECRET", default: Settings.localJWTSecret)
    return HS256Signer(secret: secret).sign(claims: claims(now: now))
  }
}
